//! The token-credit stages in the real loop: CEPO (`[stages.cepo]`), OPPO (`[stages.oppo]`) and
//! AMR-SD (`[stages.amr_sd]`, with its reflection) run their conditioned passes, emit their own metrics and change the update against the
//! baseline; their knobs are live; bad values are refused when the config loads, naming the key.
//!
//! The task is one-digit sums (`common::sums_sets`: two steps, mixed groups).

mod common;

use common::{assert_live, get};

use std::sync::OnceLock;

use rlvr_train::RunConfig;
use rlvr_train::metrics::Metrics;

fn run(extra: &[&str]) -> Vec<Metrics> {
    common::run_history(&common::sums_sets(extra))
}

fn baseline() -> &'static [Metrics] {
    static BASE: OnceLock<Vec<Metrics>> = OnceLock::new();
    BASE.get_or_init(|| run(&[]))
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

/// AMR-SD's live run: thresholds 0 so that every token with the right CIG sign is gated, short
/// reflections (the tiny model writes one- or two-character hints).
const AMR: &str = "tau_pos = 0.0, tau_neg = 0.0, hint_max_tokens = 8";

fn amr_sd() -> &'static [Metrics] {
    static RUN: OnceLock<Vec<Metrics>> = OnceLock::new();
    RUN.get_or_init(|| run(&[&format!("stages.amr_sd={{ {AMR} }}")]))
}

/// AMR-SD reflects on the mixed groups' rollouts at step 0, scores the accepted hints, gates
/// tokens and moves the update; with K_anneal = half of the two steps λ is 0 at step 1 and
/// nothing is generated.
#[test]
fn amr_sd_is_live() {
    let h = amr_sd();
    assert_live(h, baseline(), "amr_sd");
    let m = &h[0];
    assert_eq!(get(m, "stages/shaping/amr_sd_lambda"), 0.5);
    let reflections = get(m, "token_credit/amr_sd_reflections");
    assert!(reflections > 0.0 && reflections % 4.0 == 0.0, "{m:?}");
    let hinted = get(m, "stages/shaping/amr_sd_hint_rows");
    assert!(hinted > 0.0, "{m:?}");
    assert_eq!(get(m, "token_credit/amr_sd_scored_rows"), hinted);
    assert_eq!(
        hinted
            + get(m, "token_credit/amr_sd_leak_dropped")
            + get(m, "token_credit/amr_sd_empty_dropped"),
        reflections,
        "every reflection is accepted or dropped: {m:?}"
    );
    assert!(get(m, "stages/shaping/amr_sd_gated_frac") > 0.0, "{m:?}");
    assert!(get(m, "stages/shaping/amr_sd_m_mean") > 1.0, "{m:?}");
    assert!(get(m, "advantage/token_offset_abs_mean") > 0.0);
    assert!(get(m, "time/amr_sd_reflection_s") > 0.0);
    assert_eq!(get(&h[1], "stages/shaping/amr_sd_lambda"), 0.0);
    assert!(!h[1].contains_key("token_credit/amr_sd_reflections"));
}

/// Every AMR-SD knob changes the run against the live one (the update, or what the
/// reflection did).
#[test]
fn amr_sd_knobs_are_live() {
    let h = amr_sd();
    // The live run's settings with `knob` in place of its own value of that key.
    let with = |knob: &str| {
        let key = knob.split('=').next().unwrap().trim();
        let mut keys: Vec<&str> = AMR
            .split(", ")
            .filter(|kv| kv.split('=').next().unwrap().trim() != key)
            .collect();
        keys.push(knob);
        run(&[&format!("stages.amr_sd={{ {} }}", keys.join(", "))])
    };
    for knob in [
        "tau_pos = -3.0",
        "tau_neg = 3.0",
        "m_max = 0.01",
        "lambda0 = 2.0",
        "hint_max_tokens = 1",
        "diagnose_template = \"{response}\"",
        "hint_template = \"{diagnosis}=\"",
        "context_template = \"{hint}\"",
    ] {
        assert_live(&with(knob), h, knob);
    }
    let per_group = with("per_group = true");
    assert_live(&per_group, h, "per_group");
    let groups = get(&per_group[0], "token_credit/amr_sd_reflections");
    assert!(
        groups > 0.0 && groups <= 4.0,
        "one reflection per group: {groups}"
    );
    assert_eq!(
        get(&per_group[0], "stages/shaping/amr_sd_hint_rows") % 4.0,
        0.0,
        "a group's hint conditions all its rollouts"
    );
    let longer = with("anneal_steps = 2");
    assert_eq!(get(&longer[1], "stages/shaping/amr_sd_lambda"), 0.25);
    assert!(get(&longer[1], "token_credit/amr_sd_reflections") > 0.0);
    // A diagnosis of the bare response ("7": the model ends it at once) and a hint prompt of
    // the bare problem ("3+4=") make the warm-started model write the answer as the hint:
    // leaks are regenerated, and with max_regenerations = 0 dropped at once.
    let leaky = "diagnose_template = \"{response}\", hint_template = \"{diagnosis}{problem}\"";
    let retried = run(&[&format!("stages.amr_sd={{ {AMR}, {leaky} }}")]);
    let r = &retried[0];
    assert!(get(r, "token_credit/amr_sd_regenerated") > 0.0, "{r:?}");
    let once = run(&[&format!(
        "stages.amr_sd={{ {AMR}, {leaky}, max_regenerations = 0 }}"
    )]);
    let o = &once[0];
    assert_eq!(get(o, "token_credit/amr_sd_regenerated"), 0.0);
    assert!(
        get(o, "token_credit/amr_sd_leak_dropped") >= get(r, "token_credit/amr_sd_leak_dropped"),
        "{o:?} vs {r:?}"
    );
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
    refused(&["stages.amr_sd={ tau_neg = nan }"], "amr_sd.tau_neg");
    refused(
        &["stages.amr_sd={ anneal_steps = 0 }"],
        "amr_sd.anneal_steps",
    );
    refused(
        &["stages.amr_sd={ context_template = \"no hint\" }"],
        "amr_sd.context_template",
    );
    refused(&["stages.amr_sd={}", "stages.oppo={}"], "oppo");
    refused(
        &["stages.amr_sd={}", "verifier.kind=\"code\""],
        "stages.amr_sd",
    );
    // The working neighbours load.
    for ok in [
        "stages.cepo={ warmup_steps = 0, schedule = \"constant\" }",
        "stages.oppo={ oracle_template = \"{answer}\", keep_collapsed = true }",
        "stages.amr_sd={ tau_pos = 0, anneal_steps = 1 }",
    ] {
        RunConfig::load(None, &[ok.to_string()]).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}
