//! Bi-NAC's critic reward and group advantages against `scripts/reference_binac.py` (stdlib
//! Python, written from the spec) to 1e-6, and the config's refusals.

mod common;

use common::floats;

use rlvr_objectives::{
    AdvantageConfig, AdvantageEstimator, BinacConfig, BinacRollouts, binac_advantages,
};
use serde_json::Value;

const TOL: f32 = 1e-6;

fn close(got: &[f32], want: &[f32], what: &str) {
    common::close_within(got, want, f64::from(TOL), what);
}

#[test]
fn the_critic_reward_and_advantages_match_the_reference() {
    let fx: Value = serde_json::from_str(include_str!("fixtures/binac_golden.json")).unwrap();
    let cases = fx["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 8);
    for (k, c) in cases.iter().enumerate() {
        let cfg: BinacConfig = serde_json::from_value(c["config"].clone()).unwrap();
        let adv = AdvantageConfig {
            estimator: serde_json::from_value::<AdvantageEstimator>(c["estimator"].clone())
                .unwrap(),
            std_eps: c["std_eps"].as_f64().unwrap() as f32,
        };
        let tokens: Vec<usize> = serde_json::from_value(c["feedback_tokens"].clone()).unwrap();
        let leaked: Vec<bool> = serde_json::from_value(c["leaked"].clone()).unwrap();
        let (drafts, revisions) = (floats(&c["draft_rewards"]), floats(&c["revision_rewards"]));
        let r = BinacRollouts {
            draft_rewards: &drafts,
            feedback_tokens: &tokens,
            leaked: &leaked,
            revision_rewards: &revisions,
        };
        let out = binac_advantages(&cfg, &adv, &r).unwrap();
        for (name, got) in [
            ("improvement", &out.improvement),
            ("critic_rewards", &out.critic_rewards),
            ("feedback_advantages", &out.feedback_advantages),
            ("revision_advantages", &out.revision_advantages),
        ] {
            close(got, &floats(&c[name]), &format!("case {k} {name}"));
        }
    }
}

/// Groups of one, a zero K_a, negative penalties and templates without their placeholders are
/// refused, naming the key.
#[test]
fn bad_knobs_are_refused_by_name() {
    let bad = [
        ("binac.feedbacks", "feedbacks = 1"),
        ("binac.revisions", "revisions = 1"),
        (
            "binac.actor_steps_per_critic_step",
            "actor_steps_per_critic_step = 0",
        ),
        ("binac.length_penalty", "length_penalty = -0.1"),
        (
            "binac.critic_template",
            "critic_template = \"{problem} FEEDBACK:\"",
        ),
        (
            "binac.revision_template",
            "revision_template = \"{problem}{draft}\"",
        ),
    ];
    assert!(BinacConfig::default().validate().is_ok());
    for (key, toml_line) in bad {
        let cfg: BinacConfig = toml::from_str(toml_line).unwrap();
        let err = cfg.validate().expect_err(toml_line).to_string();
        assert!(err.contains(key), "{toml_line}: {err}");
    }
}
