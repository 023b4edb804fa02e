//! SCRL's advantages against `scripts/reference_scrl.py` (stdlib Python, written from the spec)
//! to 1e-6 through `StagesConfig::apply` and the segment token mapping, and its refusals.

mod common;

use common::{floats, rows};

use rlvr_objectives::shaping::{ScrlConfig, SubproblemAnswers, segment_token_offsets};
use rlvr_objectives::{
    AdvantageConfig, AdvantageEstimator, Error, ShapingState, StageInput, StagesConfig,
};
use serde_json::Value;

const TOL: f32 = 1e-6;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/scrl_golden.json")).expect("fixture parses")
}

fn answers(case: &Value) -> (Vec<SubproblemAnswers>, Vec<f32>, Vec<Vec<usize>>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for r in case["responses"].as_array().unwrap() {
        out.0.push(SubproblemAnswers {
            intermediate: serde_json::from_value(r["intermediate"].clone()).unwrap(),
            spans: serde_json::from_value(r["spans"].clone()).unwrap(),
        });
        out.1.push(r["reward"].as_f64().unwrap() as f32);
        out.2
            .push(serde_json::from_value(r["bounds"].clone()).unwrap());
    }
    out
}

#[test]
fn token_advantages_match_the_reference() {
    let fx = fixture();
    let cases = fx["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 8);
    let mut moved = 0;
    for (n, c) in cases.iter().enumerate() {
        let (subs, rewards, bounds) = answers(c);
        let stages = StagesConfig {
            scrl: Some(ScrlConfig {
                answer_span_only: c["answer_span_only"].as_bool().unwrap(),
                ..ScrlConfig::default()
            }),
            ..StagesConfig::default()
        };
        let base = AdvantageConfig {
            estimator: serde_json::from_value::<AdvantageEstimator>(c["estimator"].clone())
                .unwrap(),
            std_eps: c["std_eps"].as_f64().unwrap() as f32,
        };
        let input = StageInput {
            subproblems: Some(&subs),
            ..StageInput::new(&rewards, c["group_size"].as_u64().unwrap() as usize)
        };
        let out = stages
            .apply(&input, &base, &mut ShapingState::default())
            .unwrap();
        let want_seq = floats(&c["sequence_advantages"]);
        let want_tok = rows(&c["token_advantages"]);
        for i in 0..rewards.len() {
            assert!(
                (out.advantages[i] - want_seq[i]).abs() < TOL,
                "case {n} response {i}: {} vs {}",
                out.advantages[i],
                want_seq[i]
            );
            let off = segment_token_offsets(&out.segment_offsets[i], &bounds[i]);
            assert_eq!(off.len(), want_tok[i].len(), "case {n} response {i}");
            for (t, (o, w)) in off.iter().zip(&want_tok[i]).enumerate() {
                let got = out.advantages[i] + o;
                assert!(
                    (got - w).abs() < TOL,
                    "case {n} response {i} token {t}: {got} vs {w}"
                );
                moved += usize::from((w - want_seq[i]).abs() > TOL);
            }
        }
        assert!(out.metrics.contains_key("shaping/scrl_offset_abs_mean"));
    }
    assert!(
        moved > 50,
        "the fixture exercises segment credit ({moved} tokens)"
    );
}

/// With every intermediate answer right, SCRL is the objective's estimator on the rewards.
#[test]
fn all_right_intermediates_reduce_to_the_base_estimator() {
    let rewards = [1.0, 0.0, 1.0, 0.0];
    let subs: Vec<SubproblemAnswers> = (0..4)
        .map(|_| SubproblemAnswers {
            intermediate: vec![true],
            spans: vec![Some((0, 2)), Some((3, 5))],
        })
        .collect();
    let stages = StagesConfig {
        scrl: Some(ScrlConfig::default()),
        ..StagesConfig::default()
    };
    let input = StageInput {
        subproblems: Some(&subs),
        ..StageInput::new(&rewards, 4)
    };
    let base = AdvantageConfig::default();
    let out = stages
        .apply(&input, &base, &mut ShapingState::default())
        .unwrap();
    let plain = StagesConfig::default()
        .apply(
            &StageInput::new(&rewards, 4),
            &base,
            &mut ShapingState::default(),
        )
        .unwrap();
    assert_eq!(out.advantages, plain.advantages);
    // Position 1 is all ones (advantage 0), so segment 1 carries −A_{i,L}.
    for (o, a) in out.segment_offsets.iter().zip(&out.advantages) {
        assert_eq!(o.len(), 1);
        assert_eq!((o[0].char_start, o[0].char_end), (0, 2));
        assert!((o[0].offset + a).abs() < 1e-7);
    }
}

#[test]
fn refusals_name_the_problem() {
    let base = AdvantageConfig::default();
    let on = |s: StagesConfig| StagesConfig {
        scrl: Some(ScrlConfig::default()),
        ..s
    };
    for (stages, key) in [
        (
            on(StagesConfig {
                srar: Some(Default::default()),
                ..StagesConfig::default()
            }),
            "scrl",
        ),
        (
            on(StagesConfig {
                avspo: Some(Default::default()),
                ..StagesConfig::default()
            }),
            "scrl",
        ),
        (
            on(StagesConfig {
                tmn: Some(Default::default()),
                ..StagesConfig::default()
            }),
            "stages",
        ),
    ] {
        match stages.validate() {
            Err(Error::InvalidConfig { field, .. }) => assert_eq!(field, key),
            other => panic!("{other:?}"),
        }
    }
    let stages = on(StagesConfig::default());
    let rewards = [1.0, 0.0];
    // Missing input.
    let err = stages
        .apply(
            &StageInput::new(&rewards, 2),
            &base,
            &mut ShapingState::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("subproblems"), "{err}");
    // A group whose responses disagree on L.
    let subs = [
        SubproblemAnswers {
            intermediate: vec![true],
            spans: vec![None, None],
        },
        SubproblemAnswers {
            intermediate: vec![],
            spans: vec![None],
        },
    ];
    let input = StageInput {
        subproblems: Some(&subs),
        ..StageInput::new(&rewards, 2)
    };
    let err = stages
        .apply(&input, &base, &mut ShapingState::default())
        .unwrap_err();
    assert!(matches!(err, Error::BadInput { index: 1, .. }), "{err}");
}
