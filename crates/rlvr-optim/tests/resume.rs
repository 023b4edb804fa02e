//! Save → load → step equals the uninterrupted step, bit for bit on CPU, for every optimizer
//! (one shared helper, as burn's `assert_optimizer_resume`).

mod common;

use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};
use common::{HEADS, KV_HEADS, TinyDecoder, VOCAB, parameters, tokens};
use rlvr_optim::{OptimizerConfig, PionConfig};

fn grads(model: &TinyDecoder, seed: usize, device: &Device) -> GradientsParams {
    let target = Tensor::<3>::ones([2, 6, VOCAB], device).mul_scalar(0.1 * seed as f64);
    let loss = model.loss(tokens(2, 6, seed, device), target);
    GradientsParams::from_grads(loss.backward(), model)
}

fn assert_resume(config: OptimizerConfig) {
    let device = Device::flex().autodiff();
    device.seed(3);
    let lr = 0.01;
    let mut model = TinyDecoder::new(2, &device);
    let mut original = config.init(&model).unwrap();
    // Two steps with different batches fill momenta and AdamW's moments and step count.
    for seed in [1, 2] {
        let g = grads(&model, seed, &device);
        model = original.step(lr, model, g);
    }
    let bytes = original.to_bytes().unwrap();
    assert!(
        bytes.len() > 1000,
        "state should hold the momenta: {} bytes",
        bytes.len()
    );

    let mut restored = config.init(&model).unwrap();
    restored.load_bytes(&bytes).unwrap();

    // A fresh optimizer without the state must differ, else the test proves nothing.
    let mut fresh = config.init(&model).unwrap();

    let g = || grads(&model, 3, &device);
    let expected = parameters(&original.step(lr, model.clone(), g()));
    let actual = parameters(&restored.step(lr, model.clone(), g()));
    let stateless = parameters(&fresh.step(lr, model.clone(), g()));
    assert_eq!(expected.len(), actual.len());
    for ((path, want), (_, got)) in expected.iter().zip(&actual) {
        let same_bits = want
            .iter()
            .zip(got)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same_bits, "{config:?}: {path} differs after resume");
    }
    assert_ne!(expected, stateless, "state had no effect");
}

#[test]
fn adamw_resumes_bit_for_bit() {
    assert_resume(OptimizerConfig::Adamw(Default::default()));
}

#[test]
fn muon_resumes_bit_for_bit() {
    assert_resume(OptimizerConfig::Muon(Default::default()));
}

#[test]
fn pion_per_head_resumes_bit_for_bit() {
    let config = OptimizerConfig::Pion(PionConfig {
        promotion_steps: 1,
        ..Default::default()
    });
    assert_resume(config.with_attention_heads(HEADS, KV_HEADS));
}

#[test]
fn garbage_state_is_a_typed_error() {
    let device = Device::flex().autodiff();
    let model = TinyDecoder::new(1, &device);
    let mut optim = OptimizerConfig::Muon(Default::default())
        .init(&model)
        .unwrap();
    let err = optim.load_bytes(b"not a burnpack").unwrap_err();
    assert!(err.to_string().contains("load"), "{err}");
}
