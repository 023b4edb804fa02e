//! KL-to-reference estimators k1, k2, k3 and the straight-through k3 (spec §1.4).

use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

/// Log-ratios are clamped to ±20 before `exp` (verl `kl_penalty`), so k3 stays finite.
pub const KL_LOG_RATIO_CLAMP: f32 = 20.0;
/// verl clamps the k3 value to ±10 (spec §1.4).
pub const K3_VALUE_CLAMP: f32 = 10.0;

/// Per-token estimator of KL(π_θ ‖ π_ref) (Schulman, "Approximating KL divergence", 2020;
/// spec §1.4). With x = ℓ^ref − ℓ^θ:
///
/// | variant | value | note |
/// |---|---|---|
/// | `k1` | ℓ^θ − ℓ^ref = −x | unbiased value, biased gradient |
/// | `k2` | ½ (ℓ^θ − ℓ^ref)² | gradient is the unbiased reverse-KL gradient |
/// | `k3` | eˣ − x − 1 | ≥ 0; GRPO (arXiv 2402.03300, Eq. 4); x clamped to ±20, value to ±10 |
/// | `k3_st` | value of k3, gradient of k2 | straight-through |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KlEstimator {
    /// ℓ^θ − ℓ^ref.
    K1,
    /// ½ (ℓ^θ − ℓ^ref)².
    K2,
    /// e^x − x − 1 with x = ℓ^ref − ℓ^θ (verl `low_var_kl`).
    K3,
    /// Value of k3, gradient of k2.
    K3St,
}

/// Per-token KL estimate `[B, T]`, with gradient through `logp` (spec §1.4).
pub fn kl_per_token(logp: Tensor<2>, ref_logp: Tensor<2>, estimator: KlEstimator) -> Tensor<2> {
    let diff = logp - ref_logp; // ℓ^θ − ℓ^ref = −x
    let k3 = |d: Tensor<2>| {
        let x = d.neg().clamp(-KL_LOG_RATIO_CLAMP, KL_LOG_RATIO_CLAMP);
        (x.clone().exp() - x - 1.0).clamp(-K3_VALUE_CLAMP, K3_VALUE_CLAMP)
    };
    match estimator {
        KlEstimator::K1 => diff,
        KlEstimator::K2 => diff.square() * 0.5,
        KlEstimator::K3 => k3(diff),
        KlEstimator::K3St => {
            let k2 = diff.clone().square() * 0.5;
            let k3v = k3(diff.detach());
            k2.clone() + (k3v - k2.detach())
        }
    }
}

/// Per-sequence KL Σ_t m·kl (detached, on the host), for putting β·KL into the reward
/// (`kl_in_reward`, spec §1.4 "placement"): pass the result to
/// [`crate::ObjectiveConfig::shape_rewards`].
pub fn sequence_kl(
    logp: &Tensor<2>,
    ref_logp: &Tensor<2>,
    mask: &Tensor<2>,
    estimator: KlEstimator,
) -> Vec<f32> {
    let kl = kl_per_token(logp.clone().detach(), ref_logp.clone().detach(), estimator);
    (kl * mask.clone())
        .sum_dim(1)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use burn::tensor::Device;

    use super::*;
    use crate::batch::tensor_from_rows;

    /// Spec §1.4: ℓ^θ = −1, ℓ^ref = −1.2 gives k3 = e^−0.2 + 0.2 − 1 = 0.018731 (k1 = 0.2,
    /// k2 = 0.02); ℓ^ref = −0.5 gives k3 = e^0.5 − 0.5 − 1 = 0.148721.
    #[test]
    fn estimators_match_hand_values() {
        let device = Device::flex();
        let logp = tensor_from_rows(&[-1.0, -1.0], [1, 2], &device);
        let refp = tensor_from_rows(&[-1.2, -0.5], [1, 2], &device);
        let get = |e| {
            kl_per_token(logp.clone(), refp.clone(), e)
                .into_data()
                .try_to_vec::<f32>()
                .unwrap()
        };
        let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5);
        assert!(close(&get(KlEstimator::K1), &[0.2, -0.5]));
        assert!(close(&get(KlEstimator::K2), &[0.02, 0.125]));
        assert!(
            close(&get(KlEstimator::K3), &[0.018731, 0.148721]),
            "{:?}",
            get(KlEstimator::K3)
        );
        assert!(close(&get(KlEstimator::K3St), &[0.018731, 0.148721]));
    }
}
