//! Parity with `transformers`: logits of the committed tiny Qwen2 / Llama fixtures.
//!
//! The fixtures and their reference logits come from `scripts/make_parity_fixtures.py`
//! (transformers 5.24, torch 2.9, f32, eval mode); this test needs no Python.

mod parity_fixture;

use parity_fixture::{Record, fixture};

use burn::tensor::{Device, Int, Tensor, TensorData};
use rlvr_models::load_pretrained;

/// Max |burn − transformers| over all positions and vocab entries of every recorded sequence.
fn max_logit_diff(name: &str) -> f32 {
    let device = Device::flex();
    let dir = fixture(name);
    let (model, config) = load_pretrained(&dir, &device).expect("fixture loads");
    let record: Record =
        serde_json::from_str(&std::fs::read_to_string(dir.join("parity.json")).unwrap()).unwrap();
    assert_eq!(record.cases.len(), 3);
    let mut worst = 0.0f32;
    for case in &record.cases {
        let t = case.input_ids.len();
        let ids =
            Tensor::<2, Int>::from_data(TensorData::new(case.input_ids.clone(), [1, t]), &device);
        let logits = model
            .forward(ids)
            .into_data()
            .try_into_vec::<f32>()
            .unwrap();
        assert_eq!(logits.len(), t * config.vocab_size);
        for (pos, row) in case.logits.iter().enumerate() {
            for (v, &expected) in row.iter().enumerate() {
                worst = worst.max((logits[pos * config.vocab_size + v] - expected).abs());
            }
        }
    }
    worst
}

#[test]
fn qwen2_logits_match_transformers() {
    // Qwen2: q/k/v bias, untied lm_head, rope_theta 1e4 (transformers v5 `rope_parameters`).
    let diff = max_logit_diff("tiny-qwen2");
    eprintln!("tiny-qwen2: max abs logit diff {diff:e}");
    assert!(diff <= 1e-4, "max abs logit diff {diff}");
}

#[test]
fn llama_logits_match_transformers() {
    // Llama: no bias, tied embeddings, rope_theta 5e5.
    let diff = max_logit_diff("tiny-llama");
    eprintln!("tiny-llama: max abs logit diff {diff:e}");
    assert!(diff <= 1e-4, "max abs logit diff {diff}");
}
