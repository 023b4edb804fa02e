//! `rollout.max_staleness`: asynchronous rollouts on the local engine. The next step's first
//! round is sampled during this step's update, on a snapshot of the pre-update policy; the
//! samples record the step of their weights, stale groups are dropped, the rest are trained
//! with `objective.tis` against the log-probs they were sampled with, and a checkpoint rewinds
//! the data cursor over prompts that were drawn but not trained on.

mod common;

use common::{history, tiny_config, train_quiet};
use rlvr_models::FinishReason;
use rlvr_train::batch::Sample;
use rlvr_train::checkpoint::read_state;
use rlvr_train::step::rollout::drop_stale_groups;
use rlvr_train::{RunOptions, train};

/// Three steps with one step of staleness, the correction on.
const ASYNC: &[&str] = &[
    "rollout.max_staleness=1",
    "objective.tis=\"truncate\"",
    "train.steps=3",
    "train.warmup_steps=0",
    "eval.every=0",
];

/// With weights that do not move (a learning rate far below f32 resolution), the pipelined
/// loop samples exactly what the synchronous one does: same prompts, same seeds, so the same
/// rewards and lengths at every step; only the staleness differs (0 at step 1, whose round is
/// not prefetched, then 1).
#[test]
fn with_unchanged_weights_async_samples_what_sync_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let frozen = "train.lr=1e-30";
    let sync_dir = tmp.path().join("sync");
    train_quiet(
        &sync_dir,
        &[
            "train.steps=3",
            "train.warmup_steps=0",
            "eval.every=0",
            frozen,
        ],
    );
    let async_dir = tmp.path().join("async");
    let mut extra = ASYNC.to_vec();
    extra.push(frozen);
    train_quiet(&async_dir, &extra);
    let (sync, pipelined) = (history(&sync_dir), history(&async_dir));
    assert_eq!(sync.len(), 3);
    assert_eq!(pipelined.len(), 3);
    for (i, (s, a)) in sync.iter().zip(&pipelined).enumerate() {
        for key in [
            "reward/mean",
            "response/length_mean",
            "rollout/sampled_tokens",
        ] {
            assert_eq!(s[key], a[key], "step {}: {key}", i + 1);
        }
        assert!(!s.contains_key("rollout/staleness_mean"));
        let want = if i == 0 { 0.0 } else { 1.0 };
        assert_eq!(a["rollout/staleness_mean"], want, "step {}", i + 1);
        assert_eq!(a["rollout/stale_dropped_groups"], 0.0);
        // Same weights: the trainer's log-probs are the sampler's.
        assert!(a["rollout/logp_mismatch_max"] < 1e-4, "step {}", i + 1);
    }
}

/// With weights that move, a prefetched round was drawn by the previous step's policy: the
/// trainer's log-probs differ from the sampler's (step 2 on), where a fresh round at step 1
/// matches them; the IS ratios the correction uses are then away from 1.
#[test]
fn prefetched_samples_come_from_the_previous_weights() {
    let tmp = tempfile::tempdir().unwrap();
    let mut extra = ASYNC.to_vec();
    extra.push("train.lr=1e-2");
    train_quiet(tmp.path(), &extra);
    let h = history(tmp.path());
    assert!(h[0]["rollout/logp_mismatch_mean"] < 1e-5, "{:?}", h[0]);
    for (i, m) in h.iter().enumerate().skip(1) {
        assert_eq!(m["rollout/staleness_max"], 1.0, "step {}", i + 1);
        assert!(
            m["rollout/logp_mismatch_mean"] > 1e-3,
            "step {}: {}",
            i + 1,
            m["rollout/logp_mismatch_mean"]
        );
        assert!(m["rollout/is_ratio_max"] > 1.0 + 1e-3, "step {}", i + 1);
        assert!(m["optim/grad_norm"] > 0.0);
    }
}

