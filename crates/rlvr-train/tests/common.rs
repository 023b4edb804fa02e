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

/// The per-step metrics of a [`train_quiet`] run with overrides `sets`, in a temporary
/// directory that is removed afterwards.
#[allow(dead_code)]
pub fn run_history(sets: &[String]) -> Vec<Metrics> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    train_quiet(&dir, &refs);
    history(&dir)
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

/// One-digit sums (a + b < 10) written to `dir/sums.jsonl`: a task the tiny model half-learns
/// in a few SFT steps, so its groups are mixed.
#[allow(dead_code)]
pub fn write_sums(dir: &Path) -> PathBuf {
    let lines: String = (0..10)
        .flat_map(|a| (0..10 - a).map(move |b| (a, b)))
        .map(|(a, b)| {
            serde_json::json!({"id": format!("s{a}{b}"), "prompt": format!("{a}+{b}="),
                               "answer": format!("{}", a + b)})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("sums.jsonl");
    std::fs::write(&path, lines).unwrap();
    path
}

/// [`write_sums`] once per test process, in the shared cache.
#[allow(dead_code)]
pub fn sums() -> &'static Path {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        write_sums(
            &shared_cache()
                .join("data")
                .join(std::process::id().to_string()),
        )
    })
}

/// The settings of a two-step run of the sums task with an evaluation only at the end, then
/// `extra` (which wins).
#[allow(dead_code)]
pub fn sums_sets<S: ToString>(extra: &[S]) -> Vec<String> {
    let data = sums().display().to_string();
    let mut all = vec![
        format!("data.train=\"{data}\""),
        format!("data.eval=\"{data}\""),
        "data.eval_limit=4".into(),
        "sft.steps=300".into(),
        "train.steps=2".into(),
        "train.warmup_steps=0".into(),
        "eval.every=0".into(),
        "checkpoint.every=0".into(),
    ];
    all.extend(extra.iter().map(ToString::to_string));
    all
}

/// A trainer on the run's (warm-started, cached) starting policy, and that policy's directory.
#[allow(dead_code)]
pub fn trainer(config: &RunConfig) -> (rlvr_train::trainer::Trainer, PathBuf) {
    let (train_set, eval_set) = rlvr_train::run::load::load_data(config).unwrap();
    let device = rlvr_train::model::device::training_device(false);
    let base =
        rlvr_train::model::bundled::base_policy(config, &train_set, &eval_set, &device).unwrap();
    let dir = base.dir.clone();
    let tr = rlvr_train::trainer::Trainer::new(
        config.clone(),
        device,
        base.model,
        base.config,
        base.tokenizer,
        train_set,
        eval_set,
    )
    .unwrap();
    (tr, dir)
}

/// The metric `key` of one step's metrics; panics naming the key when it is missing.
#[allow(dead_code)]
pub fn get(m: &Metrics, key: &str) -> f64 {
    *m.get(key)
        .unwrap_or_else(|| panic!("metric {key} missing: {m:?}"))
}

/// A knob is live: the first rollout equals the other run's (same seed, same policy) and the
/// first update differs from it.
#[allow(dead_code)]
pub fn assert_live(h: &[Metrics], against: &[Metrics], what: &str) {
    assert_eq!(
        get(&h[0], "reward/mean"),
        get(&against[0], "reward/mean"),
        "{what}: the first rollout must be the same"
    );
    assert_ne!(
        get(&h[0], "optim/grad_norm"),
        get(&against[0], "optim/grad_norm"),
        "{what}: the update equals the other run's"
    );
}

/// The first `n` lines of the bundled dataset file `rel` (relative to the repository root),
/// written once per test process into the shared cache: a small task a tiny run can use.
#[allow(dead_code)]
pub fn dataset_head(rel: &str, n: usize) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let all = std::fs::read_to_string(repo.join(rel)).unwrap();
    let head: String = all.lines().take(n).map(|l| format!("{l}\n")).collect();
    let stem = Path::new(rel)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let dir = shared_cache()
        .join("dataset-heads")
        .join(std::process::id().to_string())
        .join(rel.replace('/', "_"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{stem}{n}.jsonl"));
    std::fs::write(&path, head).unwrap();
    path
}

/// Overrides for one-step runs of the tiny model on a bundled task's lines at `data` (train
/// and eval): a 300-step warm start, 16-token responses, no eval or checkpoints; `task` names
/// the verifier and the rollout shape, `extra` a test's own keys (later keys win).
#[allow(dead_code)]
pub fn bundled_task_sets(data: &Path, task: &[&str], extra: &[&str]) -> Vec<String> {
    let data = data.display();
    let mut all = vec![
        format!("data.train=\"{data}\""),
        format!("data.eval=\"{data}\""),
        "data.eval_limit=8".into(),
        "sft.steps=300".into(),
        "train.steps=1".into(),
        "train.warmup_steps=0".into(),
        "eval.every=0".into(),
        "checkpoint.every=0".into(),
        "rollout.max_new_tokens=16".into(),
        "objective.overlong_max_len=16".into(),
        "eval.max_new_tokens=16".into(),
    ];
    all.extend(task.iter().chain(extra).map(ToString::to_string));
    all
}
