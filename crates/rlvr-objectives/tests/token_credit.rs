//! CEPO's and OPPO's token advantages against `scripts/reference_token_credit.py` (numpy
//! float64, vectorized over tokens, written from the spec formulas) to 1e-6, hand-checked cases,
//! OPPO's telescoping identity, and the stages' refusals.

mod common;

use common::{floats, rows};

use rlvr_objectives::shaping::{
    CepoConfig, CepoSchedule, OppoConfig, cepo_token_advantages, oppo_token_advantages,
};
use rlvr_objectives::{AdvantageConfig, Error, ShapingState, StageInput, StagesConfig};
use serde_json::Value;

const TOL: f64 = 1e-6;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/token_credit_golden.json")).expect("fixture parses")
}

fn close(got: &[f64], want: &[f64], what: &str) {
    common::close_within(got, want, TOL, what);
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

/// The first case by hand: A = 1.5, λ = 1, ε_w = 0.2, δ = (0.5, −0.5, 0.1, 0):
/// w = (e^0.5 = 1.649 → 1.2, e^−0.5 = 0.607 → 0.8, e^0.1 = 1.10517, 1), so
/// Â = 1.5·w = (1.8, 1.2, 1.657756, 1.5).
#[test]
fn cepo_token_advantages_match_the_reference() {
    let hand = cepo_token_advantages(&[0.5, -0.5, 0.1, 0.0], 1.5, 1.0, 0.2);
    close(&f64s(&hand), &[1.8, 1.2, 1.657_756_4, 1.5], "hand");
    let fx = fixture();
    for (i, c) in fx["cepo"].as_array().unwrap().iter().enumerate() {
        let got = cepo_token_advantages(
            &floats(&c["delta"]),
            c["advantage"].as_f64().unwrap() as f32,
            c["lambda"].as_f64().unwrap(),
            c["eps_w"].as_f64().unwrap(),
        );
        close(
            &f64s(&got),
            &f64s(&floats(&c["expected"])),
            &format!("cepo case {i}"),
        );
    }
    let l = &fx["cepo_lambdas"];
    for (schedule, key) in [
        (CepoSchedule::Linear, "linear"),
        (CepoSchedule::Constant, "constant"),
    ] {
        let cfg = CepoConfig {
            lambda_init: 0.5,
            warmup_steps: 25,
            schedule,
            ..CepoConfig::default()
        };
        let got: Vec<f64> = (0..30).step_by(5).map(|s| cfg.lambda(s)).collect();
        let want: Vec<f64> = serde_json::from_value(l[key].clone()).unwrap();
        close(&got, &want, key);
    }
}

/// CEPO inside the stages: GRPO's advantages, then Â_t = advantage + token offset equals the
/// reference's A_i [(1 − λ) + λ w̃_t] with λ from the schedule at step 0, and the diagnostics.
/// The all-correct group (δ = 0) keeps GRPO's zero.
#[test]
fn the_cepo_stage_matches_the_reference() {
    let fx = fixture();
    let c = &fx["cepo_stage"];
    let rewards = floats(&c["rewards"]);
    let deltas = rows(&c["deltas"]);
    let stages: StagesConfig = toml::from_str(&format!(
        "[cepo]\nlambda_init = {}\nwarmup_steps = {}\neps_w = {}",
        c["lambda_init"], c["warmup_steps"], c["eps_w"]
    ))
    .unwrap();
    let input = StageInput {
        cepo_delta: Some(&deltas),
        ..StageInput::new(&rewards, 4)
    };
    let mut state = ShapingState::default();
    let out = stages
        .apply(&input, &AdvantageConfig::default(), &mut state)
        .unwrap();
    close(
        &f64s(&out.advantages),
        &f64s(&floats(&c["advantages"])),
        "advantages",
    );
    for (i, want) in rows(&c["token_advantages"]).iter().enumerate() {
        let got: Vec<f64> = out.token_offsets[i]
            .iter()
            .map(|o| f64::from(out.advantages[i] + o))
            .collect();
        close(&got, &f64s(want), &format!("sequence {i}"));
    }
    for (k, v) in c["metrics"].as_object().unwrap() {
        close(&[out.metrics[k]], &[v.as_f64().unwrap()], k);
    }
    // After the warm-up λ = 0: no δ needed, no offsets.
    let mut late = ShapingState {
        step: 4,
        ..ShapingState::default()
    };
    let out = stages
        .apply(
            &StageInput::new(&rewards, 4),
            &AdvantageConfig::default(),
            &mut late,
        )
        .unwrap();
    assert_eq!(out.metrics["shaping/cepo_lambda"], 0.0);
    assert!(out.token_offsets.iter().all(Vec::is_empty));
}

/// The saturating case by hand: p₀ = 0.75, δ = (0.5, 0.2, −1.2, −0.5, ·). log p runs
/// −0.2877 → 0.2123 → 0.4123 → −0.7877 → −1.2877, so p = (1, 1, 0.45490, 0.27590) and
/// A = (0.25, 0, −0.54510, −0.17899, 1 − 0.27590 = 0.72410): Σ = 0.25 = r − p₀. The running sum
/// above log 1 is kept (p₃ = e^−0.7877, not 1·e^−1.2), so saturation only moves credit.
#[test]
fn oppo_token_advantages_match_the_reference() {
    let t = oppo_token_advantages(
        &[-2.0, -1.0, -1.0, -3.0, -1.0],
        &[-1.5, -0.8, -2.2, -3.5, -1.0],
        1.0,
        0.75,
        4,
        5.0,
    );
    close(
        &t.advantages,
        &[0.25, 0.0, -0.545_102, -0.178_988, 0.724_090],
        "hand",
    );
    assert_eq!(t.saturated, 2);
    for (i, c) in fixture()["oppo"].as_array().unwrap().iter().enumerate() {
        let t = oppo_token_advantages(
            &floats(&c["logp"]),
            &floats(&c["oracle_logp"]),
            c["reward"].as_f64().unwrap() as f32,
            c["pass_rate"].as_f64().unwrap(),
            c["group_size"].as_u64().unwrap() as usize,
            c["delta_clip"].as_f64().unwrap(),
        );
        let want: Vec<f64> = serde_json::from_value(c["expected"].clone()).unwrap();
        close(&t.advantages, &want, &format!("oppo case {i}"));
        close(&[t.p0], &[c["p0"].as_f64().unwrap()], "p0");
    }
}

/// Σ_t A_t = r − p₀ on 200 seeded responses of 1..40 tokens whose δ are large enough that most
/// saturate at 1 (and some clip at ±5): exact up to f64 rounding, saturated or not.
#[test]
fn oppo_telescopes_to_r_minus_p0_also_when_saturated() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut saturated, mut clipped) = (0, 0);
    for case in 0..200 {
        let n = 1 + case % 40;
        let logp: Vec<f32> = (0..n).map(|_| (-4.0 * uniform()) as f32).collect();
        let oracle: Vec<f32> = logp
            .iter()
            .map(|&l| l + (12.0 * uniform() - 5.0) as f32)
            .collect();
        let r = if case % 3 == 0 { 0.0 } else { 1.0 };
        let t = oppo_token_advantages(&logp, &oracle, r, uniform(), 8, 5.0);
        let sum: f64 = t.advantages.iter().sum();
        assert!(
            (sum - (f64::from(r) - t.p0)).abs() < 1e-12,
            "case {case}: {sum} vs {}",
            f64::from(r) - t.p0
        );
        assert!((1.0 / 16.0..=15.0 / 16.0).contains(&t.p0));
        saturated += t.saturated;
        clipped += t.clipped;
    }
    assert!(saturated > 100 && clipped > 100, "{saturated} {clipped}");
}

