//! The token-credit stages in the real loop: CEPO (`[stages.cepo]`) and OPPO (`[stages.oppo]`)
//! run their conditioned passes, emit their own metrics and change the update against the
//! baseline; their knobs are live; bad values are refused when the config loads, naming the key.
//!
//! The task is one-digit sums (`common::sums_sets`: two steps, mixed groups).

mod common;

use std::sync::OnceLock;

use rlvr_train::RunConfig;
use rlvr_train::metrics::Metrics;

fn run(extra: &[&str]) -> Vec<Metrics> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let sets = common::sums_sets(extra);
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    common::train_quiet(&dir, &refs);
    common::history(&dir)
}

fn baseline() -> &'static [Metrics] {
    static BASE: OnceLock<Vec<Metrics>> = OnceLock::new();
    BASE.get_or_init(|| run(&[]))
}

fn get(m: &Metrics, key: &str) -> f64 {
    *m.get(key)
        .unwrap_or_else(|| panic!("metric {key} missing: {m:?}"))
}

/// The first rollout is the baseline's (same seed, same policy) and the first update differs.
fn assert_live(h: &[Metrics], against: &[Metrics], what: &str) {
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

/// CEPO with a constant λ scores two conditioned passes every step and moves the update; its
/// diagnostics are finite and in range; the clip ε_w is live; with the linear schedule over one
/// step λ is 0 at step 1 and nothing is scored.
#[test]
fn cepo_is_live() {
    let base = baseline();
    let h = run(&["stages.cepo={ schedule = \"constant\" }"]);
    assert_live(&h, base, "cepo");
    for m in &h {
        assert_eq!(get(m, "stages/shaping/cepo_lambda"), 1.0);
        assert!(get(m, "token_credit/cepo_scored_rows") > 0.0, "{m:?}");
        for k in ["cepo_wrong_pos_frac", "cepo_wrong_neg_frac"] {
            let v = get(m, &format!("stages/shaping/{k}"));
            assert!((0.0..=1.0).contains(&v), "{k} = {v}");
        }
        assert!(get(m, "advantage/token_offset_abs_mean") > 0.0);
        assert!(get(m, "time/token_credit_s") > 0.0);
    }
    let narrow = run(&["stages.cepo={ schedule = \"constant\", eps_w = 0.01 }"]);
    assert_live(&narrow, &h, "cepo.eps_w");
    let decayed = run(&["stages.cepo={ warmup_steps = 1 }"]);
    assert_eq!(get(&decayed[0], "stages/shaping/cepo_lambda"), 1.0);
    assert_eq!(get(&decayed[1], "stages/shaping/cepo_lambda"), 0.0);
    assert!(!decayed[1].contains_key("token_credit/cepo_scored_rows"));
}

/// OPPO scores one oracle pass every step, replaces the sequence advantages by token
/// advantages and moves the update; the template, the clip and the group scale are live.
#[test]
fn oppo_is_live() {
    let base = baseline();
    let h = run(&["stages.oppo={}"]);
    assert_live(&h, base, "oppo");
    for m in &h {
        assert_eq!(get(m, "advantage/abs_mean"), 0.0);
        assert!(get(m, "advantage/token_offset_abs_mean") > 0.0);
        assert!(get(m, "token_credit/oppo_scored_rows") > 0.0);
        let p0 = get(m, "stages/shaping/oppo_p0_mean");
        assert!((0.125..=0.875).contains(&p0), "p0 = {p0}");
    }
    for knob in [
        "stages.oppo={ oracle_template = \" {answer}\" }",
        "stages.oppo={ scale_by_group_std = false }",
        "stages.oppo={ delta_clip = 0.001 }",
    ] {
        let k = run(&[knob]);
        assert_live(&k, &h, knob);
    }
    let clipped = run(&["stages.oppo={ delta_clip = 0.001 }"]);
    assert!(get(&clipped[0], "stages/shaping/oppo_clip_frac") > 0.5);
}

/// Bad knob values and combinations stop the run at load, naming the key.
#[test]
fn bad_token_credit_knobs_are_refused_at_load() {
    let refused = |sets: &[&str], key: &str| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let err = RunConfig::load(None, &sets).unwrap_err().to_string();
        assert!(err.contains(key), "{sets:?}: {err}");
    };
    refused(&["stages.cepo={ eps_w = 1.5 }"], "cepo.eps_w");
    refused(&["stages.cepo={ lambda_init = -0.1 }"], "cepo.lambda_init");
    refused(&["stages.cepo={ warmup_steps = 0 }"], "cepo.warmup_steps");
    refused(&["stages.cepo={ schedule = \"cosine\" }"], "schedule");
    refused(&["stages.oppo={ delta_clip = 0 }"], "oppo.delta_clip");
    refused(
        &["stages.oppo={ oracle_template = \"no placeholder\" }"],
        "oppo.oracle_template",
    );
    refused(&["stages.oppo={ clip = 5 }"], "clip");
    refused(&["stages.oppo={}", "stages.edas={}"], "oppo");
    refused(&["stages.oppo={}", "stages.cepo={}"], "oppo");
    refused(
        &["stages.oppo={}", "verifier.kind=\"rubric\""],
        "stages.oppo",
    );
    // The working neighbours load.
    for ok in [
        "stages.cepo={ warmup_steps = 0, schedule = \"constant\" }",
        "stages.oppo={ oracle_template = \"{answer}\", keep_collapsed = true }",
    ] {
        RunConfig::load(None, &[ok.to_string()]).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}
