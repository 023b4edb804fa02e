//! The memory knobs of the update at run level: `train.micro_batch_tokens` (a mini-batch split
//! into micro-batches for gradient accumulation takes the same optimizer step as the unsplit
//! one: same loss, same gradient norm on the same rollouts, for every aggregation mode; the
//! objectives that cannot be split exactly are refused when the config loads) and
//! `train.gradient_checkpointing` (the policy trains on the checkpointing device, same step) and
//! `train.logprob_chunk` (the LM head over column chunks, recomputed in backward: same step).

mod common;

use common::{history, tiny_config, train_quiet};
use rlvr_train::RunConfig;

const MODES: [&str; 4] = [
    "token_mean",
    "seq_mean_token_mean",
    "seq_mean_token_sum",
    "seq_mean_token_sum_norm",
];

/// One step of the tiny run: 16 rows of about 12 tokens; a budget of 40 padded tokens makes
/// micro-batches of at most 3 rows.
fn first_step(dir: &std::path::Path, mode: &str, budget: usize) -> rlvr_train::metrics::Metrics {
    first_step_with(dir, mode, budget, false, &[])
}

fn first_step_with(
    dir: &std::path::Path,
    mode: &str,
    budget: usize,
    checkpointing: bool,
    more: &[&str],
) -> rlvr_train::metrics::Metrics {
    let run = dir.join(format!(
        "{mode}-{budget}-{checkpointing}-{}",
        more.join(",")
    ));
    let aggregation = format!("objective.aggregation=\"{mode}\"");
    let micro = format!("train.micro_batch_tokens={budget}");
    let checkpointing = format!("train.gradient_checkpointing={checkpointing}");
    train_quiet(
        &run,
        &[
            "train.steps=1",
            "eval.every=0",
            "objective.kl_coef=0.05",
            "objective.entropy_coef=0.01",
            &aggregation,
            &micro,
            &checkpointing,
        ]
        .into_iter()
        .chain(more.iter().copied())
        .collect::<Vec<_>>(),
    );
    history(&run).remove(0)
}

#[test]
fn micro_batches_take_the_unsplit_step() {
    let dir = tempfile::tempdir().unwrap();
    for mode in MODES {
        let whole = first_step(dir.path(), mode, 0);
        let split = first_step(dir.path(), mode, 40);
        assert_eq!(whole["optim/micro_batches"], 1.0, "{mode}");
        assert!(split["optim/micro_batches"] >= 5.0, "{mode}: {split:?}");
        assert_eq!(
            whole["reward/mean"], split["reward/mean"],
            "{mode}: the rollouts must be the same for the comparison to mean anything"
        );
        for key in ["objective/loss", "optim/grad_norm"] {
            let (a, b) = (whole[key], split[key]);
            assert!(
                (a - b).abs() <= 1e-5 * a.abs().max(1e-3),
                "{mode}: {key} unsplit {a} vs micro-batches {b}"
            );
        }
        assert!(
            whole["optim/grad_norm"] > 0.0,
            "{mode}: a zero gradient proves nothing"
        );
    }
}

#[test]
fn objectives_that_cannot_be_split_are_refused_at_load() {
    for kind in ["mu_grpo", "nsr"] {
        let err = RunConfig::load(
            None,
            &[
                format!("objective.kind=\"{kind}\""),
                "objective.overlong_max_len=0".into(),
                "train.micro_batch_tokens=64".into(),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("train.micro_batch_tokens") && err.contains(kind),
            "{kind}: {err}"
        );
    }
    // The same objectives load without the split.
    let nsr = [
        "objective.kind=\"nsr\"".into(),
        "objective.overlong_max_len=0".into(),
    ];
    assert!(RunConfig::load(None, &nsr).is_ok());
    // A plain config with the split loads (and `tiny_config` panics on an invalid one).
    let _ = tiny_config(
        std::path::Path::new("unused"),
        &["train.micro_batch_tokens=40"],
    );
}

#[test]
fn gradient_checkpointing_trains_on_the_checkpointing_device_with_the_same_step() {
    let dir = tempfile::tempdir().unwrap();
    let plain = first_step_with(dir.path(), "token_mean", 0, false, &[]);
    let checkpointed = first_step_with(dir.path(), "token_mean", 0, true, &[]);
    assert_eq!(plain["optim/gradient_checkpointing"], 0.0);
    assert_eq!(checkpointed["optim/gradient_checkpointing"], 1.0);
    for key in ["objective/loss", "optim/grad_norm"] {
        let (a, b) = (plain[key], checkpointed[key]);
        assert!(
            (a - b).abs() <= 1e-5 * a.abs().max(1e-3),
            "{key}: plain {a} vs checkpointed {b}"
        );
    }
}

/// The chunked LM head (with an entropy bonus, so both score leaves carry gradient) takes the
/// one-pass step, alone and inside micro-batches.
#[test]
fn the_chunked_head_takes_the_one_pass_step() {
    let dir = tempfile::tempdir().unwrap();
    let bonus = "objective.entropy_coef=0.05";
    let plain = first_step_with(dir.path(), "seq_mean_token_mean", 0, false, &[bonus]);
    for (budget, chunk) in [(0, "train.logprob_chunk=2"), (40, "train.logprob_chunk=3")] {
        let chunked = first_step_with(
            dir.path(),
            "seq_mean_token_mean",
            budget,
            false,
            &[bonus, chunk],
        );
        assert_eq!(plain["optim/logprob_chunks"], 0.0);
        assert!(
            chunked["optim/logprob_chunks"] >= 2.0,
            "{chunk}: {chunked:?}"
        );
        for key in ["objective/loss", "optim/grad_norm", "objective/entropy"] {
            let (a, b) = (plain[key], chunked[key]);
            assert!(
                (a - b).abs() <= 1e-5 * a.abs().max(1e-3),
                "{chunk}, micro-batch budget {budget}: {key} one pass {a} vs chunked {b}"
            );
        }
    }
}

/// DelTA's token coefficients (`[stages.delta]`, a surrogate divided by Σ c m) keep the split
/// step equal to the unsplit one, for the two aggregation modes DelTA accepts: each
/// micro-batch divides by the mini-batch's Σ c m.
#[test]
fn micro_batches_take_the_unsplit_step_with_delta() {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["token_mean", "seq_mean_token_mean"] {
        let delta = ["stages.delta={ c_min = 0.3 }"];
        let whole = first_step_with(dir.path(), mode, 0, false, &delta);
        let split = first_step_with(dir.path(), mode, 40, false, &delta);
        let plain = first_step(dir.path(), mode, 0);
        assert!(split["optim/micro_batches"] >= 5.0, "{mode}: {split:?}");
        assert_eq!(whole["reward/mean"], split["reward/mean"], "{mode}");
        assert!(
            whole["stages/shaping/delta_scored_pools"] > 0.0,
            "{mode}: no two-sided group, the coefficients would all be 1"
        );
        assert_ne!(whole["optim/grad_norm"], plain["optim/grad_norm"], "{mode}");
        for key in ["objective/loss", "optim/grad_norm"] {
            let (a, b) = (whole[key], split[key]);
            assert!(
                (a - b).abs() <= 1e-5 * a.abs().max(1e-3),
                "{mode}: {key} unsplit {a} vs micro-batches {b}"
            );
        }
    }
}
