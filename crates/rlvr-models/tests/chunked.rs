//! The chunked LM head (`chunked_token_logprobs` + `ChunkedScores::backward`) against the
//! one-pass path (`token_logprobs_at` + `backward`): the same log-probs and entropies, and the
//! same gradient of a loss on them for every parameter, to 1e-5, with a tied and an untied head,
//! chunks that divide the scored window and chunks that do not.

use std::path::Path;

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, TensorData};
use rlvr_models::{
    CausalLm, ModelConfig, chunked_token_logprobs, load_pretrained, token_logprobs_at,
};

const B: usize = 3;
const T: usize = 9;

fn inputs(device: &Device, vocab: i64) -> (Tensor<2, Int>, Tensor<2>) {
    let ids: Vec<i64> = (0..(B * T) as i64).map(|i| (i * 37 + 11) % vocab).collect();
    // Prompts of 2, 3 and 4 tokens, responses to the end except one padded tail.
    let mask: Vec<f32> = (0..B * T)
        .map(|i| {
            let (b, t) = (i / T, i % T);
            f32::from(u8::from(t >= 2 + b && !(b == 2 && t == T - 1)))
        })
        .collect();
    (
        Tensor::from_data(TensorData::new(ids, [B, T]), device),
        Tensor::from_data(TensorData::new(mask, [B, T]), device),
    )
}

/// A loss shaped like the clipped objective's: non-linear in the log-probs (a ratio), with an
/// entropy bonus, weighted per token.
fn loss(logp: Tensor<2>, entropy: Tensor<2>, mask: &Tensor<2>) -> Tensor<1> {
    let device = mask.device();
    let weights: Vec<f32> = (0..B * T).map(|i| ((i % 5) as f32 - 2.0) * 0.3).collect();
    let w = Tensor::<2>::from_data(TensorData::new(weights, [B, T]), &device);
    let ratio = (logp + 0.1).exp();
    (ratio * w * mask.clone()).sum() - (entropy * mask.clone()).sum() * 0.01
}

fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .unwrap()
}

/// Every parameter's gradient (zeros where it has none), in visiting order.
fn flat(model: &CausalLm, grads: &GradientsParams) -> Vec<Vec<f32>> {
    struct Collect<'a>(&'a GradientsParams, Vec<Vec<f32>>);
    impl ModuleVisitor for Collect<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let n = param.val().dims().iter().product();
            self.1
                .push(self.0.get::<D>(param.id).map_or(vec![0.0; n], host));
        }
    }
    let mut c = Collect(grads, Vec::new());
    model.visit(&mut c);
    c.1
}

fn check(model: &CausalLm, vocab: i64, temperature: f32, chunk: usize) {
    let device = Device::flex().autodiff();
    let (ids, mask) = inputs(&device, vocab);

    let whole = token_logprobs_at(model, ids.clone(), mask.clone(), temperature);
    let (want_logp, want_entropy) = (host(whole.logp.clone()), host(whole.entropy.clone()));
    let l = loss(whole.logp, whole.entropy, &mask);
    let want = flat(model, &GradientsParams::from_grads(l.backward(), model));

    let scores = chunked_token_logprobs(model, ids, mask.clone(), temperature, chunk).unwrap();
    let (logp, entropy) = (host(scores.logp.clone()), host(scores.entropy.clone()));
    for (name, got, want) in [
        ("logp", &logp, &want_logp),
        ("entropy", &entropy, &want_entropy),
    ] {
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5,
                "{name}[{i}] chunk {chunk}: {a} vs {b}"
            );
        }
    }
    let l = loss(scores.logp.clone(), scores.entropy.clone(), &mask);
    let loss_grads = l.backward();
    let got = flat(model, &scores.backward(model, &loss_grads));
    assert_eq!(got.len(), want.len());
    let mut nonzero = 0;
    for (p, (g, w)) in got.iter().zip(&want).enumerate() {
        let scale = w.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-3);
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * scale.max(1.0),
                "param {p}[{i}], chunk {chunk}, T = {temperature}: {a} vs {b}"
            );
        }
        nonzero += usize::from(w.iter().any(|&x| x != 0.0));
    }
    assert!(
        nonzero >= got.len() - 1,
        "{nonzero} of {} parameters have a gradient",
        got.len()
    );
}

#[test]
fn untied_head_matches_the_one_pass_path() {
    let device = Device::flex().autodiff();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-qwen2");
    let (model, config) = load_pretrained(&dir, &device).unwrap();
    assert!(!config.tie_word_embeddings);
    for chunk in [1, 3, 7, 100] {
        check(&model, config.vocab_size as i64, 0.7, chunk);
    }
}

#[test]
fn tied_head_matches_the_one_pass_path() {
    let device = Device::flex().autodiff();
    device.seed(3);
    let mut config = ModelConfig::tiny(97, 32, 2);
    config.tie_word_embeddings = true;
    let model = CausalLm::new(&config, &device);
    for chunk in [2, 4] {
        check(&model, 97, 1.0, chunk);
    }
}
