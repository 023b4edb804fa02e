//! Property tests: clipping and vetoes zero exactly the gradients they should, reductions of one
//! method to another hold, NSR's rescue rate matches its probability, bad input is a typed error.

mod common;

use burn::tensor::Device;
use common::{fixture, fixture_batch, floats, grad_of, small_batch};
use rlvr_objectives::{
    Error, LossContext, ObjectiveConfig, PolicyBatch, compute_advantages, tensor_from_rows,
};

fn cfg(toml_text: &str) -> ObjectiveConfig {
    toml::from_str(toml_text).unwrap()
}

fn ctx() -> LossContext {
    LossContext::new(7, 0)
}

/// DAPO (ε 0.2/0.28): one sequence with Â = +1, one with Â = −1. Ratios e^{Δ}: position 0
/// clipped above (ρ = 1.5 > 1.28, Â > 0), position 1 live; position 0 of the second clipped
/// below (ρ = 0.6 < 0.8, Â < 0), position 1 live (ρ = 1.5, Â < 0 is never clipped above).
#[test]
fn clipped_tokens_get_zero_gradient() {
    let device = Device::flex().autodiff();
    let l = |r: f32| r.ln();
    let logp = [l(1.5) - 1.0, l(1.1) - 1.0, l(0.6) - 1.0, l(1.5) - 1.0];
    let old = [-1.0; 4];
    let (batch, leaf) = small_batch(&logp, &old, &[1.0, -1.0], &[1.0; 4], [2, 2], &device);
    let out = cfg("kind = \"dapo\"").loss(&batch, &ctx()).unwrap();
    let g = grad_of(&out.loss, &leaf);
    assert_eq!(g[0], 0.0, "{g:?}");
    assert_eq!(g[2], 0.0, "{g:?}");
    // Live tokens: d/dℓ (−Â ρ)/4 = −Â ρ / 4.
    assert!((g[1] - (-1.1 / 4.0)).abs() < 1e-6, "{g:?}");
    assert!((g[3] - (1.5 / 4.0)).abs() < 1e-6, "{g:?}");
    assert_eq!(out.metrics["objective/clip_frac_high"], 0.25);
    assert_eq!(out.metrics["objective/clip_frac_low"], 0.25);
}

/// GSPO clips whole sequences: a sequence with s > 1 + ε_high and Â > 0 has zero gradient on
/// every token; a sequence with Â < 0 stays live (spec §1.9 example: log-ratios (0.1, −0.05, 0.02)).
#[test]
fn gspo_clips_whole_sequences() {
    let device = Device::flex().autodiff();
    let logp = [-0.9, -1.05, -0.98, -0.9, -1.05, -0.98];
    let (batch, leaf) = small_batch(&logp, &[-1.0; 6], &[1.0, -1.0], &[1.0; 6], [2, 3], &device);
    let out = cfg("kind = \"gspo\"").loss(&batch, &ctx()).unwrap();
    let g = grad_of(&out.loss, &leaf);
    assert!(g[..3].iter().all(|&x| x == 0.0), "{g:?}");
    let s = (0.07f32 / 3.0).exp(); // 1.0236
    for &x in &g[3..] {
        assert!((x - s / 6.0).abs() < 1e-6, "{g:?}"); // −Â s / (|o| · B)
    }
}

/// NFPO with N = 1 is exactly PPO clip (value and gradient), dual clip included.
#[test]
fn nfpo_with_n_one_equals_ppo_clip() {
    let fx = fixture();
    let device = Device::flex().autodiff();
    let rewards = floats(&fx["rewards"]);
    for extra in [
        "",
        "dual_clip_c = 3.0\n",
        "eps_high = 0.2\naggregation = \"seq_mean_token_mean\"\n",
    ] {
        let ppo = cfg(&format!("kind = \"dapo\"\n{extra}"));
        let nfpo = cfg(&format!("kind = \"nfpo\"\ntrace_len = 1\n{extra}"));
        let adv = compute_advantages(&ppo.advantage_config(), &rewards, 4).unwrap();
        let (b1, l1) = fixture_batch(&fx, &adv.values, &device);
        let (b2, l2) = fixture_batch(&fx, &adv.values, &device);
        let o1 = ppo.loss(&b1, &ctx()).unwrap();
        let o2 = nfpo.loss(&b2, &ctx()).unwrap();
        let (v1, v2) = (
            o1.loss.clone().into_scalar::<f32>(),
            o2.loss.clone().into_scalar::<f32>(),
        );
        assert!((v1 - v2).abs() < 1e-6, "{extra}: {v1} != {v2}");
        for (a, b) in grad_of(&o1.loss, &l1).iter().zip(grad_of(&o2.loss, &l2)) {
            assert!((a - b).abs() < 1e-7, "{extra}: {a} != {b}");
        }
    }
}

