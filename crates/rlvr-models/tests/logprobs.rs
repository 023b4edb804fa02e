//! `token_logprobs` and `token_logprobs_at`: values against a host-side log-softmax of the
//! (temperature-scaled) logits (the masked prompt prefix is skipped by the scored window),
//! masking, autodiff.

use std::path::Path;

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use rlvr_models::{
    CausalLm, load_pretrained, token_logprobs, token_logprobs_at, token_logprobs_only,
};

fn model(device: &Device) -> CausalLm {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-qwen2");
    load_pretrained(&dir, device).unwrap().0
}

const B: usize = 2;
const T: usize = 6;
const IDS: [i64; B * T] = [5, 17, 200, 3, 9, 0, 250, 1, 2, 3, 4, 5];
const MASK: [f32; B * T] = [0., 0., 1., 1., 1., 0., 0., 0., 0., 1., 1., 1.];

fn inputs(device: &Device) -> (Tensor<2, Int>, Tensor<2>) {
    (
        Tensor::from_data(TensorData::new(IDS.to_vec(), [B, T]), device),
        Tensor::from_data(TensorData::new(MASK.to_vec(), [B, T]), device),
    )
}

#[test]
fn logprobs_and_entropy_match_host_log_softmax() {
    host_reference_check(1.0);
}

/// The temperature-scaled policy softmax(logits / T) against the same host reference.
#[test]
fn scaled_logprobs_match_host_log_softmax_of_scaled_logits() {
    host_reference_check(2.0);
    host_reference_check(0.5);
}

fn host_reference_check(temperature: f32) {
    let device = Device::flex();
    let model = model(&device).valid();
    let (ids, mask) = inputs(&device);
    let v = model.vocab_size();
    let logits = model
        .forward(ids.clone())
        .into_data()
        .try_into_vec::<f32>()
        .unwrap(); // [B, T, V]
    let scores = if temperature == 1.0 {
        token_logprobs(&model, ids.clone(), mask.clone())
    } else {
        token_logprobs_at(&model, ids.clone(), mask.clone(), temperature)
    };
    let logp = scores.logp.into_data().try_into_vec::<f32>().unwrap();
    let entropy = scores.entropy.into_data().try_into_vec::<f32>().unwrap();
    for b in 0..B {
        for t in 0..T {
            let (want_lp, want_h) = if t == 0 || MASK[b * T + t] == 0.0 {
                (0.0, 0.0)
            } else {
                // Reference: log-softmax in f64 of the logits at t - 1, divided by T.
                let row: Vec<f64> = logits[(b * T + t - 1) * v..(b * T + t) * v]
                    .iter()
                    .map(|&x| f64::from(x) / f64::from(temperature))
                    .collect();
                let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let lse = max + row.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
                let h: f64 = row.iter().map(|x| -(x - lse).exp() * (x - lse)).sum();
                ((row[IDS[b * T + t] as usize] - lse) as f32, h as f32)
            };
            assert!(
                (logp[b * T + t] - want_lp).abs() < 1e-5,
                "logp[{b},{t}] {} vs {want_lp}",
                logp[b * T + t]
            );
            assert!(
                (entropy[b * T + t] - want_h).abs() < 1e-4,
                "entropy[{b},{t}] {} vs {want_h}",
                entropy[b * T + t]
            );
        }
    }
    if temperature == 1.0 {
        let only = token_logprobs_only(&model, ids, mask)
            .into_data()
            .try_into_vec::<f32>()
            .unwrap();
        assert_eq!(only, logp);
    }
}

#[test]
fn gradients_flow_under_autodiff() {
    let device = Device::flex().autodiff();
    let model = model(&device);
    let (ids, mask) = inputs(&device);
    let scores = token_logprobs(&model, ids, mask);
    let loss = scores.logp.sum().neg() - scores.entropy.sum() * 0.01;
    let grads = loss.backward();
    let g = model.model.layers[0]
        .self_attn
        .q_proj
        .weight
        .grad(&grads)
        .expect("q_proj gradient");
    let g = g.into_data().try_into_vec::<f32>().unwrap();
    assert!(g.iter().all(|x| x.is_finite()));
    assert!(g.iter().any(|&x| x != 0.0));
    let head = model
        .lm_head
        .as_ref()
        .unwrap()
        .weight
        .grad(&grads)
        .expect("lm_head gradient");
    assert!(
        head.into_data()
            .try_into_vec::<f32>()
            .unwrap()
            .iter()
            .any(|&x| x != 0.0)
    );
}

#[test]
fn single_token_sequences_score_zero() {
    let device = Device::flex();
    let model = model(&device).valid();
    let ids = Tensor::<2, Int>::from_data(TensorData::new(vec![3i64, 4], [2, 1]), &device);
    let s = token_logprobs(&model, ids, Tensor::ones([2, 1], &device));
    assert_eq!(
        s.logp.into_data().try_into_vec::<f32>().unwrap(),
        vec![0.0, 0.0]
    );
}

#[test]
fn an_all_zero_mask_scores_zero() {
    let device = Device::flex();
    let model = model(&device).valid();
    let (ids, mask) = inputs(&device);
    let s = token_logprobs(&model, ids, mask.zeros_like());
    let logp = s.logp.into_data().try_into_vec::<f32>().unwrap();
    let entropy = s.entropy.into_data().try_into_vec::<f32>().unwrap();
    assert_eq!((logp.len(), entropy.len()), (B * T, B * T));
    assert!(logp.iter().chain(&entropy).all(|&x| x == 0.0));
}
