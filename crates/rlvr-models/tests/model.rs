//! Model accounting and forward-pass invariants that need no reference implementation.

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use rlvr_models::{CausalLm, ModelConfig};

/// The device RNG is global and the tests of this file run in parallel: tests that seed it or
/// draw from it (model init) hold this lock, so a seeded init is not interleaved with another.
static RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn flops_per_token_matches_hand_count() {
    let _rng = RNG.lock().unwrap_or_else(|e| e.into_inner());
    // tiny(300, 128, 2): 2 heads of 64, 1 kv head, SwiGLU width 344 (8·128/3 = 341 → 344).
    // Matmul weights: lm_head 300·128 = 38 400; per layer q 16 384 + k 8 192 + v 8 192 +
    // o 16 384 + MLP 3·128·344 = 132 096 → 181 248; total 38 400 + 2·181 248 = 400 896.
    // FLOPs/token = 6 · 400 896 + 12 · layers(2) · heads·head_dim(128) · T.
    let device = Device::flex();
    let model = CausalLm::new(&ModelConfig::tiny(300, 128, 2), &device);
    assert_eq!(
        model.flops_per_token(100),
        6.0 * 400_896.0 + 12.0 * 2.0 * 128.0 * 100.0
    );
}

#[test]
fn forward_is_causal_and_batch_independent() {
    let _rng = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let device = Device::flex();
    device.seed(1);
    let model = CausalLm::new(&ModelConfig::tiny(64, 64, 2), &device).valid();
    let run = |ids: Vec<i64>, b: usize| {
        let t = ids.len() / b;
        model
            .forward(Tensor::<2, Int>::from_data(
                TensorData::new(ids, [b, t]),
                &device,
            ))
            .into_data()
            .try_into_vec::<f32>()
            .unwrap()
    };
    let a = run(vec![1, 2, 3, 4, 5, 6], 1);
    // Changing the last token leaves the logits of earlier positions unchanged (causality).
    let b = run(vec![1, 2, 3, 4, 5, 60], 1);
    assert_eq!(a[..5 * 64], b[..5 * 64]);
    assert_ne!(a[5 * 64..], b[5 * 64..]);
    // A row's logits do not depend on the other rows of the batch.
    let both = run(vec![1, 2, 3, 4, 5, 6, 9, 9, 9, 9, 9, 9], 2);
    let diff = a
        .iter()
        .zip(&both[..6 * 64])
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(diff < 1e-5, "{diff}");
}

#[test]
fn same_seed_same_init() {
    let _rng = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let device = Device::flex();
    let config = ModelConfig::tiny(64, 64, 1);
    device.seed(5);
    let a = CausalLm::new(&config, &device);
    device.seed(5);
    let b = CausalLm::new(&config, &device);
    let w = |m: &CausalLm| {
        m.model.layers[0]
            .self_attn
            .q_proj
            .weight
            .val()
            .into_data()
            .try_into_vec::<f32>()
            .unwrap()
    };
    assert_eq!(w(&a), w(&b));
    let std = (w(&a).iter().map(|x| x * x).sum::<f32>() / (64.0 * 64.0)).sqrt();
    assert!((std - 0.02).abs() < 0.003, "init std {std}");
}
