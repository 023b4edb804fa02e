//! Shared settings of the integration tests: a very small run of the real loop.

use std::path::Path;

use rlvr_train::{RunConfig, RunOptions, RunOutcome, train};

/// A few-step run of the bundled task on a tiny model, caching its warm start in `cache`.
pub fn tiny_config(run_dir: &Path, cache: &Path, extra: &[&str]) -> RunConfig {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/arith");
    let mut sets: Vec<String> = [
        format!("run_dir=\"{}\"", run_dir.display()),
        format!("sft.cache_dir=\"{}\"", cache.display()),
        format!("data.train=\"{data}/train.jsonl\""),
        format!("data.eval=\"{data}/test.jsonl\""),
        "data.eval_limit=16".into(),
        "model.hidden_size=32".into(),
        "model.num_layers=2".into(),
        "model.num_heads=2".into(),
        "model.num_kv_heads=1".into(),
        "model.intermediate_size=64".into(),
        "sft.steps=30".into(),
        "sft.batch_size=16".into(),
        "rollout.prompts_per_step=4".into(),
        "rollout.group_size=4".into(),
        "rollout.max_new_tokens=6".into(),
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
pub fn train_quiet(run_dir: &Path, cache: &Path, extra: &[&str]) -> RunOutcome {
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    train(tiny_config(run_dir, cache, extra), &options).expect("the tiny run trains")
}
