//! GeoX-style self-play's proposer rewards and solver group advantages against
//! `scripts/reference_geox.py` (stdlib Python, written from the spec) to 1e-6.

mod common;

use common::floats;

use rlvr_objectives::{AdvantageConfig, AdvantageEstimator, GeoxConfig, geox_rewards};
use serde_json::Value;

const TOL: f32 = 1e-6;

fn close(got: &[f32], want: &[f32], what: &str) {
    common::close_within(got, want, f64::from(TOL), what);
}

#[test]
fn rewards_and_advantages_match_the_reference() {
    let fx: Value = serde_json::from_str(include_str!("fixtures/geox_golden.json")).unwrap();
    let cases = fx["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 8);
    let mut learnable = 0;
    for (k, c) in cases.iter().enumerate() {
        let cfg: GeoxConfig = serde_json::from_value(c["config"].clone()).unwrap();
        let adv = AdvantageConfig {
            estimator: serde_json::from_value::<AdvantageEstimator>(c["estimator"].clone())
                .unwrap(),
            std_eps: c["std_eps"].as_f64().unwrap() as f32,
        };
        let valid: Vec<bool> = serde_json::from_value(c["valid"].clone()).unwrap();
        let out = geox_rewards(&cfg, &adv, &valid, &floats(&c["solver_rewards"])).unwrap();
        close(
            &out.proposer_rewards,
            &floats(&c["proposer_rewards"]),
            &format!("case {k} rewards"),
        );
        close(
            &out.solve_rates,
            &floats(&c["solve_rates"]),
            &format!("case {k} rates"),
        );
        close(
            &out.solver_advantages,
            &floats(&c["solver_advantages"]),
            &format!("case {k} advantages"),
        );
        learnable += out.proposer_rewards.iter().filter(|&&r| r > 0.0).count();
    }
    assert!(learnable > 0, "the fixture has no learnable task");
}

#[test]
fn ragged_solver_rewards_are_an_error() {
    let cfg = GeoxConfig::default();
    let err = geox_rewards(
        &cfg,
        &AdvantageConfig::default(),
        &[true, false, true],
        &[1.0, 0.0, 1.0],
    )
    .unwrap_err();
    assert!(err.to_string().contains('8'), "{err}");
}
