//! Run-level tests of the rewards written outside the crate: a two-step run of the bundled model
//! whose reward is the Python example (`kind = "command"`), and one whose reward is a
//! `composite` of a format check and correctness. Each fails if the reward is inert: the
//! command run must score exactly as the math verifier does on the same rollouts, and the
//! composite run must log each part and a mean reward that is their weighted sum.
//!
//! The task is one-digit sums, which the tiny model half-learns during its warm start, so the
//! rewards are mixed.

mod common;

use common::get;

use std::path::Path;

use rlvr_train::metrics::Metrics;

/// A two-step run of the sums task with `extra` settings; its per-step metrics.
fn run(extra: &[String]) -> Vec<Metrics> {
    let sets = common::sums_sets(extra);
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    common::train_quiet(&dir, &refs);
    common::history(&dir)
}

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/rewards/exact_answer.py")
        .display()
        .to_string()
}

#[test]
fn a_python_reward_trains_and_scores_as_the_math_verifier() {
    let python = run(&[
        "verifier.kind=\"command\"".into(),
        format!("verifier.command=[\"python3\", \"{}\"]", example()),
    ]);
    let math = run(&[]);
    assert_eq!(python.len(), 2);
    for (step, (p, m)) in python.iter().zip(&math).enumerate() {
        assert_eq!(get(p, "verify/errors"), 0.0, "step {step}: {p:?}");
        assert_eq!(get(p, "verify/timeouts"), 0.0, "step {step}");
        // Same seed, same policy: the same rollouts, scored alike by both rewards.
        assert_eq!(
            get(p, "reward/mean"),
            get(m, "reward/mean"),
            "step {step}: python {p:?}\nmath {m:?}"
        );
    }
    let first = get(&python[0], "reward/mean");
    assert!(
        first > 0.0 && first < 1.0,
        "mixed rewards expected: {first}"
    );
}

#[test]
fn a_composite_reward_logs_each_part_and_their_weighted_mean() {
    let parts = concat!(
        "verifier.parts=[",
        "{name = \"format\", weight = 1.0, kind = \"rubric\", ",
        "fields = {rubric = [{id = \"digits\", kind = \"regex\", pattern = '^\\d$'}]}}, ",
        "{name = \"correct\", weight = 3.0, gate = true, kind = \"math\"}",
        "]"
    );
    let h = run(&["verifier.kind=\"composite\"".into(), parts.into()]);
    assert_eq!(h.len(), 2);
    for (step, m) in h.iter().enumerate() {
        let (format, correct) = (get(m, "reward/part/format"), get(m, "reward/part/correct"));
        assert!((0.0..=1.0).contains(&format) && (0.0..=1.0).contains(&correct));
        // The mean reward is the weighted mean of the part means: (1·f + 3·c) / 4.
        let want = (format + 3.0 * correct) / 4.0;
        assert!(
            (get(m, "reward/mean") - want).abs() < 1e-6,
            "step {step}: {m:?}"
        );
        assert_eq!(get(m, "verify/part_samples"), 16.0, "4 prompts × 4 samples");
        assert_eq!(get(m, "verify/errors"), 0.0);
    }
    assert!(
        get(&h[0], "reward/mean") > 0.0,
        "the composite reward is inert: {:?}",
        h[0]
    );
}
