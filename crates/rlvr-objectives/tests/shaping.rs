//! Golden values and edge cases of the advantage-shaping stages, against
//! `scripts/reference_shaping.py` (numpy float64, written from the spec formulas), to 1e-5.

mod common;

use common::floats;

use std::collections::BTreeSet;

use rlvr_objectives::shaping::{
    AvspoConfig, DggConfig, DggState, EdasConfig, RubricSpec, StepJudgment, StepOffset, TmnConfig,
    token_offsets,
};
use rlvr_objectives::{
    AdvantageConfig, AdvantageEstimator, Error, ShapingState, StageInput, StageOutput, StagesConfig,
};
use serde_json::Value;

const TOL: f64 = 1e-5;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/shaping_golden.json")).expect("fixture parses")
}

/// The fixture's input arrays, owned, so that a `StageInput` can borrow them.
struct Owned {
    rewards: Vec<f32>,
    group_size: usize,
    passed: Vec<bool>,
    answers: Vec<Option<String>>,
    logp: Vec<f32>,
    texts: Vec<String>,
    references: Vec<Option<String>>,
    tasks: Vec<String>,
    scores: Vec<Vec<f32>>,
    rubrics: Vec<RubricSpec>,
    judgments: Vec<Vec<StepJudgment>>,
}

impl Owned {
    fn from_json(v: &Value) -> Self {
        let de = |k: &str| v[k].clone();
        Self {
            rewards: floats(&v["rewards"]),
            group_size: v["group_size"].as_u64().unwrap() as usize,
            passed: serde_json::from_value(de("passed")).unwrap(),
            answers: serde_json::from_value(de("answers")).unwrap(),
            logp: floats(&v["seq_logp_mean"]),
            texts: serde_json::from_value(de("texts")).unwrap(),
            references: serde_json::from_value(de("references")).unwrap(),
            tasks: serde_json::from_value(de("task_ids")).unwrap(),
            scores: serde_json::from_value(de("rubric_scores")).unwrap(),
            rubrics: serde_json::from_value(de("rubrics")).unwrap(),
            judgments: serde_json::from_value(de("judgments")).unwrap(),
        }
    }

    fn input(&self) -> StageInput<'_> {
        StageInput {
            rewards: &self.rewards,
            group_size: self.group_size,
            passed: &self.passed,
            extracted_answers: &self.answers,
            seq_logp_mean: &self.logp,
            response_texts: &self.texts,
            reference_solutions: &self.references,
            task_ids: &self.tasks,
            rubric_scores: Some(&self.scores),
            rubrics: Some(&self.rubrics),
            step_judgments: Some(&self.judgments),
            cepo_delta: None,
            token_logp: None,
            oracle_logp: None,
            hint_logp: None,
            run_steps: 0,
            response_tokens: None,
            episodes: None,
            subproblems: None,
        }
    }
}

fn close(name: &str, what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{name}: {what} length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(*g) - f64::from(*w)).abs() < TOL,
            "{name}: {what}[{i}] = {g}, reference {w}\n got {got:?}\nwant {want:?}"
        );
    }
}

fn check(name: &str, out: &StageOutput, want: &Value) {
    close(name, "rewards", &out.rewards, &floats(&want["rewards"]));
    close(
        name,
        "advantages",
        &out.advantages,
        &floats(&want["advantages"]),
    );
    close(name, "weights", &out.weights, &floats(&want["weights"]));
    let metrics = want["metrics"].as_object().unwrap();
    let keys: BTreeSet<&str> = metrics.keys().map(String::as_str).collect();
    let got: BTreeSet<&str> = out.metrics.keys().map(String::as_str).collect();
    assert_eq!(got, keys, "{name}: metric names");
    for (k, v) in metrics {
        let (g, w) = (out.metrics[k], v.as_f64().unwrap());
        assert!((g - w).abs() < TOL, "{name}: {k} = {g}, reference {w}");
    }
    let offsets = want["step_offsets"].as_array().unwrap();
    assert_eq!(out.step_offsets.len(), offsets.len(), "{name}: offsets");
    for (i, (g, w)) in out.step_offsets.iter().zip(offsets).enumerate() {
        let w = w.as_array().unwrap();
        assert_eq!(
            g.len(),
            w.len(),
            "{name}: offsets of sequence {i}: {g:?} vs {w:?}"
        );
        // Both sides list the spans in increasing step key order.
        for (o, e) in g.iter().zip(w) {
            let e = e.as_array().unwrap();
            assert_eq!(
                o.char_start as u64,
                e[0].as_u64().unwrap(),
                "{name}: start [{i}]"
            );
            assert_eq!(
                o.char_end as u64,
                e[1].as_u64().unwrap(),
                "{name}: end [{i}]"
            );
            let off = e[2].as_f64().unwrap();
            assert!(
                (f64::from(o.offset) - off).abs() < TOL,
                "{name}: offset [{i}] {o:?} vs {off}"
            );
        }
    }
}

