//! AMR-SD's gate and annealing against `scripts/reference_amr_sd.py` (numpy float64, vectorized
//! over tokens, written from the spec formulas) to 1e-6, hand-checked cases, the stage inside
//! `StagesConfig::apply`, and its refusals.

mod common;

use common::{floats, rows};

use rlvr_objectives::shaping::{AmrSdConfig, amr_sd, amr_sd_multipliers};
use rlvr_objectives::{AdvantageConfig, Error, ShapingState, StageInput, StagesConfig};
use serde_json::Value;

const TOL: f64 = 1e-6;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/amr_sd_golden.json")).expect("fixture parses")
}

fn f64s(v: &Value) -> Vec<f64> {
    serde_json::from_value(v.clone()).unwrap()
}

fn close(got: &[f64], want: &[f64], what: &str) {
    common::close_within(got, want, TOL, what);
}

/// The gate on hand-written cases (both signs; CIG exactly at τ⁺ = 0.5 and at −τ⁻ = −1, where
/// m stays 1; the m_max cap; A = 0; λ = 0; other thresholds and caps). Case 3 by hand: A < 0,
/// λ = 0.5, CIG (−1, −1.25, −2.5, 0.75) → −CIG − 1 = (0, 0.25, 1.5 → cap 1, −1.75 → 0) →
/// m = (1, 1.125, 1.5, 1), offsets A(m − 1) = (0, −0.0625, −0.25, 0).
#[test]
fn the_gate_matches_the_reference() {
    let cfg = AmrSdConfig::default();
    let hand = amr_sd_multipliers(&[-1.0, -1.25, -2.5, 0.75], -0.5, 0.5, &cfg);
    assert_eq!(hand, [1.0, 1.125, 1.5, 1.0]);
    let (off, _) = amr_sd(
        &[vec![-1.0, -1.25, -2.5, 0.75]],
        &[vec![0.0; 4]],
        &[-0.5],
        0.5,
        &cfg,
    );
    assert_eq!(off[0], [0.0, -0.0625, -0.25, 0.0]);
    for (i, c) in fixture()["gate"].as_array().unwrap().iter().enumerate() {
        let cfg = AmrSdConfig {
            tau_pos: c["tau_pos"].as_f64().unwrap(),
            tau_neg: c["tau_neg"].as_f64().unwrap(),
            m_max: c["m_max"].as_f64().unwrap(),
            ..AmrSdConfig::default()
        };
        let cig = floats(&c["cig"]);
        let a = c["adv"].as_f64().unwrap() as f32;
        let lambda = c["lam"].as_f64().unwrap();
        let m = amr_sd_multipliers(&cig, a, lambda, &cfg);
        close(&m, &f64s(&c["multipliers"]), &format!("gate case {i}"));
        // Through `amr_sd`, with the CIG as ℓ^hint over ℓ = 0.
        let (off, _) = amr_sd(
            std::slice::from_ref(&cig),
            &[vec![0.0; cig.len()]],
            &[a],
            lambda,
            &cfg,
        );
        let off: Vec<f64> = off[0].iter().map(|&x| f64::from(x)).collect();
        close(&off, &f64s(&c["offsets"]), &format!("offsets {i}"));
    }
}

/// λ_k = λ₀·max(0, 1 − k/K) at k = 0, K/2, K and past K, with K set and with K = half of the
/// run's steps (7 steps → K = 3).
#[test]
fn the_annealing_matches_the_reference() {
    let a = &fixture()["anneal"];
    let steps: Vec<u64> = serde_json::from_value(a["steps"].clone()).unwrap();
    let set = AmrSdConfig {
        lambda0: a["lambda0"].as_f64().unwrap(),
        anneal_steps: Some(a["anneal_steps"].as_u64().unwrap()),
        ..AmrSdConfig::default()
    };
    let got: Vec<f64> = steps.iter().map(|&k| set.lambda(k, 0)).collect();
    close(&got, &f64s(&a["set"]), "anneal_steps = 10");
    let from_run = AmrSdConfig {
        anneal_steps: None,
        ..set.clone()
    };
    let run = a["run_steps"].as_u64().unwrap();
    let got: Vec<f64> = steps.iter().map(|&k| from_run.lambda(k, run)).collect();
    close(&got, &f64s(&a["from_run"]), "run_steps = 20");
    let odd = a["run_steps_odd"].as_u64().unwrap();
    let got: Vec<f64> = (0..5).map(|k| from_run.lambda(k, odd)).collect();
    close(&got, &f64s(&a["from_odd_run"]), "run_steps = 7");
}

