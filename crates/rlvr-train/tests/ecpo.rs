//! ECPO (`[verifier] kind = "ecpo"`, methods-extra §20) in the real loop: the reward's three
//! terms reach the run's metrics in the configured proportions, every weight changes the first
//! update, bad weights are refused at load, and the bundled ranking task fits the bundled
//! model.
//!
//! The run-level task: the first 32 training lines of `datasets/ecpo/` (train and eval), which
//! the tiny model half-learns in its warm start, so a step has ideal, partial and refused
//! rankings.

mod common;

use common::get;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rlvr_train::RunConfig;
use rlvr_train::metrics::Metrics;
use rlvr_train::model::char_tokenizer::ALPHABET;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| common::dataset_head("datasets/ecpo/train.jsonl", 32))
}

fn sets(extra: &[&str]) -> Vec<String> {
    common::bundled_task_sets(
        data(),
        &[
            "rollout.prompts_per_step=8",
            "rollout.group_size=8",
            "verifier={ kind = \"ecpo\" }",
        ],
        extra,
    )
}

fn run(extra: &[&str]) -> Vec<Metrics> {
    common::run_history(&sets(extra))
}

fn base() -> &'static [Metrics] {
    static BASE: OnceLock<Vec<Metrics>> = OnceLock::new();
    BASE.get_or_init(|| run(&[]))
}

/// The run's mean reward is the composition of its logged terms, 0.5·NDCG + 0.25·validity +
/// 0.25·cycle (a refused answer scores 0 in every term, so the means compose too), and the
/// plain arm's is its NDCG alone.
#[test]
fn the_ecpo_reward_reaches_the_run_in_its_proportions() {
    let m = &base()[0];
    let (n, v, c, cert) = (
        get(m, "reward/part/ndcg"),
        get(m, "reward/part/validity"),
        get(m, "reward/part/cycle"),
        get(m, "reward/part/cert_ndcg"),
    );
    assert!(n > 0.0 && n < 1.0, "no mixed rankings in the step: {n}");
    assert!(c > 0.0 && c < v, "cycle {c} should be under validity {v}");
    assert!(cert <= n, "CertNDCG {cert} above NDCG {n}");
    let want = 0.5 * n + 0.25 * v + 0.25 * c;
    let got = get(m, "reward/mean");
    assert!((got - want).abs() < 1e-5, "reward/mean {got} != {want}");
    // The plain arm (configs/ablations/ecpo-plain.toml): the ranking alone.
    let plain = &run(&[
        "verifier.ndcg_weight=1.0",
        "verifier.validity_weight=0.0",
        "verifier.cycle_weight=0.0",
    ])[0];
    assert_eq!(get(plain, "reward/part/ndcg"), n, "same first rollout");
    assert!((get(plain, "reward/mean") - n).abs() < 1e-6);
    // A pass is the verifier's verdict, CertNDCG = 1, under either composition: the same
    // rollout passes as often, though the plain reward pays an ideal ranking in full whether or
    // not it is certified (a pass rate read off rewards of 1 would differ).
    assert_eq!(
        get(plain, "reward/pass_rate"),
        get(m, "reward/pass_rate"),
        "the pass rate follows the reward weights"
    );
}

/// Every weight changes the first step (same rollout, other rewards, another update).
#[test]
fn ecpo_weights_are_live() {
    let b = &base()[0];
    for knob in [
        "verifier.ndcg_weight=2.0",
        "verifier.validity_weight=1.0",
        "verifier.cycle_weight=1.0",
    ] {
        let m = &run(&[knob])[0];
        assert_eq!(
            get(m, "reward/part/ndcg"),
            get(b, "reward/part/ndcg"),
            "{knob}: same rollout"
        );
        assert_ne!(
            get(m, "optim/grad_norm"),
            get(b, "optim/grad_norm"),
            "{knob} is inert"
        );
    }
}

/// Bad weights stop the run at load, naming the key.
#[test]
fn bad_ecpo_configs_are_refused_at_load() {
    let refused = |extra: &[&str], key: &str| {
        let err = RunConfig::load(None, &sets(extra)).unwrap_err().to_string();
        assert!(err.contains(key), "{extra:?}: {err}");
    };
    refused(&["verifier.ndcg_weight=-0.5"], "verifier.ndcg_weight");
    refused(
        &["verifier.validity_weight=-1.0"],
        "verifier.validity_weight",
    );
    refused(&["verifier.cycle_weight=-1.0"], "verifier.cycle_weight");
    refused(
        &[
            "verifier.ndcg_weight=0.0",
            "verifier.validity_weight=0.0",
            "verifier.cycle_weight=0.0",
        ],
        "verifier.ndcg_weight",
    );
    let err = RunConfig::load(None, &sets(&["verifier.lambda=1.0"]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("lambda"), "{err}");
}

/// `configs/ecpo.toml` and its plain arm load, and the bundled task fits the bundled model:
/// every character of every prompt and completion is in its alphabet, the longest prompt plus
/// `rollout.max_new_tokens` fits its 64 positions, and every line's ideal `answer` is a
/// certified ideal ranking by the verifier (the task is solvable).
#[test]
fn the_bundled_ecpo_task_fits_the_bundled_model() {
    for name in ["configs/ecpo.toml", "configs/ablations/ecpo-plain.toml"] {
        let c = RunConfig::load(Some(&repo().join(name)), &[]).unwrap();
        assert_eq!(c.verifier.kind(), rlvr_verifiers::Kind::Ecpo, "{name}");
        let verifier = c.verifier.build().unwrap();
        let mut longest = 0;
        for split in ["train", "test"] {
            let text = std::fs::read_to_string(repo().join(format!("datasets/ecpo/{split}.jsonl")))
                .unwrap();
            for l in text.lines() {
                let r: serde_json::Value = serde_json::from_str(l).unwrap();
                let p = r["prompt"].as_str().unwrap();
                let completion = r["completion"].as_str().unwrap_or("");
                for ch in p.chars().chain(completion.chars()) {
                    assert!(ALPHABET.contains(ch), "{ch:?} in {l}");
                }
                longest = longest.max(p.chars().count());
                let reference = c.verifier.reference(&r).unwrap();
                verifier.check_reference(&reference).unwrap();
                let v = verifier.verify(r["answer"].as_str().unwrap(), &reference);
                assert!(v.passed, "{l}: {}", v.details);
            }
        }
        assert!(longest + c.rollout.max_new_tokens <= 64, "{longest}");
    }
}