/// A run stopped after step 2 has already drawn step 3's prompts for the prefetch; its
/// checkpoint rewinds the data cursor to before them (2 steps × 4 prompts, not 3 × 4), and the
/// resumed run samples step 3 afresh (staleness 0) and step 4 from the pipeline again.
#[test]
fn a_checkpoint_rewinds_over_prefetched_prompts_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let mut extra = ASYNC.to_vec();
    extra.push("train.steps=4");
    let options = RunOptions {
        quiet: true,
        stop_after: Some(2),
        ..Default::default()
    };
    let out = train(tiny_config(&run_dir, &extra), &options).unwrap();
    assert!(out.interrupted);
    let state = read_state(&run_dir.join("checkpoints/step-000002")).unwrap();
    assert_eq!(state.step, 2);
    assert_eq!(state.data_cursor, 8, "prompts of steps 1 and 2 only");
    let resume = RunOptions {
        quiet: true,
        resume: Some(run_dir.clone()),
        ..Default::default()
    };
    let out = train(tiny_config(&run_dir, &extra), &resume).unwrap();
    assert_eq!(out.steps, 4);
    let h = history(&run_dir);
    let stale: Vec<f64> = h.iter().map(|m| m["rollout/staleness_mean"]).collect();
    assert_eq!(stale, vec![0.0, 1.0, 0.0, 1.0]);
    let state = read_state(&run_dir.join("checkpoints/step-000004")).unwrap();
    assert_eq!(state.data_cursor, 16);
}

/// Groups of 2 at step 5 with k = 1: a group is kept only when every sample's weights are at
/// most 1 step old (versions 4 or 5).
#[test]
fn a_group_with_one_stale_sample_is_dropped_whole() {
    let sample = |example: usize, version: usize| Sample {
        policy_version: version,
        ..Sample::unscored(example, vec![1], vec![2], vec![-0.1], FinishReason::Stop)
    };
    let mut samples = vec![
        sample(0, 5),
        sample(0, 4),
        sample(1, 4),
        sample(1, 3),
        sample(2, 3),
        sample(2, 3),
        sample(3, 5),
        sample(3, 5),
    ];
    assert_eq!(drop_stale_groups(&mut samples, 2, 5, 1), 2);
    let kept: Vec<usize> = samples.iter().map(|s| s.example).collect();
    assert_eq!(kept, vec![0, 0, 3, 3]);
    // k = 2 keeps version 3 at step 5.
    let mut all = vec![sample(1, 4), sample(1, 3)];
    assert_eq!(drop_stale_groups(&mut all, 2, 5, 2), 0);
    assert_eq!(all.len(), 2);
}

/// Combinations that cannot work are refused when the config loads, naming the keys.
#[test]
fn async_configs_that_cannot_work_are_refused() {
    let refused = |extra: &[&str]| {
        let mut sets = vec!["rollout.max_staleness=1".to_string()];
        sets.extend(extra.iter().map(|s| s.to_string()));
        rlvr_train::RunConfig::load(None, &sets)
            .expect_err("refused")
            .to_string()
    };
    let e = refused(&[]);
    assert!(
        e.contains("rollout.max_staleness") && e.contains("objective.tis"),
        "{e}"
    );
    let e = refused(&["objective.tis=\"truncate\"", "rollout.temperature=0.7"]);
    assert!(e.contains("rollout.temperature"), "{e}");
    let e = refused(&["objective.tis=\"truncate\"", "rollout.top_k=5"]);
    assert!(e.contains("rollout.top_k"), "{e}");
    let e = refused(&[
        "objective.tis=\"truncate\"",
        "rollout.engine=\"openai\"",
        "rollout.endpoints=[\"http://127.0.0.1:9\"]",
        "rollout.sync_every=2",
    ]);
    assert!(e.contains("rollout.sync_every"), "{e}");
    let e = refused(&[
        "objective.tis=\"truncate\"",
        "rollout.engine=\"openai\"",
        "rollout.endpoints=[\"http://127.0.0.1:9\"]",
        "rollout.server=\"vllm\"",
    ]);
    assert!(e.contains("rollout.server"), "{e}");
    // The correction is accepted on the local engine once the rollouts are asynchronous.
    rlvr_train::RunConfig::load(
        None,
        &[
            "rollout.max_staleness=1".to_string(),
            "objective.tis=\"truncate\"".to_string(),
        ],
    )
    .unwrap();
}
