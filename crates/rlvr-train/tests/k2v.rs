//! K2V (`[verifier] kind = "k2v"`, methods-extra §17) in the real loop: the reward's terms
//! reach the run's metrics in the paper's proportions, every knob changes the first update,
//! bad knobs are refused at load, and the bundled K2V task fits the bundled model.
//!
//! The run-level task: the first 32 training questions of `datasets/k2v/` (train and eval),
//! which the tiny model half-memorizes in its warm start, so a step has right and wrong
//! answers, reasoning and none.

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
    PATH.get_or_init(|| common::dataset_head("datasets/k2v/train.jsonl", 32))
}

fn sets(extra: &[&str]) -> Vec<String> {
    common::bundled_task_sets(
        data(),
        &[
            "rollout.prompts_per_step=8",
            "rollout.group_size=8",
            "verifier={ kind = \"k2v\", tags = \"compact\" }",
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

/// The run's mean reward is the paper's composition of its logged terms:
/// (6·answer + checklist + 0.751·format) / 7.751, with `answer` the match rate, `checklist`
/// the gated checklist mean and `format` the format term over its maximum 0.751.
#[test]
fn the_k2v_reward_reaches_the_run_in_the_papers_proportions() {
    let m = &base()[0];
    let (a, c, f) = (
        get(m, "reward/part/answer"),
        get(m, "reward/part/checklist"),
        get(m, "reward/part/format"),
    );
    assert!(a > 0.0 && a < 1.0, "no mixed answers in the step: {a}");
    assert!(
        c > 0.0 && c <= a,
        "the checklist is paid only with a match: {c} vs {a}"
    );
    assert!(f > 0.0, "no formatted response: {f}");
    let want = (6.0 * a + c + 0.751 * f) / 7.751;
    let got = get(m, "reward/mean");
    assert!((got - want).abs() < 1e-5, "reward/mean {got} != {want}");
    // A pass is the verifier's verdict (the answer matched), not a reward of 1: the checklist
    // and format terms keep most matched answers below the composition's maximum.
    assert_eq!(get(m, "reward/pass_rate"), a);
    // The plain arm (configs/ablations/k2v-plain.toml): the exact match alone, 0 or 1.
    let plain = &run(&[
        "verifier.checklist_weight=0.0",
        "verifier.format_weight=0.0",
    ])[0];
    assert_eq!(get(plain, "reward/part/answer"), a, "same first rollout");
    assert!((get(plain, "reward/mean") - a).abs() < 1e-6);
    assert_eq!(get(plain, "reward/pass_rate"), a);
}

/// Every knob changes the first step (same rollout, other rewards, another update).
#[test]
fn k2v_knobs_are_live() {
    let b = &base()[0];
    for knob in [
        "verifier.answer_weight=2.0",
        "verifier.checklist_weight=3.0",
        "verifier.format_weight=0.0",
        "verifier.trailing_penalty=0.05",
        "verifier.tags=\"xml\"",
        "verifier.criteria=[\"nonempty\"]",
    ] {
        let m = &run(&[knob])[0];
        // The same first rollout: the same answers match, except that the xml tags find no
        // answer block in the compact responses.
        let answers = if knob.contains("tags") {
            0.0
        } else {
            get(b, "reward/part/answer")
        };
        assert_eq!(get(m, "reward/part/answer"), answers, "{knob}");
        assert_ne!(
            get(m, "optim/grad_norm"),
            get(b, "optim/grad_norm"),
            "{knob} is inert"
        );
    }
}

/// Bad values stop the run at load, naming the key.
#[test]
fn bad_k2v_configs_are_refused_at_load() {
    let refused = |extra: &[&str], key: &str| {
        let err = RunConfig::load(None, &sets(extra)).unwrap_err().to_string();
        assert!(err.contains(key), "{extra:?}: {err}");
    };
    // Unknown names are refused by the parser, which names the table, the value and the
    // valid ones.
    for (extra, valid) in [
        ("verifier.checklist=\"llm\"", "`rules`"),
        ("verifier.tags=\"html\"", "`compact`"),
        ("verifier.criteria=[\"long\"]", "`adjacent`"),
    ] {
        let err = RunConfig::load(None, &sets(&[extra]))
            .unwrap_err()
            .to_string();
        let value = extra.split('"').nth(1).unwrap();
        assert!(
            err.contains("verifier") && err.contains(value) && err.contains(valid),
            "{extra}: {err}"
        );
    }
    refused(&["verifier.answer_weight=-6.0"], "verifier.answer_weight");
    refused(
        &["verifier.checklist_weight=-1.0"],
        "verifier.checklist_weight",
    );
    refused(&["verifier.format_weight=-1.0"], "verifier.format_weight");
    refused(
        &["verifier.trailing_penalty=-0.001"],
        "verifier.trailing_penalty",
    );
    refused(
        &[
            "verifier.answer_weight=0.0",
            "verifier.checklist_weight=0.0",
            "verifier.format_weight=0.0",
        ],
        "verifier.answer_weight",
    );
    refused(&["verifier.criteria=[]"], "verifier.criteria");
    refused(
        &["verifier.criteria=[\"answer\", \"answer\"]"],
        "verifier.criteria",
    );
}

/// `configs/k2v.toml` and its plain arm load, and the bundled task fits the bundled model:
/// every character of every prompt and completion is in its alphabet, and the longest prompt
/// plus `rollout.max_new_tokens` fits its 64 positions.
#[test]
fn the_bundled_k2v_task_fits_the_bundled_model() {
    for name in ["configs/k2v.toml", "configs/ablations/k2v-plain.toml"] {
        let c = RunConfig::load(Some(&repo().join(name)), &[]).unwrap();
        assert_eq!(c.verifier.kind(), rlvr_verifiers::Kind::K2v, "{name}");
        let longest = ["train", "test"]
            .iter()
            .flat_map(|split| {
                let text =
                    std::fs::read_to_string(repo().join(format!("datasets/k2v/{split}.jsonl")))
                        .unwrap();
                text.lines()
                    .map(|l| {
                        let r: serde_json::Value = serde_json::from_str(l).unwrap();
                        let p = r["prompt"].as_str().unwrap().to_string();
                        let c = r["completion"].as_str().unwrap_or("").to_string();
                        for ch in p.chars().chain(c.chars()) {
                            assert!(ALPHABET.contains(ch), "{ch:?} in {l}");
                        }
                        p.chars().count()
                    })
                    .collect::<Vec<_>>()
            })
            .max()
            .unwrap();
        assert!(longest + c.rollout.max_new_tokens <= 64, "{longest}");
    }
}
