//! DPO: the offline preference objective of G2D's third stage.
//!
//! # Paper
//! Rafailov et al., "Direct Preference Optimization", arXiv 2305.18290, eq. 7; used by G2D
//! (Verma, Ravindran, "How Much Online RL is Enough?", arXiv 2605.21266) on a static preference
//! set built from GRPO rollouts. Specification: `methods-extra.md` §12.
//!
//! # Formula
//! With sequence log-probs (sums over response tokens) of the policy π and the frozen reference
//! π_ref (G2D: the warm-up checkpoint π_K), z = β[(log π(y⁺) − log π_ref(y⁺)) − (log π(y⁻) −
//! log π_ref(y⁻))] and L = mean_pairs −log σ(z). ∂L/∂log π(y⁺) = −β σ(−z)/P and
//! ∂L/∂log π(y⁻) = +β σ(−z)/P.

use burn::tensor::Tensor;
use burn::tensor::activation::log_sigmoid;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, ensure};
use crate::loss::{LossOutput, Metrics};

/// DPO knobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DpoConfig {
    /// β, the inverse temperature of the implicit reward (default 0.1, as G2D).
    pub beta: f64,
}

impl Default for DpoConfig {
    fn default() -> Self {
        Self { beta: 0.1 }
    }
}

impl DpoConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.beta.is_finite() && self.beta > 0.0,
            "dpo.beta",
            self.beta,
            "must be a positive number",
        )
    }
}

/// Sequence log-probs `[B]` of masked per-token log-probs `[B, T]`: Σ_t mask · logp.
pub fn sequence_logp(logp: Tensor<2>, mask: Tensor<2>) -> Tensor<1> {
    (logp * mask).sum_dim(1).squeeze_dim::<1>(1)
}

/// The DPO loss over `P` pairs (Rafailov et al. eq. 7) and its `dpo/...` metrics: `dpo/margin`
/// (mean z), `dpo/accuracy` (share with z > 0),
/// `dpo/ref_margin` and `dpo/ref_margin_std` (log π_ref(y⁺) − log π_ref(y⁻), G2D's diagnostic)
/// and `dpo/ref_prefers_chosen` (the share where the reference already ranks y⁺ first: a high
/// share means uninformative pairs).
pub fn dpo_loss(
    policy_chosen: Tensor<1>,
    policy_rejected: Tensor<1>,
    ref_chosen: &[f32],
    ref_rejected: &[f32],
    cfg: &DpoConfig,
) -> Result<LossOutput> {
    cfg.validate()?;
    let p = policy_chosen.dims()[0];
    for (name, got) in [
        ("policy_rejected", policy_rejected.dims()[0]),
        ("ref_chosen", ref_chosen.len()),
        ("ref_rejected", ref_rejected.len()),
    ] {
        if got != p {
            return Err(Error::LengthMismatch {
                name,
                expected: p,
                got,
            });
        }
    }
    ensure(p > 0, "pairs", p, "DPO needs at least one pair")?;
    for (name, v) in [("ref_chosen", ref_chosen), ("ref_rejected", ref_rejected)] {
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(Error::NonFinite {
                field: name,
                index: i,
                value: v[i],
            });
        }
    }
    let device = policy_chosen.device();
    let ref_margin: Vec<f32> = ref_chosen
        .iter()
        .zip(ref_rejected)
        .map(|(c, r)| c - r)
        .collect();
    let ref_t = Tensor::<1>::from_floats(ref_margin.as_slice(), &device);
    let z = (policy_chosen - policy_rejected - ref_t).mul_scalar(cfg.beta);
    let loss = log_sigmoid(z.clone()).mean().neg();
    let zs: Vec<f32> = z
        .detach()
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("f32 data");
    let n = p as f64;
    let mean = |v: &[f32]| v.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let rm = mean(&ref_margin);
    let mut m = Metrics::new();
    m.insert("dpo/margin".into(), mean(&zs));
    m.insert(
        "dpo/accuracy".into(),
        zs.iter().filter(|&&x| x > 0.0).count() as f64 / n,
    );
    m.insert("dpo/ref_margin".into(), rm);
    m.insert(
        "dpo/ref_margin_std".into(),
        (ref_margin
            .iter()
            .map(|&x| (f64::from(x) - rm).powi(2))
            .sum::<f64>()
            / n)
            .sqrt(),
    );
    m.insert(
        "dpo/ref_prefers_chosen".into(),
        ref_margin.iter().filter(|&&x| x > 0.0).count() as f64 / n,
    );
    Ok(LossOutput { loss, metrics: m })
}