/// OPPO inside the stages, with and without the group scale: the sequence advantages are 0 and
/// the token offsets are the reference's token advantages (the all-correct group zeroed, or kept
/// unscaled).
#[test]
fn the_oppo_stage_matches_the_reference() {
    let fx = fixture();
    let c = &fx["oppo_stage"];
    let rewards = floats(&c["rewards"]);
    let passed: Vec<bool> = serde_json::from_value(c["passed"].clone()).unwrap();
    let (logp, oracle) = (rows(&c["logp"]), rows(&c["oracle_logp"]));
    for v in c["variants"].as_array().unwrap() {
        let stages = StagesConfig {
            oppo: Some(OppoConfig {
                scale_by_group_std: v["scale_by_group_std"].as_bool().unwrap(),
                keep_collapsed: v["keep_collapsed"].as_bool().unwrap(),
                ..OppoConfig::default()
            }),
            ..StagesConfig::default()
        };
        let input = StageInput {
            passed: &passed,
            token_logp: Some(&logp),
            oracle_logp: Some(&oracle),
            ..StageInput::new(&rewards, 3)
        };
        let out = stages
            .apply(
                &input,
                &AdvantageConfig::default(),
                &mut ShapingState::default(),
            )
            .unwrap();
        assert!(out.advantages.iter().all(|&a| a == 0.0));
        for (i, want) in rows(&v["token_advantages"]).iter().enumerate() {
            close(
                &f64s(&out.token_offsets[i]),
                &f64s(want),
                &format!("{v}: {i}"),
            );
        }
        assert!(out.metrics.contains_key("shaping/oppo_saturated_frac"));
    }
}

