//! DelTA's token coefficients and its self-normalized loss against
//! `scripts/reference_delta.py` (numpy float64, count matrices instead of the Rust hash map) to
//! 1e-6, with the simplest cases checked by hand; c ≡ 1 is exactly the plain loss; refusals.

mod common;

use burn::tensor::Device;
use common::{floats, grad_of, rows, small_batch};
use rlvr_objectives::shaping::{DeltaConfig, DeltaScope, delta};
use rlvr_objectives::{
    AdvantageConfig, LossContext, ObjectiveConfig, ShapingState, StageInput, StagesConfig,
    tensor_from_rows,
};
use serde_json::Value;

const TOL: f64 = 1e-6;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/delta_golden.json")).expect("fixture parses")
}

fn ids(v: &Value) -> Vec<Vec<u32>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as u32)
                .collect()
        })
        .collect()
}

fn close_rows(got: &[Vec<f32>], want: &[Vec<f32>], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.len(), w.len(), "{what}: {got:?} vs {want:?}");
        for (a, b) in g.iter().zip(w) {
            assert!(
                (f64::from(*a) - f64::from(*b)).abs() < TOL,
                "{what}: {got:?} vs {want:?}"
            );
        }
    }
}

fn config(c: &Value) -> DeltaConfig {
    DeltaConfig {
        scope: if c["scope"] == "batch" {
            DeltaScope::Batch
        } else {
            DeltaScope::Group
        },
        kappa: c["kappa"].as_f64().unwrap(),
        c_min: c["c_min"].as_f64().unwrap(),
        c_max: c["c_max"].as_f64().unwrap(),
        eps: c["eps"].as_f64().unwrap(),
    }
}

/// Hand-checked first: `clip_low` has y⁺ = nineteen 1s and one 2, y⁻ = (2), A = ±1:
/// P⁺(2) = 1/20, P⁻(2) = 1, q(2) = 0.05/1.05 = 0.047619, so the positive response's 2 gets
/// 2q = 0.0952 → c_min = 0.1 and its 1s (q = 1) get 2; the negative 2 gets 2(1 − q) = 1.904762.
/// `batch_scope`: P⁺ = (⅓, ⅓, ⅙, ⅙) on ids 1–4, P⁻ = (½, ½) on ids 1, 3: q(1) = 0.4, q(3) = 0.25,
/// so (0.8, 2 | 0.5, 2 | 1.2, 1.5 | 1, 1, 1), while the same rows per group are one-sided (all 1).
#[test]
fn coefficients_match_the_reference() {
    let fx = fixture();
    let cases = fx["cases"].as_array().unwrap();
    let by_name = |n: &str| cases.iter().find(|c| c["name"] == n).unwrap();
    let c = by_name("clip_low");
    let (got, s) = delta(
        &ids(&c["tokens"]),
        &floats(&c["adv"]),
        2,
        &DeltaConfig::default(),
    );
    assert_eq!(got[0][..19], [2.0; 19]);
    assert!((got[0][19] - 0.1).abs() < 1e-7);
    assert!((f64::from(got[1][0]) - 2.0 * (1.0 - 0.05 / 1.05)).abs() < 1e-6);
    assert!((s.clip_low_frac - 1.0 / 21.0).abs() < 1e-12);
    assert_eq!(s.scored_pools, 1);
    let c = by_name("batch_scope");
    let hand = [
        vec![0.8, 2.0],
        vec![0.5, 2.0],
        vec![1.2, 1.5],
        vec![1.0, 1.0, 1.0],
    ];
    let (got, _) = delta(&ids(&c["tokens"]), &floats(&c["adv"]), 2, &config(c));
    close_rows(&got, &hand, "batch_scope by hand");

    for c in cases {
        let name = c["name"].as_str().unwrap();
        let g = c["g"].as_u64().unwrap() as usize;
        let (got, s) = delta(&ids(&c["tokens"]), &floats(&c["adv"]), g, &config(c));
        close_rows(&got, &rows(&c["expected"]), name);
        let all: Vec<f32> = got.iter().flatten().copied().collect();
        let max = all.iter().copied().fold(f32::MIN, f32::max);
        assert!((s.coef_max - f64::from(max)).abs() < 1e-6, "{name}");
    }
    // κ = 2 reaches the upper clip: (2q)² = 4 → 3.
    let (_, s) = delta(
        &ids(&by_name("clip_high_kappa2")["tokens"]),
        &floats(&by_name("clip_high_kappa2")["adv"]),
        4,
        &config(by_name("clip_high_kappa2")),
    );
    assert!(s.clip_high_frac > 0.0 && s.coef_max == 3.0, "{s:?}");
}