/// With every group's std equal to 1 (and eps 0), Dr. GRPO and GRPO give the same advantages
/// and, under the same aggregation, the same loss and gradient.
#[test]
fn dr_grpo_equals_grpo_when_std_is_one() {
    let fx = fixture();
    let device = Device::flex().autodiff();
    // (c + d, c − d, c + d, c − d) has mean c and unbiased std sqrt(4d²/3) = 1 for d = √3/2.
    let s = std::f32::consts::SQRT_2;
    let d = 3f32.sqrt() / 2.0;
    let rewards = [
        1.0 + d,
        1.0 - d,
        1.0 + d,
        1.0 - d,
        s + d,
        s - d,
        s - d,
        s + d,
    ];
    let tail = "aggregation = \"token_mean\"\nkl_coef = 0.0\nstd_eps = 0.0\n";
    let grpo = cfg(&format!("kind = \"grpo\"\n{tail}"));
    let dr = cfg(&format!("kind = \"dr_grpo\"\n{tail}"));
    let a1 = compute_advantages(&grpo.advantage_config(), &rewards, 4).unwrap();
    let a2 = compute_advantages(&dr.advantage_config(), &rewards, 4).unwrap();
    for (x, y) in a1.values.iter().zip(&a2.values) {
        assert!((x - y).abs() < 1e-6, "{:?} vs {:?}", a1.values, a2.values);
    }
    let (b1, l1) = fixture_batch(&fx, &a1.values, &device);
    let (b2, l2) = fixture_batch(&fx, &a2.values, &device);
    let (o1, o2) = (
        grpo.loss(&b1, &ctx()).unwrap(),
        dr.loss(&b2, &ctx()).unwrap(),
    );
    assert!(
        (o1.loss.clone().into_scalar::<f32>() - o2.loss.clone().into_scalar::<f32>()).abs() < 1e-6
    );
    for (a, b) in grad_of(&o1.loss, &l1).iter().zip(grad_of(&o2.loss, &l2)) {
        assert!((a - b).abs() < 1e-6);
    }
}

/// Mu-GRPO: in a Â < 0 response whose ratio first exceeds τ = 2 at position 2, positions ≥ 2 get
/// zero gradient and leave the denominator; the Â > 0 response with the same ratios is untouched.
#[test]
fn vetoed_tokens_get_zero_gradient() {
    let device = Device::flex().autodiff();
    let ratios = [1.1f32, 1.3, 2.5, 1.0, 1.2];
    let logp: Vec<f32> = ratios.iter().chain(&ratios).map(|r| r.ln() - 1.0).collect();
    let (batch, leaf) = small_batch(
        &logp,
        &[-1.0; 10],
        &[-1.0, 1.0],
        &[1.0; 10],
        [2, 5],
        &device,
    );
    let out = cfg("kind = \"mu_grpo\"").loss(&batch, &ctx()).unwrap();
    let g = grad_of(&out.loss, &leaf);
    assert!(g[2..5].iter().all(|&x| x == 0.0), "{g:?}");
    // 7 tokens remain in the token-mean denominator: live Â < 0 tokens have gradient ρ/7.
    assert!(
        (g[0] - 1.1 / 7.0).abs() < 1e-6 && (g[1] - 1.3 / 7.0).abs() < 1e-6,
        "{g:?}"
    );
    // Â > 0: ρ = 2.5 > 1 + ε_high = 2 is clipped, the others live with −ρ/7.
    assert!(
        (g[5] + 1.1 / 7.0).abs() < 1e-6 && g[7] == 0.0 && (g[9] + 1.2 / 7.0).abs() < 1e-6,
        "{g:?}"
    );
    assert_eq!(out.metrics["objective/vetoed_tokens"], 3.0);
}