#[test]
fn every_case_matches_the_reference() {
    let fx = fixture();
    let cases = fx["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    let mut stages_seen = BTreeSet::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let cfg: StagesConfig = serde_json::from_value(case["config"].clone()).unwrap();
        for key in case["config"].as_object().unwrap().keys() {
            stages_seen.insert(key.clone());
        }
        let estimator = match case["estimator"].as_str().unwrap() {
            "group_std" => AdvantageEstimator::GroupStd,
            "group_mean" => AdvantageEstimator::GroupMean,
            other => panic!("{other}"),
        };
        let base = AdvantageConfig {
            estimator,
            std_eps: 1e-6,
        };
        let mut state = ShapingState::default();
        for (s, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            let owned = Owned::from_json(&fx["inputs"][step["input"].as_str().unwrap()]);
            let out = cfg.apply(&owned.input(), &base, &mut state).unwrap();
            check(&format!("{name} step {s}"), &out, &step["expected"]);
        }
    }
    let want: BTreeSet<String> = ["avspo", "curve_rl", "edas", "lampo", "pow3r", "srar", "tmn"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(stages_seen, want, "every per-step stage has a golden case");
}

#[test]
fn dgg_matches_the_reference_sequence() {
    let fx = fixture();
    let cfg: DggConfig = serde_json::from_value(fx["dgg"]["config"].clone()).unwrap();
    let stages = StagesConfig {
        dgg: Some(cfg),
        ..StagesConfig::default()
    };
    let mut state = ShapingState::default();
    let gates: Vec<bool> = serde_json::from_value(fx["dgg"]["gates"].clone()).unwrap();
    for (i, (call, want)) in fx["dgg"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&gates)
        .enumerate()
    {
        let (norm, epoch) = (
            call[0].as_f64().unwrap(),
            call[1].as_u64().unwrap() as usize,
        );
        assert_eq!(
            stages.gate_update(&mut state, norm, epoch),
            *want,
            "call {i}"
        );
    }
    assert!(gates.iter().any(|g| !g), "the sequence exercises the gate");
    assert_eq!(
        state.dgg.gate_events,
        gates.iter().filter(|g| !**g).count() as u64
    );
    // Off: always apply.
    let mut fresh = ShapingState::default();
    assert!(StagesConfig::default().gate_update(&mut fresh, 1e9, 3));
    assert_eq!(StagesConfig::default().max_epochs(2), 2);
    assert_eq!(stages.max_epochs(2), 4);
    let _ = DggState::default();
}

/// All-equal groups: no stage produces NaN; without AVSPO they get advantage exactly 0.
#[test]
fn all_equal_groups_stay_finite_and_zero() {
    let rewards = [1.0f32; 8];
    let passed = [true; 8];
    let answers = vec![Some("3".to_string()); 8];
    let tasks = vec!["t".to_string(); 8];
    let input = StageInput {
        passed: &passed,
        extracted_answers: &answers,
        task_ids: &tasks,
        ..StageInput::new(&rewards, 4)
    };
    let base = AdvantageConfig::default();
    for toml_text in [
        "",
        "[edas]",
        "[tmn]",
        "[curve_rl]",
        "[curve_rl]\nadvantage = \"base\"",
    ] {
        let cfg: StagesConfig = toml::from_str(toml_text).unwrap();
        let out = cfg
            .apply(&input, &base, &mut ShapingState::default())
            .unwrap();
        assert!(
            out.weighted_advantages().iter().all(|&a| a == 0.0),
            "{toml_text}: {out:?}"
        );
        assert_eq!(out.metrics["shaping/acr"], 1.0);
        assert_eq!(out.metrics["shaping/acr_all_correct"], 1.0);
    }
    let avspo: StagesConfig = toml::from_str("[avspo]").unwrap();
    let out = avspo
        .apply(&input, &base, &mut ShapingState::default())
        .unwrap();
    assert!(out.advantages.iter().all(|&a| a > 0.0 && a.is_finite()));
}

/// Ties in the CurveRL quantiles: prompts with the same pass rate share a bin and a weight.
#[test]
fn tied_pass_rates_share_a_weight() {
    let rewards = [1., 0., 0., 0., 0., 1., 0., 0., 1., 1., 0., 0.];
    let cfg: StagesConfig = toml::from_str("[curve_rl]").unwrap();
    let out = cfg
        .apply(
            &StageInput::new(&rewards, 4),
            &AdvantageConfig::default(),
            &mut ShapingState::default(),
        )
        .unwrap();
    // Pool {1/4, 1/4, 1/2} over 5 bins: bin 1 mass 2/3 → 1; bin 2 mass 1/3, cdf 1 → 1/3.
    assert_eq!(&out.weights[..8], &[1.0; 8]);
    assert!((out.weights[8] - 1.0 / 3.0).abs() < 1e-7);
}

/// Configs: TOML round trip, unknown keys, two estimators, bad ranges.
#[test]
fn config_is_strict_and_round_trips() {
    let text = "[acr]\nvar_threshold = 0.02\n[avspo]\nconstruction = \"fixed\"\n[edas]\nmode = \
                \"redistribute\"\n[dgg]\nthreshold = 0.1\n";
    let cfg: StagesConfig = toml::from_str(text).unwrap();
    cfg.validate().unwrap();
    let back: StagesConfig = toml::from_str(&toml::to_string(&cfg).unwrap()).unwrap();
    assert_eq!(back, cfg);
    assert_eq!(
        cfg.edas,
        Some(EdasConfig {
            mode: rlvr_objectives::shaping::EdasMode::Redistribute,
            ..EdasConfig::default()
        })
    );
    let err = toml::from_str::<StagesConfig>("[edas]\nalpah = 1.0")
        .unwrap_err()
        .to_string();
    assert!(err.contains("alpah"), "{err}");
    let two: StagesConfig = toml::from_str("[tmn]\n[lampo]").unwrap();
    let err = two.validate().unwrap_err().to_string();
    assert!(err.contains("tmn + lampo"), "{err}");
    let bad = StagesConfig {
        avspo: Some(AvspoConfig {
            alpha: -1.0,
            ..AvspoConfig::default()
        }),
        ..StagesConfig::default()
    };
    assert!(
        bad.validate()
            .unwrap_err()
            .to_string()
            .contains("avspo.alpha")
    );
    let bad = StagesConfig {
        tmn: Some(TmnConfig {
            smooth_alpha: 2.0,
            ..TmnConfig::default()
        }),
        ..StagesConfig::default()
    };
    assert!(
        bad.validate()
            .unwrap_err()
            .to_string()
            .contains("tmn.smooth_alpha")
    );
}

/// Missing or ragged inputs are typed errors that name the field.
#[test]
fn missing_inputs_are_named() {
    let rewards = [1.0f32, 0.0, 0.0, 1.0];
    let base = AdvantageConfig::default();
    let run = |toml_text: &str, input: &StageInput| {
        let cfg: StagesConfig = toml::from_str(toml_text).unwrap();
        cfg.apply(input, &base, &mut ShapingState::default())
            .unwrap_err()
    };
    let bare = StageInput::new(&rewards, 2);
    for (stage, field) in [
        ("[edas]", "passed"),
        ("[tmn]", "task_ids"),
        ("[lampo]", "response_texts"),
        ("[lampo]\nrouge_beta = 0.0", "seq_logp_mean"),
        ("[pow3r]", "rubric_scores"),
        ("[srar]", "response_texts"),
    ] {
        let err = run(stage, &bare);
        assert!(
            matches!(err, Error::MissingTensor { name, .. } if name == field),
            "{stage}: {err}"
        );
    }
    let short = [true];
    let err = run(
        "[edas]",
        &StageInput {
            passed: &short,
            ..bare
        },
    );
    assert!(matches!(
        err,
        Error::LengthMismatch {
            name: "passed",
            expected: 4,
            got: 1
        }
    ));
    assert!(matches!(
        run("", &StageInput::new(&rewards, 3)),
        Error::RaggedGroups { .. }
    ));
    let nan = [1.0, f32::NAN];
    assert!(
        run("", &StageInput::new(&nan, 2))
            .to_string()
            .contains("rewards`[1]")
    );
}

/// Single-sample groups: the base GRPO estimator refuses them, TMN handles them (μ = 0, σ² = 1).
#[test]
fn single_sample_groups() {
    let rewards = [0.5f32, 1.0];
    let base = AdvantageConfig::default();
    let none = StagesConfig::default();
    assert!(matches!(
        none.apply(
            &StageInput::new(&rewards, 1),
            &base,
            &mut ShapingState::default()
        ),
        Err(Error::GroupTooSmall { group_size: 1 })
    ));
    let tasks = vec!["a".to_string(); 2];
    let tmn: StagesConfig = toml::from_str("[tmn]\ndifficulty_reweight = false").unwrap();
    let out = tmn
        .apply(
            &StageInput {
                task_ids: &tasks,
                ..StageInput::new(&rewards, 1)
            },
            &base,
            &mut ShapingState::default(),
        )
        .unwrap();
    // One task, σ² = 1 for both prompts → scale 1; A = r − 0.
    for (a, r) in out.advantages.iter().zip(rewards) {
        assert!((a - r).abs() < 1e-5);
    }
}

/// Empty rubrics: POW3R keeps the verifier reward; SRaR with no judged items adds no offsets.
#[test]
fn empty_rubrics_change_nothing() {
    let rewards = [1.0f32, 0.0, 0.0, 1.0];
    let scores = vec![Vec::new(); 4];
    let judgments = vec![Vec::new(); 4];
    let texts = vec!["### Step 1: x \\boxed{1}".to_string(); 4];
    let input = StageInput {
        rubric_scores: Some(&scores),
        step_judgments: Some(&judgments),
        response_texts: &texts,
        ..StageInput::new(&rewards, 2)
    };
    let cfg: StagesConfig = toml::from_str("[pow3r]\n[srar]\nformat_weight = 0.0").unwrap();
    let out = cfg
        .apply(
            &input,
            &AdvantageConfig::default(),
            &mut ShapingState::default(),
        )
        .unwrap();
    assert_eq!(out.rewards, rewards);
    assert_eq!(out.metrics["shaping/pow3r_empty_rubric_groups"], 2.0);
    assert!(out.step_offsets.iter().all(Vec::is_empty));
    assert_eq!(token_offsets(&[], 10, 3), [0.0; 3]);
    let whole = [StepOffset {
        char_start: 0,
        char_end: 7,
        offset: -1.0,
    }];
    assert_eq!(token_offsets(&whole, 7, 3), [-1.0; 3]);
}

/// The state is serde: a resumed run continues exactly (CurveRL pool, ACR EMA, step).
#[test]
fn state_round_trips_through_json() {
    let fx = fixture();
    let owned = Owned::from_json(&fx["inputs"]["a"]);
    let cfg: StagesConfig = toml::from_str("[curve_rl]\n[avspo]").unwrap();
    let base = AdvantageConfig::default();
    let mut state = ShapingState::default();
    cfg.apply(&owned.input(), &base, &mut state).unwrap();
    let mut resumed: ShapingState =
        serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
    let a = cfg.apply(&owned.input(), &base, &mut state).unwrap();
    let b = cfg.apply(&owned.input(), &base, &mut resumed).unwrap();
    assert_eq!(a, b);
    assert_eq!(state, resumed);
}

/// RELEX (offline) against numpy's SVD of the delta matrix: singular values, explained
/// variance and the extrapolated tensor, for rank 1, rank 2 and a trailing window.
#[test]
fn relex_matches_numpy_svd() {
    use rlvr_objectives::shaping::{RelexConfig, relex_fit};
    let fx = fixture();
    let rx = &fx["relex"];
    let base = floats(&rx["base"]);
    let cks: Vec<Vec<f32>> = rx["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(floats)
        .collect();
    for case in rx["cases"].as_array().unwrap() {
        let cfg = RelexConfig {
            rank: case["rank"].as_u64().unwrap() as usize,
            window: case["window"].as_u64().unwrap() as usize,
        };
        let fit = relex_fit(&base, &cks, &cfg).unwrap();
        let sv = case["singular_values"].as_array().unwrap();
        for (g, w) in fit.singular_values.iter().zip(sv) {
            assert!(
                (g - w.as_f64().unwrap()).abs() < 1e-9,
                "{cfg:?}: σ {g} vs {w}"
            );
        }
        let ev = case["explained_variance"].as_f64().unwrap();
        assert!((fit.explained_variance - ev).abs() < 1e-9, "{cfg:?}");
        let p = fit.predict(
            &base,
            case["last_step"].as_f64().unwrap(),
            case["target_step"].as_f64().unwrap(),
        );
        close(
            &format!("relex {cfg:?}"),
            "prediction",
            &p,
            &floats(&case["prediction"]),
        );
    }
}
