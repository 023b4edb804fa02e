//! The optimizer-side and token-level stages act inside the real loop: DGG ends the reuse of a
//! batch under a tight threshold (and never under a loose one), and SRaR's step offsets reach
//! the per-token advantages when the lines carry a step rubric.

mod common;

use std::path::Path;

use common::history;
use rlvr_train::metrics::Metrics;

fn dgg_run(tmp: &Path, name: &str, threshold: &str) -> Vec<Metrics> {
    let run = tmp.join(name);
    let dgg = format!("stages.dgg={{ threshold = {threshold}, window = 2, max_reuse = 3 }}");
    common::train_quiet(
        &run,
        &[&dgg, "train.steps=3", "eval.every=0", "data.eval_limit=4"],
    );
    history(&run)
}

/// Window 2: the first step makes 3 accepted passes (the gate arms once 2 Δg are in). From the
/// second step on, any reuse pass has Z > −1e9 and is gated, so that step makes 1 update.
#[test]
fn dgg_stops_the_reuse_under_a_tight_threshold_only() {
    let tmp = tempfile::tempdir().unwrap();
    let tight = dgg_run(tmp.path(), "tight", "-1e9");
    assert_eq!(tight[0]["optim/updates"], 3.0);
    assert_eq!(tight[0]["dgg/gated"], 0.0);
    for m in &tight[1..] {
        assert_eq!(m["dgg/gated"], 1.0, "{m:?}");
        assert_eq!(m["optim/updates"], 1.0);
        assert_eq!(m["dgg/passes"], 2.0);
        assert!(m["dgg/lm_head_grad_norm"].is_finite() && m["dgg/lm_head_grad_norm"] >= 0.0);
    }
    assert_eq!(tight.last().unwrap()["dgg/gate_events"], 2.0);

    let loose = dgg_run(tmp.path(), "loose", "1e30");
    for m in &loose {
        assert_eq!(m["dgg/gated"], 0.0, "{m:?}");
        assert_eq!(m["optim/updates"], 3.0);
    }
}

/// Writes the first `n` lines of the bundled training set, with or without a step rubric whose
/// items are satisfied by some answers' digits and not by others.
fn rubric_data(dir: &Path, n: usize, with_rubric: bool) -> std::path::PathBuf {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../datasets/arith/train.jsonl"
    );
    let text = std::fs::read_to_string(src).unwrap();
    let lines: String = text
        .lines()
        .take(n)
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if with_rubric {
                v["step_rubric"] = serde_json::json!([
                    {"kind": "suggest", "step": 0, "contains": "1"},
                    {"kind": "pitfall", "step": 0, "contains": "0"},
                    {"kind": "bonus", "step": 0, "contains": "2"},
                ]);
            }
            v.to_string() + "\n"
        })
        .collect();
    let path = dir.join(if with_rubric {
        "rubric.jsonl"
    } else {
        "plain.jsonl"
    });
    std::fs::write(&path, lines).unwrap();
    path
}

fn srar_run(tmp: &Path, with_rubric: bool) -> Vec<Metrics> {
    let data = rubric_data(tmp, 400, with_rubric);
    let run = tmp.join(format!("srar-{with_rubric}"));
    let train = format!("data.train=\"{}\"", data.display());
    common::train_quiet(
        &run,
        &[
            &train,
            "stages.srar={}",
            "train.steps=2",
            "eval.every=0",
            "data.eval_limit=4",
        ],
    );
    history(&run)
}

#[test]
fn srar_step_offsets_reach_the_token_advantages() {
    let tmp = tempfile::tempdir().unwrap();
    let with = srar_run(tmp.path(), true);
    let offset: f64 = with
        .iter()
        .map(|m| m["advantage/token_offset_abs_mean"])
        .sum();
    assert!(offset > 0.0, "no step offsets reached the tokens: {with:?}");
    assert!(
        with.iter()
            .any(|m| m["stages/shaping/srar_offset_abs_mean"] > 0.0)
    );

    // The same run without a step rubric on the lines: no offsets at all.
    let without = srar_run(tmp.path(), false);
    for m in &without {
        assert_eq!(m["advantage/token_offset_abs_mean"], 0.0, "{m:?}");
    }
}