/// NSR, uniform mode: P(rescue | ρ) = (1 + ε_h)/ρ above (ρ = 2: 0.64) and ρ/(1 − ε_l) below
/// (ρ = 0.6: 0.75), over 10 seeds × 2048 candidates each (binomial std ≈ 0.003).
#[test]
fn nsr_rescue_rate_matches_its_probability() {
    let device = Device::flex().autodiff();
    let dims = [64, 32];
    let n = dims[0] * dims[1];
    let nsr = cfg("kind = \"nsr\"");
    let band = cfg("kind = \"nsr\"\nrescue_mode = \"band\"\nband_width = 0.8\nband_prob = 0.3");
    for (ratio, adv, objective, p) in [
        (2.0f32, 1.0f32, &nsr, 1.28 / 2.0),
        (0.6, -1.0, &nsr, 0.6 / 0.8),
        (2.0, 1.0, &band, 0.3),
    ] {
        let logp = vec![ratio.ln() - 1.0; n];
        let mut rescued = 0.0;
        let mut candidates = 0.0;
        let mut first = None;
        for seed in 0..10u64 {
            let (batch, _) = small_batch(
                &logp,
                &vec![-1.0; n],
                &vec![adv; dims[0]],
                &vec![1.0; n],
                dims,
                &device,
            );
            let out = objective.loss(&batch, &LossContext::new(seed, 0)).unwrap();
            rescued += out.metrics["objective/rescued_tokens"];
            candidates += out.metrics["objective/rescue_candidates"];
            first.get_or_insert(out.metrics["objective/rescued_tokens"]);
        }
        assert_eq!(candidates, 10.0 * n as f64);
        let rate = rescued / candidates;
        assert!(
            (rate - p).abs() < 0.015,
            "ratio {ratio}: rate {rate} vs {p}"
        );
        // Same seed, same draws.
        let (batch, _) = small_batch(
            &logp,
            &vec![-1.0; n],
            &vec![adv; dims[0]],
            &vec![1.0; n],
            dims,
            &device,
        );
        let again = objective.loss(&batch, &LossContext::new(0, 0)).unwrap();
        assert_eq!(Some(again.metrics["objective/rescued_tokens"]), first);
    }
}

/// All-equal groups: zero advantages, a finite loss and zero policy gradient, for every kind.
#[test]
fn all_equal_groups_give_zero_gradient_never_nan() {
    let fx = fixture();
    let device = Device::flex().autodiff();
    for kind in [
        "grpo", "dapo", "dr_grpo", "gspo", "rloo", "nfpo", "owpo", "mu_grpo", "nsr",
    ] {
        let objective = cfg(&format!("kind = \"{kind}\"\nkl_coef = 0.0"));
        let adv = compute_advantages(&objective.advantage_config(), &[0.5; 8], 4).unwrap();
        assert_eq!((adv.zero_groups, adv.groups), (2, 2));
        let (batch, leaf) = fixture_batch(&fx, &adv.values, &device);
        let out = objective
            .loss(
                &batch,
                &ctx().with_zero_adv_group_frac(adv.zero_group_frac()),
            )
            .unwrap();
        assert!(out.loss.clone().into_scalar::<f32>().is_finite(), "{kind}");
        assert!(
            grad_of(&out.loss, &leaf).iter().all(|&g| g == 0.0),
            "{kind}"
        );
        assert_eq!(out.metrics["objective/zero_adv_group_frac"], 1.0);
        assert!(
            out.metrics.values().all(|v| v.is_finite()),
            "{kind}: {:?}",
            out.metrics
        );
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let device = Device::flex().autodiff();
    let t = |v: &[f32], d| tensor_from_rows(v, d, &device);
    let err = PolicyBatch::new(
        t(&[0.0; 4], [2, 2]),
        t(&[0.0; 6], [2, 3]),
        None,
        None,
        t(&[0.0; 4], [2, 2]),
        t(&[1.0; 4], [2, 2]),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::ShapeMismatch {
                name: "old_logp",
                ..
            }
        ),
        "{err}"
    );
    let (batch, _) = small_batch(
        &[-1.0; 4],
        &[-1.0; 4],
        &[1.0, -1.0],
        &[1.0; 4],
        [2, 2],
        &device,
    );
    let err = cfg("kind = \"owpo\"").loss(&batch, &ctx()).unwrap_err();
    assert!(err.to_string().contains("ref_logp"), "{err}");
    let err = cfg("kind = \"grpo\"").loss(&batch, &ctx()).unwrap_err();
    assert!(err.to_string().contains("kl_coef"), "{err}");
    let err = cfg("kind = \"dapo\"\ntis = \"truncate\"")
        .loss(&batch, &ctx())
        .unwrap_err();
    assert!(err.to_string().contains("sampler_logp"), "{err}");
    let err = cfg("kind = \"dr_grpo\"\nnorm_len = 0")
        .loss(&batch, &ctx())
        .unwrap_err();
    assert!(err.to_string().contains("norm_len"), "{err}");
    assert!(
        cfg("kind = \"dr_grpo\"\nnorm_len = 0")
            .loss(&batch, &ctx().with_max_response_len(8))
            .is_ok()
    );
    let err = cfg("kind = \"gspo\"\ndual_clip_c = 3.0")
        .loss(&batch, &ctx())
        .unwrap_err();
    assert!(err.to_string().contains("dual_clip_c"), "{err}");
}
