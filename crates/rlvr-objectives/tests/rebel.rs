//! ReBel's estimator against `scripts/reference_rebel.py` (stdlib Python: returns by closed-form
//! sums, belief groups by sorting) to 1e-6, directly and through `StagesConfig::apply`, and its
//! refusals.

mod common;

use common::{floats, rows};

use rlvr_objectives::shaping::{RebelConfig, StepCredit, rebel};
use rlvr_objectives::{AdvantageConfig, ShapingState, StageInput, StagesConfig};
use serde_json::Value;

const TOL: f32 = 1e-6;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/rebel_golden.json")).expect("fixture parses")
}

struct Case {
    cfg: RebelConfig,
    g: usize,
    rewards: Vec<f32>,
    episodes: Vec<Vec<StepCredit>>,
    lens: Vec<usize>,
    advantages: Vec<f32>,
    offsets: Vec<Vec<f32>>,
}

fn cases() -> Vec<Case> {
    fixture()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            cfg: serde_json::from_value(c["config"].clone()).unwrap(),
            g: c["group_size"].as_u64().unwrap() as usize,
            rewards: floats(&c["rewards"]),
            episodes: serde_json::from_value(c["episodes"].clone()).unwrap(),
            lens: serde_json::from_value(c["response_lens"].clone()).unwrap(),
            advantages: floats(&c["advantages"]),
            offsets: rows(&c["token_offsets"]),
        })
        .collect()
}

fn close(got: &[f32], want: &[f32], what: &str) {
    common::close_within(got, want, f64::from(TOL), what);
}

#[test]
fn the_estimator_matches_the_reference() {
    let cases = cases();
    assert_eq!(cases.len(), 9);
    for (k, c) in cases.iter().enumerate() {
        let (a, off, _) = rebel(&c.rewards, &c.episodes, &c.lens, c.g, &c.cfg).unwrap();
        close(&a, &c.advantages, &format!("case {k} advantages"));
        for (i, (o, w)) in off.iter().zip(&c.offsets).enumerate() {
            close(o, w, &format!("case {k} row {i} offsets"));
        }
    }
}

/// Through the pipeline: `[stages.rebel]` replaces the objective's estimator (GRPO's std
/// division is not applied) and its offsets are the stage's token offsets.
#[test]
fn the_stage_in_the_pipeline_matches_the_reference() {
    for (k, c) in cases().iter().enumerate() {
        let stages = StagesConfig {
            rebel: Some(c.cfg),
            ..StagesConfig::default()
        };
        let ids: Vec<Vec<u32>> = c.lens.iter().map(|&l| vec![7; l]).collect();
        let input = StageInput {
            episodes: Some(&c.episodes),
            response_tokens: Some(&ids),
            ..StageInput::new(&c.rewards, c.g)
        };
        let out = stages
            .apply(
                &input,
                &AdvantageConfig::default(),
                &mut ShapingState::default(),
            )
            .unwrap();
        close(&out.advantages, &c.advantages, &format!("case {k}"));
        for (o, w) in out.token_offsets.iter().zip(&c.offsets) {
            close(o, w, &format!("case {k} offsets"));
        }
        assert!(out.metrics.contains_key("shaping/rebel_state_mean"));
    }
}

#[test]
fn missing_inputs_and_conflicting_stages_are_refused() {
    let stages = StagesConfig {
        rebel: Some(RebelConfig::default()),
        ..StagesConfig::default()
    };
    let rewards = [1.0, 0.0];
    let err = stages
        .apply(
            &StageInput::new(&rewards, 2),
            &AdvantageConfig::default(),
            &mut ShapingState::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("episodes"), "{err}");
    let both: StagesConfig = toml::from_str("[rebel]\n[oppo]\n").unwrap();
    assert!(both.validate().unwrap_err().to_string().contains("rebel"));
    let cepo: StagesConfig = toml::from_str("[rebel]\n[cepo]\n").unwrap();
    assert!(cepo.validate().unwrap_err().to_string().contains("cepo"));
}
