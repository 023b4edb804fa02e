//! DelTA (`[stages.delta]`) in the real loop: the stage's token coefficients reach the loss
//! (the update differs from the baseline on the same rollouts, and c ≡ 1 gives the baseline's
//! update exactly), its metrics and cost are logged, every knob is live, and bad values and
//! combinations are refused when the config loads, naming the key.
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

fn with_delta() -> &'static [Metrics] {
    static H: OnceLock<Vec<Metrics>> = OnceLock::new();
    H.get_or_init(|| run(&["stages.delta={}"]))
}

/// DelTA scores mixed groups every step and moves the update; its coefficients stay in
/// [c_min, c_max] and its time is logged. With c_min = c_max = 1 every coefficient is 1 and the
/// update is the baseline's to the bit (the self-normalized surrogate with c ≡ 1 is the plain one).
#[test]
fn delta_is_live_and_c_one_is_the_baseline() {
    let base = baseline();
    let h = with_delta();
    assert_live(h, base, "delta");
    for m in h {
        assert!(get(m, "stages/shaping/delta_scored_pools") > 0.0, "{m:?}");
        let (lo, mean, hi) = (
            get(m, "stages/shaping/delta_coef_min"),
            get(m, "stages/shaping/delta_coef_mean"),
            get(m, "stages/shaping/delta_coef_max"),
        );
        assert!((0.1..1.0).contains(&lo) && (1.0..=3.0).contains(&hi) && hi > 1.0);
        assert!(lo <= mean && mean <= hi);
        for k in ["delta_clip_low_frac", "delta_clip_high_frac"] {
            let v = get(m, &format!("stages/shaping/{k}"));
            assert!((0.0..=1.0).contains(&v), "{k} = {v}");
        }
        assert!(get(m, "time/stages_s") > 0.0);
    }
    let ones = run(&["stages.delta={ c_min = 1.0, c_max = 1.0 }"]);
    assert_eq!(get(&ones[0], "stages/shaping/delta_coef_mean"), 1.0);
    for key in ["objective/loss", "optim/grad_norm"] {
        assert_eq!(get(&ones[0], key), get(&base[0], key), "{key}");
    }
}

/// A two-step run of the bundled arithmetic task (longer responses than the sums, so tokens
/// typical of the other side exist: coefficients below 1).
fn run_arith(extra: &[&str]) -> Vec<Metrics> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let mut sets = vec!["train.steps=2", "eval.every=0", "checkpoint.every=0"];
    sets.extend_from_slice(extra);
    common::train_quiet(&dir, &sets);
    common::history(&dir)
}

/// Each knob moves the update against DelTA at its defaults, on the same first rollout.
#[test]
fn delta_knobs_are_live() {
    let h = run_arith(&["stages.delta={}"]);
    assert!(
        get(&h[0], "stages/shaping/delta_coef_min") < 0.5,
        "{:?}",
        h[0]
    );
    for knob in [
        "stages.delta={ kappa = 2.0 }",
        "stages.delta={ c_max = 1.2 }",
        "stages.delta={ eps = 0.5 }",
        "stages.delta={ scope = \"batch\" }",
    ] {
        let k = run_arith(&[knob]);
        assert_live(&k, &h, knob);
    }
    let floor = run_arith(&["stages.delta={ c_min = 0.5 }"]);
    assert_live(&floor, &h, "c_min");
    assert!(get(&floor[0], "stages/shaping/delta_clip_low_frac") > 0.0);
    assert_eq!(get(&floor[0], "stages/shaping/delta_coef_min"), 0.5);
}

/// Bad knob values and combinations stop the run at load, naming the key.
#[test]
fn bad_delta_knobs_are_refused_at_load() {
    let refused = |sets: &[&str], key: &str| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let err = RunConfig::load(None, &sets).unwrap_err().to_string();
        assert!(err.contains(key), "{sets:?}: {err}");
    };
    refused(&["stages.delta={ kappa = 0 }"], "delta.kappa");
    refused(&["stages.delta={ c_min = 0 }"], "delta.c_min");
    refused(&["stages.delta={ c_max = 0.5 }"], "delta.c_max");
    refused(&["stages.delta={ eps = -1 }"], "delta.eps");
    refused(&["stages.delta={ scope = \"prompt\" }"], "scope");
    // The hidden-state proxy is not built.
    refused(&["stages.delta={ proxy = \"hidden_state\" }"], "proxy");
    refused(&["stages.delta={}", "stages.oppo={}"], "delta");
    for mode in ["seq_mean_token_sum", "seq_mean_token_sum_norm"] {
        let agg = format!("objective.aggregation=\"{mode}\"");
        refused(&["stages.delta={}", &agg], "stages.delta");
        refused(&["stages.delta={}", &agg], "objective.aggregation");
    }
    for ok in [
        "objective.aggregation=\"token_mean\"",
        "objective.aggregation=\"seq_mean_token_mean\"",
    ] {
        let sets = [
            "stages.delta={ scope = \"batch\" }".to_string(),
            ok.to_string(),
        ];
        RunConfig::load(None, &sets).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}
