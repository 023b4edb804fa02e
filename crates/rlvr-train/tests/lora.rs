//! `[lora]` inside a run: only the targeted projections move, the adapters are checkpointed in
//! PEFT's layout next to the merged model, the KL reference is the frozen base (no copy stored),
//! an interrupted run resumes exactly, `rlvr merge-lora`'s library path reproduces the merged
//! checkpoint, and bad `[lora]` settings are refused at load.

mod common;

use std::collections::HashMap;
use std::path::Path;

use burn::tensor::Device;
use rlvr_models::lora::{ADAPTER_CONFIG_FILE, load_adapter};
use rlvr_models::{load_pretrained, save_pretrained};
use rlvr_train::metrics::read_metrics;
use rlvr_train::model::bundled::base_dir;
use rlvr_train::trainer::{ADAPTER_DIR, REFERENCE_DIR};
use rlvr_train::{RunConfig, RunOptions, checkpoint, train};

/// Adapters on two of the seven projections, a KL term (so the run keeps a reference) and an
/// entropy bonus (a gradient at every step even when all rewards are equal).
const LORA: &[&str] = &[
    "lora.rank=4",
    "lora.alpha=8",
    "lora.target_modules=[\"q_proj\", \"v_proj\"]",
    "objective.kl_coef=0.05",
    "objective.entropy_coef=0.05",
    "train.lr=2e-2",
];

/// Every tensor of a safetensors file, by name.
fn tensors(path: &Path) -> HashMap<String, Vec<u8>> {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    st.tensors()
        .into_iter()
        .map(|(name, view)| (name, view.data().to_vec()))
        .collect()
}

#[test]
fn lora_run_moves_only_the_targeted_projections_and_resumes_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let quiet = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let straight = tmp.path().join("straight");
    let config = common::tiny_config(&straight, LORA);
    let base = base_dir(&config).unwrap();
    train(config, &quiet).unwrap();

    let last = checkpoint::latest(&straight).unwrap().unwrap();
    assert!(last.join(ADAPTER_DIR).join(ADAPTER_CONFIG_FILE).is_file());
    assert!(
        !last.join(REFERENCE_DIR).exists(),
        "the LoRA reference is the base: no copy in the checkpoint"
    );

    // The merged checkpoint differs from the warm start exactly in q_proj and v_proj.
    let before = tensors(&base.join("model.safetensors"));
    let after = tensors(&last.join("model.safetensors"));
    assert_eq!(before.len(), after.len());
    let mut moved = Vec::new();
    for (name, data) in &after {
        if before[name] != *data {
            moved.push(name.clone());
        }
    }
    moved.sort();
    let expected: Vec<String> = (0..2)
        .flat_map(|i| {
            [
                format!("model.layers.{i}.self_attn.q_proj.weight"),
                format!("model.layers.{i}.self_attn.v_proj.weight"),
            ]
        })
        .collect();
    let mut expected = expected;
    expected.sort();
    assert_eq!(moved, expected);

    // The adapter on the base reproduces the merged checkpoint (what `rlvr merge-lora` does).
    let device = Device::flex();
    let (base_model, hf_config) = load_pretrained(&base, &device).unwrap();
    let (adapted, lora) = load_adapter(base_model, &last.join(ADAPTER_DIR)).unwrap();
    assert_eq!(lora.rank, 4);
    let merged_dir = tmp.path().join("merged");
    save_pretrained(&adapted.merge_lora(), &hf_config, &merged_dir).unwrap();
    let merged = tensors(&merged_dir.join("model.safetensors"));
    for (name, data) in &after {
        let (a, b): (Vec<f32>, Vec<f32>) = (bytemuck_f32(data), bytemuck_f32(&merged[name]));
        let diff = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max);
        assert!(diff < 1e-6, "{name}: merged differs by {diff}");
    }

    // Interrupted after two steps and resumed: the same metrics and weights.
    let resumed = tmp.path().join("resumed");
    let first = train(
        common::tiny_config(&resumed, LORA),
        &RunOptions {
            stop_after: Some(2),
            ..quiet.clone()
        },
    )
    .unwrap();
    assert!(first.interrupted);
    train(
        common::tiny_config(&resumed, LORA),
        &RunOptions {
            resume: Some(resumed.clone()),
            ..quiet
        },
    )
    .unwrap();
    let a = read_metrics(&straight.join("metrics.jsonl")).unwrap();
    let b = read_metrics(&resumed.join("metrics.jsonl")).unwrap();
    assert_eq!(a.len(), b.len());
    for ((step, ma), (_, mb)) in a.iter().zip(&b) {
        for key in ["reward/mean", "optim/grad_norm", "objective/kl_ref"] {
            assert_eq!(
                ma.get(key),
                mb.get(key),
                "step {step}: {key} differs after resume"
            );
        }
        assert!(
            ma["optim/grad_norm"] > 0.0,
            "step {step}: no gradient reached the adapters"
        );
    }
    let resumed_last = checkpoint::latest(&resumed).unwrap().unwrap();
    assert_eq!(
        tensors(&resumed_last.join("model.safetensors")),
        after,
        "resumed weights differ"
    );
}

fn bytemuck_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn bad_lora_settings_are_refused_at_load_naming_the_key() {
    let load = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        RunConfig::load(None, &sets).unwrap_err().to_string()
    };
    let err = load(&["lora.rank=0"]);
    assert!(err.contains("lora.rank"), "{err}");
    let err = load(&["lora.dropout=1.5"]);
    assert!(err.contains("lora.dropout"), "{err}");
    let err = load(&[
        "lora.rank=8",
        "stages.dgg={ threshold = 0.5, window = 2, max_reuse = 3 }",
    ]);
    assert!(err.contains("stages.dgg"), "{err}");
    let err = load(&["lora.ranks=8"]);
    assert!(err.contains("ranks"), "{err}");
}

/// `lora.dropout` acts in the update: the same run with dropout on the adapters' input gets a
/// different first gradient than without (the rollouts, on `model.valid()`, see no dropout, so
/// step 1's samples and rewards are the same).
#[test]
fn lora_dropout_changes_the_update_and_not_the_rollouts() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, dropout: &str| {
        let dir = tmp.path().join(name);
        let mut sets = LORA.to_vec();
        sets.extend([dropout, "train.steps=1", "eval.every=0"]);
        common::train_quiet(&dir, &sets);
        common::history(&dir).remove(0)
    };
    let plain = run("plain", "lora.dropout=0.0");
    let dropped = run("dropped", "lora.dropout=0.5");
    assert_eq!(plain["reward/mean"], dropped["reward/mean"]);
    assert_ne!(plain["optim/grad_norm"], dropped["optim/grad_norm"]);
}
