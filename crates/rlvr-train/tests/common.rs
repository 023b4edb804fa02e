//! Shared settings of the integration tests: a very small run of the real loop, whose warm
//! start is cached once for every test (the cache key covers everything the warm start depends
//! on, so a changed setting trains a new one).

use std::path::{Path, PathBuf};

use rlvr_train::metrics::{Metrics, read_metrics};
use rlvr_train::{RunConfig, RunOptions, RunOutcome, train};

/// The warm-start cache every test shares (in cargo's per-target temporary directory).
#[allow(dead_code)] // not every test binary that includes this module uses it directly
pub fn shared_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("rlvr-train-warm-start")
}

/// A few-step run of the bundled task on a tiny model (warm start from [`shared_cache`]).
/// `extra` overrides come last, so they win; one that changes `objective.kind` resets the
/// objective to that kind's registry defaults, whose DAPO-style overlong window must then be
/// set for the 6-token responses (`objective.overlong_max_len=6`) or turned off.
pub fn tiny_config(run_dir: &Path, extra: &[&str]) -> RunConfig {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/arith");
    let mut sets: Vec<String> = [
        format!("run_dir=\"{}\"", run_dir.display()),
        format!("sft.cache_dir=\"{}\"", shared_cache().display()),
        format!("data.train=\"{data}/train.jsonl\""),
        format!("data.eval=\"{data}/test.jsonl\""),
        "data.eval_limit=16".into(),
        "model.hidden_size=32".into(),
        "model.num_layers=2".into(),
        "model.num_heads=2".into(),
        "model.num_kv_heads=1".into(),
        "model.intermediate_size=64".into(),
        "sft.steps=30".into(),
        // The tiny model's short warm starts want a larger step than the default model's.
        "sft.lr=3e-3".into(),
        "sft.batch_size=16".into(),
        "rollout.prompts_per_step=4".into(),
        "rollout.group_size=4".into(),
        "rollout.max_new_tokens=6".into(),
        "objective.overlong_max_len=6".into(),
        "objective.overlong_cache=2".into(),
        "eval.max_new_tokens=6".into(),
        "train.steps=4".into(),
        "train.lr=1e-3".into(),
        "eval.every=2".into(),
        "checkpoint.every=1".into(),
        "checkpoint.keep=5".into(),
    ]
    .into_iter()
    .collect();
    sets.extend(extra.iter().map(|s| s.to_string()));
    RunConfig::load(None, &sets).expect("test config is valid")
}

/// Runs [`tiny_config`] to the end without a progress bar.
#[allow(dead_code)] // not every test binary that includes this module trains this way
pub fn train_quiet(run_dir: &Path, extra: &[&str]) -> RunOutcome {
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    train(tiny_config(run_dir, extra), &options).expect("the tiny run trains")
}

/// The per-step metrics of a finished run, in step order.
#[allow(dead_code)]
pub fn history(run_dir: &Path) -> Vec<Metrics> {
    read_metrics(&run_dir.join("metrics.jsonl"))
        .unwrap()
        .into_iter()
        .map(|(_, m)| m)
        .collect()
}