/// Through `StagesConfig::apply`: GRPO's advantages from the rewards, then DelTA on them, as
/// `token_weights`, with its metrics; without `[delta]` the weights are empty.
#[test]
fn the_stage_matches_the_reference_through_apply() {
    let fx = fixture();
    let st = &fx["stage"];
    let rewards = floats(&st["rewards"]);
    let tokens = ids(&st["tokens"]);
    let g = st["g"].as_u64().unwrap() as usize;
    let stages: StagesConfig = toml::from_str("[delta]").unwrap();
    let input = StageInput {
        response_tokens: Some(&tokens),
        ..StageInput::new(&rewards, g)
    };
    let mut state = ShapingState::default();
    let out = stages
        .apply(&input, &AdvantageConfig::default(), &mut state)
        .unwrap();
    for (a, b) in out.advantages.iter().zip(floats(&st["advantages"])) {
        assert!((a - b).abs() < 1e-6);
    }
    close_rows(&out.token_weights, &rows(&st["expected"]), "stage");
    assert_eq!(out.metrics["shaping/delta_scored_pools"], 2.0);
    for k in ["delta_coef_mean", "delta_coef_min", "delta_coef_max"] {
        assert!(out.metrics.contains_key(&format!("shaping/{k}")), "{k}");
    }
    // Missing ids are a typed error naming the field; off gives no weights.
    let err = stages
        .apply(
            &StageInput::new(&rewards, g),
            &AdvantageConfig::default(),
            &mut state,
        )
        .unwrap_err();
    assert!(err.to_string().contains("response_tokens"), "{err}");
    let off = StagesConfig::default()
        .apply(&input, &AdvantageConfig::default(), &mut state)
        .unwrap();
    assert!(off.token_weights.iter().all(Vec::is_empty));
}

/// The self-normalized surrogate's value and gradient w.r.t. logp, for both modes, with the
/// reference's coefficients and with c ≡ 1; c ≡ 1 equals the loss without coefficients bit for
/// bit.
#[test]
fn the_weighted_loss_and_gradient_match_the_reference() {
    let fx = fixture();
    let l = &fx["loss"];
    let dims = [
        l["B"].as_u64().unwrap() as usize,
        l["T"].as_u64().unwrap() as usize,
    ];
    let device = Device::flex().autodiff();
    let (logp, old, adv, mask) = (
        floats(&l["logp"]),
        floats(&l["old_logp"]),
        floats(&l["advantages"]),
        floats(&l["mask"]),
    );
    for case in l["cases"].as_array().unwrap() {
        let mode = case["mode"].as_str().unwrap();
        let what = format!("{mode}/{}", case["coef_name"]);
        let cfg: ObjectiveConfig = toml::from_str(&format!(
            "kind = \"dapo\"\neps_low = 0.2\neps_high = 0.28\naggregation = \"{mode}\""
        ))
        .unwrap();
        let ctx = LossContext::new(0, 0);
        let (batch, leaf) = small_batch(&logp, &old, &adv, &mask, dims, &device);
        let coef = tensor_from_rows(&floats(&case["coef"]), dims, &device);
        let out = cfg
            .loss(&batch.with_token_coef(coef).unwrap(), &ctx)
            .unwrap();
        let loss = out.loss.clone().into_scalar::<f32>();
        let want = case["loss"].as_f64().unwrap();
        assert!(
            (f64::from(loss) - want).abs() < 1e-6,
            "{what}: {loss} vs {want}"
        );
        let grad = grad_of(&out.loss, &leaf);
        for (i, (g, w)) in grad.iter().zip(floats(&case["grad"])).enumerate() {
            assert!((g - w).abs() < 1e-6, "{what}: grad[{i}] {g} vs {w}");
        }
        assert!(grad.iter().any(|g| g.abs() > 1e-3), "{what}: zero gradient");
        if case["coef_name"] == "ones" {
            let (plain, leaf) = small_batch(&logp, &old, &adv, &mask, dims, &device);
            let p = cfg.loss(&plain, &ctx).unwrap();
            assert_eq!(p.loss.clone().into_scalar::<f32>(), loss, "{what}");
            assert_eq!(grad_of(&p.loss, &leaf), grad, "{what}");
        }
    }
}

/// Coefficients with a token-sum aggregation are refused, naming the key; DelTA with OPPO and
/// out-of-range knobs are refused when the stages validate; the hidden-state proxy is not a key.
#[test]
fn refusals_name_the_key() {
    let device = Device::flex().autodiff();
    let dims = [1, 2];
    let (batch, _) = small_batch(
        &[-1.0, -1.0],
        &[-1.0, -1.0],
        &[1.0],
        &[1.0, 1.0],
        dims,
        &device,
    );
    let coef = tensor_from_rows(&[1.0, 2.0], dims, &device);
    let cfg: ObjectiveConfig =
        toml::from_str("kind = \"grpo\"\nkl_coef = 0\naggregation = \"seq_mean_token_sum\"")
            .unwrap();
    let err = cfg
        .loss(
            &batch.with_token_coef(coef).unwrap(),
            &LossContext::new(0, 0),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("aggregation"), "{err}");
    let bad = tensor_from_rows(&[1.0, 2.0, 3.0], [1, 3], &device);
    let (batch, _) = small_batch(
        &[-1.0, -1.0],
        &[-1.0, -1.0],
        &[1.0],
        &[1.0, 1.0],
        dims,
        &device,
    );
    assert!(batch.with_token_coef(bad).is_err());
    for (text, key) in [
        ("[delta]\n[oppo]", "delta"),
        ("[delta]\nkappa = -1", "delta.kappa"),
        ("[delta]\nc_min = 2", "delta.c_min"),
    ] {
        let s: StagesConfig = toml::from_str(text).unwrap();
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains(key), "{text}: {err}");
    }
    let err = toml::from_str::<StagesConfig>("[delta]\nproxy = \"hidden_state\"").unwrap_err();
    assert!(err.to_string().contains("proxy"), "{err}");
}
