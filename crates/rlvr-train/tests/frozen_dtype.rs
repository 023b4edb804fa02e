//! `train.frozen_dtype`: the weights a run does not train, stored as bf16 (or f16). A KL
//! reference takes half the bytes and is the policy rounded to bf16 (so the KL at the first step, before
//! any update, is the rounding's instead of 0); under `[lora]` the policy's frozen base is
//! narrowed (its adapters stay f32) and the reference shares it; a run without frozen weights
//! refuses the key.

mod common;

use common::{tiny_config, trainer};
use rlvr_models::weight_bytes;
use rlvr_train::step::rl_step;

const KL: &[&str] = &[
    "objective.kl_coef=0.05",
    "train.warmup_steps=0",
    "eval.every=0",
];

fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = KL.to_vec();
    all.extend_from_slice(extra);
    all
}

/// The first step's KL to the reference (before any update) and the reference's bytes.
fn first_step(extra: &[&str]) -> (f64, usize) {
    let tmp = tempfile::tempdir().unwrap();
    let (mut tr, _) = trainer(&tiny_config(tmp.path(), &with(extra)));
    let bytes = tr.reference_weight_bytes();
    let m = rl_step(&mut tr, 0).unwrap();
    assert!(m["optim/grad_norm"] > 0.0);
    (m["objective/kl_ref"], bytes)
}

#[test]
fn a_half_precision_reference_takes_half_the_bytes_and_is_the_rounded_policy() {
    let (kl_f32, bytes_f32) = first_step(&[]);
    let (kl_bf16, bytes_bf16) = first_step(&["train.frozen_dtype=\"bf16\""]);
    assert!(bytes_f32 > 0);
    assert_eq!(bytes_bf16 * 2, bytes_f32);
    // Before the first update the policy is the reference: KL exactly 0 against an f32 copy,
    // the rounding's (small, positive) against a bf16 one.
    assert_eq!(kl_f32, 0.0);
    assert!(kl_bf16 > 1e-8 && kl_bf16 < 1e-2, "{kl_bf16}");
    // f16 keeps 10 mantissa bits to bf16's 7: half the bytes too, and a smaller rounding, so
    // a KL below bf16's (at this size the k3 estimate of it, exp(x) − x − 1 with |x| ~ 1e-5,
    // rounds to 0 in f32, so only the order is checked).
    let (kl_f16, bytes_f16) = first_step(&["train.frozen_dtype=\"f16\""]);
    assert_eq!(bytes_f16 * 2, bytes_f32);
    assert!(kl_f16 < kl_bf16, "f16 {kl_f16} vs bf16 {kl_bf16}");
}

#[test]
fn under_lora_the_frozen_base_narrows_and_the_run_trains() {
    let lora = [
        "lora.rank=4",
        "lora.alpha=8",
        "lora.target_modules=[\"q_proj\", \"v_proj\"]",
        "train.lr=2e-2",
    ];
    let tmp = tempfile::tempdir().unwrap();
    let (full, _) = trainer(&tiny_config(tmp.path(), &with(&lora)));
    let mut narrow_sets = with(&lora);
    narrow_sets.push("train.frozen_dtype=\"bf16\"");
    let (mut narrow, _) = trainer(&tiny_config(tmp.path(), &narrow_sets));
    let adapters = full.model().num_lora_params();
    let base = full.model().num_params() - adapters;
    assert_eq!(weight_bytes(full.model()), 4 * (base + adapters));
    assert_eq!(weight_bytes(narrow.model()), 2 * base + 4 * adapters);
    assert_eq!(narrow.reference_weight_bytes(), 2 * base);
    for step in 0..2 {
        let m = rl_step(&mut narrow, step).unwrap();
        assert!(m["optim/grad_norm"] > 0.0, "step {}", step + 1);
        assert!(m["objective/kl_ref"].is_finite());
    }
    // After the updates the base is still bf16 and the adapters f32.
    assert_eq!(weight_bytes(narrow.model()), 2 * base + 4 * adapters);
    // The checkpoint holds the merged model in f32 (base rounded to bf16, plus the adapters).
    let ckpt = narrow.save_checkpoint(&tmp.path().join("run")).unwrap();
    let (merged, _) = rlvr_models::load_pretrained(&ckpt, &burn::tensor::Device::flex()).unwrap();
    assert_eq!(weight_bytes(&merged), 4 * base);
}

#[test]
fn a_run_without_frozen_weights_refuses_the_key() {
    let e = rlvr_train::RunConfig::load(
        None,
        &[
            "objective.kl_coef=0".to_string(),
            "train.frozen_dtype=\"bf16\"".to_string(),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("train.frozen_dtype"), "{e}");
}