fn stage_input<'a>(
    rewards: &'a [f32],
    logp: &'a [Vec<f32>],
    hint: &'a [Vec<f32>],
    run_steps: u64,
) -> StageInput<'a> {
    StageInput {
        token_logp: Some(logp),
        hint_logp: Some(hint),
        run_steps,
        ..StageInput::new(rewards, 4)
    }
}

/// The stage after GRPO: Â_t = advantage + offset equals the reference's A_i m_t (a row without
/// a hint and the all-correct group keep A_i), and the diagnostics. Row 0 by hand: A = 0.866,
/// CIG (0.75, 0, 0.5) → m = (1.125, 1, 1) (0.5 is exactly τ⁺) → Â = (0.97428, 0.86602, 0.86602).
/// At step K = run_steps / 2 = 2, λ = 0: no input is needed and there are no offsets.
#[test]
fn the_stage_matches_the_reference() {
    let c = &fixture()["stage"];
    let rewards = floats(&c["rewards"]);
    let logp = rows(&c["logp"]);
    let hint = rows(&c["hint_logp"]);
    let run_steps = c["run_steps"].as_u64().unwrap();
    let stages: StagesConfig =
        toml::from_str(&format!("[amr_sd]\nlambda0 = {}", c["lambda0"])).unwrap();
    let mut state = ShapingState::default();
    let out = stages
        .apply(
            &stage_input(&rewards, &logp, &hint, run_steps),
            &AdvantageConfig::default(),
            &mut state,
        )
        .unwrap();
    let adv: Vec<f64> = out.advantages.iter().map(|&a| f64::from(a)).collect();
    close(&adv, &f64s(&c["advantages"]), "advantages");
    let row0: Vec<f64> = out.token_offsets[0]
        .iter()
        .map(|&o| f64::from(out.advantages[0] + o))
        .collect();
    close(
        &row0,
        &[0.974_276_9, 0.866_023_9, 0.866_023_9],
        "row 0 by hand",
    );
    let want = c["token_advantages"].as_array().unwrap();
    for (i, w) in want.iter().enumerate() {
        let w = f64s(w);
        let got: Vec<f64> = if out.token_offsets[i].is_empty() {
            vec![f64::from(out.advantages[i]); logp[i].len()]
        } else {
            out.token_offsets[i]
                .iter()
                .map(|&o| f64::from(out.advantages[i] + o))
                .collect()
        };
        close(&got, &w, &format!("sequence {i}"));
    }
    assert!(out.token_offsets[2].is_empty(), "row 2 has no hint");
    for (k, v) in c["metrics"].as_object().unwrap() {
        close(&[out.metrics[k]], &[v.as_f64().unwrap()], k);
    }
    let mut late = ShapingState {
        step: c["late_step"].as_u64().unwrap(),
        ..ShapingState::default()
    };
    let out = stages
        .apply(
            &stage_input(&rewards, &[], &[], run_steps),
            &AdvantageConfig::default(),
            &mut late,
        )
        .unwrap();
    assert_eq!(
        out.metrics["shaping/amr_sd_lambda"],
        c["late_lambda"].as_f64().unwrap()
    );
    assert!(out.token_offsets.iter().all(Vec::is_empty));
    assert!(!out.metrics.contains_key("shaping/amr_sd_gated_frac"));
}

