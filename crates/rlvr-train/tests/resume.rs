//! A run interrupted after two steps and resumed reaches exactly the metrics and weights of an
//! uninterrupted run with the same seed.

mod common;

use rlvr_train::metrics::read_metrics;
use rlvr_train::{RunOptions, checkpoint, train};

/// An entropy bonus gives every step a gradient even when all rewards are equal, so a lost
/// optimizer state or data cursor would show.
const ENTROPY: &[&str] = &["objective.entropy_coef=0.05", "train.lr=1e-2"];

#[test]
fn interrupted_and_resumed_run_equals_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let quiet = RunOptions {
        quiet: true,
        ..Default::default()
    };

    let straight = tmp.path().join("straight");
    train(common::tiny_config(&straight, ENTROPY), &quiet).unwrap();

    let resumed = tmp.path().join("resumed");
    let first = train(
        common::tiny_config(&resumed, ENTROPY),
        &RunOptions {
            stop_after: Some(2),
            ..quiet.clone()
        },
    )
    .unwrap();
    assert!(first.interrupted);
    assert_eq!(first.steps, 2);
    let second = train(
        common::tiny_config(&resumed, ENTROPY),
        &RunOptions {
            resume: Some(resumed.clone()),
            ..quiet
        },
    )
    .unwrap();
    assert_eq!(second.steps, 4);

    let a = read_metrics(&straight.join("metrics.jsonl")).unwrap();
    let b = read_metrics(&resumed.join("metrics.jsonl")).unwrap();
    assert_eq!(a.len(), b.len());
    for ((sa, ma), (sb, mb)) in a.iter().zip(&b) {
        assert_eq!(sa, sb);
        for key in [
            "reward/mean",
            "objective/approx_kl_old",
            "optim/grad_norm",
            "response/length_mean",
        ] {
            assert_eq!(
                ma.get(key),
                mb.get(key),
                "step {sa}: {key} differs after resume"
            );
        }
        assert_eq!(
            ma.get("eval/accuracy"),
            mb.get("eval/accuracy"),
            "step {sa}: eval differs"
        );
    }
    let wa = std::fs::read(
        checkpoint::latest(&straight)
            .unwrap()
            .unwrap()
            .join("model.safetensors"),
    )
    .unwrap();
    let wb = std::fs::read(
        checkpoint::latest(&resumed)
            .unwrap()
            .unwrap()
            .join("model.safetensors"),
    )
    .unwrap();
    assert!(wa == wb, "final weights differ after resume");
}
