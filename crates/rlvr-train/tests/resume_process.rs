//! Resume across processes: a run of 2 steps extended to 4 by `rlvr train --resume` in a new
//! process ends with exactly the weights and metrics of a 4-step run, which needs the optimizer
//! state to be found again by the resumed process (see `param_ids.rs`).

use std::path::Path;
use std::process::Command;

use rlvr_train::checkpoint;
use rlvr_train::metrics::read_metrics;

fn rlvr(args: &[String]) {
    let out = Command::new(env!("CARGO_BIN_EXE_rlvr"))
        .args(args)
        .output()
        .expect("rlvr starts");
    assert!(
        out.status.success(),
        "rlvr {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sets(run_dir: &Path, cache: &Path, steps: usize) -> Vec<String> {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/arith");
    [
        format!("run_dir=\"{}\"", run_dir.display()),
        format!("sft.cache_dir=\"{}\"", cache.display()),
        format!("data.train=\"{data}/train.jsonl\""),
        format!("data.eval=\"{data}/test.jsonl\""),
        "data.eval_limit=8".into(),
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
        "objective.overlong_max_len=6".into(),
        "objective.overlong_cache=2".into(),
        "eval.max_new_tokens=6".into(),
        // A large learning rate, so that a lost Adam state would change the weights visibly.
        "train.lr=1e-2".into(),
        // An entropy bonus gives every step a gradient even when all rewards are equal.
        "objective.entropy_coef=0.05".into(),
        "train.warmup_steps=0".into(),
        "eval.every=2".into(),
        "checkpoint.every=1".into(),
        format!("train.steps={steps}"),
    ]
    .into_iter()
    .flat_map(|s| ["--set".to_string(), s])
    .collect()
}

#[test]
fn a_run_extended_in_a_new_process_equals_a_straight_run() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rlvr-train-warm-start");
    let straight = tmp.path().join("straight");
    let resumed = tmp.path().join("resumed");
    let train =
        |extra: Vec<String>| rlvr(&[vec!["train".into(), "--quiet".into()], extra].concat());

    train(sets(&straight, &cache, 4));
    train(sets(&resumed, &cache, 2));
    train(
        [
            vec!["--resume".into(), resumed.display().to_string()],
            sets(&resumed, &cache, 4),
        ]
        .concat(),
    );

    let a = read_metrics(&straight.join("metrics.jsonl")).unwrap();
    let b = read_metrics(&resumed.join("metrics.jsonl")).unwrap();
    assert_eq!(a.len(), 4);
    assert_eq!(b.len(), 4);
    for ((sa, ma), (sb, mb)) in a.iter().zip(&b) {
        assert_eq!(sa, sb);
        for (key, va) in ma.iter().filter(|(k, _)| {
            !k.starts_with("time/") && !k.starts_with("throughput/") && !k.starts_with("memory/")
        }) {
            assert_eq!(
                Some(va),
                mb.get(key),
                "step {sa}: {key} differs after resume"
            );
        }
    }
    let weights = |run: &Path| {
        std::fs::read(
            checkpoint::latest(run)
                .unwrap()
                .unwrap()
                .join("model.safetensors"),
        )
        .unwrap()
    };
    assert!(
        weights(&straight) == weights(&resumed),
        "final weights differ after resume"
    );
}