/// OPPO discards sequence advantages, so stages that shape them are refused with it; a
/// missing input or ragged token rows are typed errors naming the field.
#[test]
fn bad_combinations_and_inputs_are_refused() {
    for other in ["[edas]", "[avspo]", "[cepo]", "[tmn]"] {
        let s: StagesConfig = toml::from_str(&format!("[oppo]\n{other}")).unwrap();
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains("oppo"), "{other}: {err}");
    }
    let bad: StagesConfig = toml::from_str("[cepo]\neps_w = 1.0").unwrap();
    assert!(
        bad.validate()
            .unwrap_err()
            .to_string()
            .contains("cepo.eps_w")
    );
    let bad: StagesConfig = toml::from_str("[cepo]\nlambda_init = 1.5").unwrap();
    assert!(
        bad.validate()
            .unwrap_err()
            .to_string()
            .contains("cepo.lambda_init")
    );
    let rewards = [1.0f32, 0.0];
    let cepo: StagesConfig = toml::from_str("[cepo]").unwrap();
    let base = AdvantageConfig::default();
    let err = cepo
        .apply(
            &StageInput::new(&rewards, 2),
            &base,
            &mut ShapingState::default(),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::MissingTensor {
                name: "cepo_delta",
                ..
            }
        ),
        "{err}"
    );
    let deltas = vec![vec![0.1f32, 0.2], vec![0.3]];
    let logp = vec![vec![-1.0f32], vec![-1.0]];
    let input = StageInput {
        cepo_delta: Some(&deltas),
        token_logp: Some(&logp),
        ..StageInput::new(&rewards, 2)
    };
    let err = cepo
        .apply(&input, &base, &mut ShapingState::default())
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadInput {
                field: "cepo_delta",
                index: 0,
                ..
            }
        ),
        "{err}"
    );
    let oppo: StagesConfig = toml::from_str("[oppo]").unwrap();
    let input = StageInput {
        passed: &[true, false],
        token_logp: Some(&logp),
        ..StageInput::new(&rewards, 2)
    };
    let err = oppo
        .apply(&input, &base, &mut ShapingState::default())
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::MissingTensor {
                name: "oracle_logp",
                ..
            }
        ),
        "{err}"
    );
}