/// With CEPO on too, the offsets add up: AMR-SD's A(m − 1) on top of CEPO's Aλ(w̃ − 1).
#[test]
fn amr_sd_offsets_add_to_cepo_offsets() {
    let rewards = [1.0f32, 0.0];
    let logp = vec![vec![0.0f32, 0.0], vec![0.0, 0.0]];
    let hint = vec![vec![2.0f32, 0.0], vec![]];
    let delta = vec![vec![0.1f32, 0.0], vec![0.0, 0.0]];
    let run = |toml_text: &str| {
        let stages: StagesConfig = toml::from_str(toml_text).unwrap();
        let input = StageInput {
            cepo_delta: Some(&delta),
            token_logp: Some(&logp),
            hint_logp: Some(&hint),
            run_steps: 10,
            ..StageInput::new(&rewards, 2)
        };
        let mut state = ShapingState::default();
        stages
            .apply(&input, &AdvantageConfig::default(), &mut state)
            .unwrap()
            .token_offsets
    };
    let cepo = run("[cepo]\nschedule = \"constant\"");
    let amr = run("[amr_sd]");
    let both = run("[cepo]\nschedule = \"constant\"\n[amr_sd]");
    // A = 0.7071 for row 0: AMR-SD's first token has m = 1 + 0.5·min(1, 2 − 0.5) = 1.5.
    assert!((amr[0][0] - 0.707_106_3 * 0.5).abs() < 1e-5, "{amr:?}");
    for t in 0..2 {
        assert!((both[0][t] - (cepo[0][t] + amr[0][t])).abs() < 1e-6);
    }
    assert_eq!(both[1], cepo[1], "row 1 has no hint: CEPO's offsets alone");
}

/// Missing or malformed inputs and bad knobs are typed errors naming the field.
#[test]
fn bad_inputs_and_knobs_are_refused() {
    let rewards = [1.0f32, 0.0];
    let logp = vec![vec![0.0f32, 0.0], vec![0.0]];
    let stages: StagesConfig = toml::from_str("[amr_sd]").unwrap();
    let apply = |input: &StageInput| {
        let mut state = ShapingState::default();
        stages.apply(input, &AdvantageConfig::default(), &mut state)
    };
    let base = StageInput::new(&rewards, 2);
    match apply(&base) {
        Err(Error::InvalidConfig { field, .. }) => assert_eq!(field, "run_steps"),
        other => panic!("{other:?}"),
    }
    let no_hint = StageInput {
        token_logp: Some(&logp),
        run_steps: 4,
        ..base
    };
    match apply(&no_hint) {
        Err(Error::MissingTensor { name, .. }) => assert_eq!(name, "hint_logp"),
        other => panic!("{other:?}"),
    }
    let short = vec![vec![0.0f32], vec![]];
    let input = StageInput {
        hint_logp: Some(&short),
        ..no_hint
    };
    match apply(&input) {
        Err(Error::BadInput { field, index, .. }) => assert_eq!((field, index), ("hint_logp", 0)),
        other => panic!("{other:?}"),
    }
    let nan = vec![vec![], vec![f32::NAN]];
    let input = StageInput {
        hint_logp: Some(&nan),
        ..no_hint
    };
    match apply(&input) {
        Err(Error::NonFinite { field, index, .. }) => assert_eq!((field, index), ("hint_logp", 1)),
        other => panic!("{other:?}"),
    }
    for (text, field) in [
        ("[amr_sd]\ntau_pos = inf", "amr_sd.tau_pos"),
        ("[amr_sd]\ntau_neg = nan", "amr_sd.tau_neg"),
        ("[amr_sd]\nm_max = 0", "amr_sd.m_max"),
        ("[amr_sd]\nlambda0 = -1", "amr_sd.lambda0"),
        ("[amr_sd]\nanneal_steps = 0", "amr_sd.anneal_steps"),
        ("[amr_sd]\nhint_max_tokens = 0", "amr_sd.hint_max_tokens"),
        (
            "[amr_sd]\ndiagnose_template = \"x\"",
            "amr_sd.diagnose_template",
        ),
        ("[amr_sd]\nhint_template = \"x\"", "amr_sd.hint_template"),
        (
            "[amr_sd]\ncontext_template = \"x\"",
            "amr_sd.context_template",
        ),
        ("[amr_sd]\n[oppo]", "oppo"),
    ] {
        let s: StagesConfig = toml::from_str(text).unwrap();
        match s.validate() {
            Err(Error::InvalidConfig { field: f, .. }) => assert_eq!(f, field, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
}
