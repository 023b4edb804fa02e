//! Host-side advantage estimation over per-sequence rewards laid out `[prompts, G]`.

mod grpo;
mod rloo;

use serde::{Deserialize, Serialize};

pub use grpo::{batch_std_advantages, group_mean_advantages, group_std_advantages};
pub use rloo::rloo_advantages;

use crate::error::{Error, Result, ensure};

/// Which advantage estimator turns a group's rewards into per-sequence advantages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdvantageEstimator {
    /// GRPO (arXiv 2402.03300): Â_i = (r_i − mean_g) / (std_g + eps), Bessel-corrected std.
    GroupStd,
    /// Dr. GRPO (arXiv 2503.20783): Â_i = r_i − mean_g (no std scaling).
    GroupMean,
    /// TRL `scale_rewards = "batch"`: Â_i = (r_i − mean_g) / (std_batch + eps).
    BatchStd,
    /// RLOO (arXiv 2402.14740): Â_i = r_i − mean_{j≠i} r_j (leave-one-out baseline).
    Rloo,
}

/// Advantage estimation knobs (spec §1.2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdvantageConfig {
    /// The estimator.
    pub estimator: AdvantageEstimator,
    /// The eps in std + eps (verl 1e-6; TRL 1e-4).
    pub std_eps: f32,
}

impl Default for AdvantageConfig {
    fn default() -> Self {
        Self {
            estimator: AdvantageEstimator::GroupStd,
            std_eps: 1e-6,
        }
    }
}

/// Per-sequence advantages plus the group statistics the trainer logs.
#[derive(Debug, Clone, PartialEq)]
pub struct Advantages {
    /// One advantage per sequence, in the order of the rewards.
    pub values: Vec<f32>,
    /// Groups whose rewards are all equal: their advantages are exactly 0 ("advantage collapse").
    pub zero_groups: usize,
    /// Number of groups.
    pub groups: usize,
}

impl Advantages {
    /// Fraction of groups with zero advantage (`objective/zero_adv_group_frac`).
    pub fn zero_group_frac(&self) -> f64 {
        self.zero_groups as f64 / self.groups.max(1) as f64
    }
}

/// Estimates advantages from rewards laid out row-major `[prompts, group_size]` (spec §1.2).
///
/// Groups whose rewards are all equal get advantage exactly 0 (never NaN) and are counted in
/// [`Advantages::zero_groups`]. `group_size < 2` is rejected: a singleton group has no baseline
/// (verl silently uses the raw reward; TRL returns NaN).
pub fn compute_advantages(
    config: &AdvantageConfig,
    rewards: &[f32],
    group_size: usize,
) -> Result<Advantages> {
    if group_size < 2 {
        return Err(Error::GroupTooSmall { group_size });
    }
    if !rewards.len().is_multiple_of(group_size) {
        return Err(Error::RaggedGroups {
            len: rewards.len(),
            group_size,
        });
    }
    if let Some((index, &value)) = rewards.iter().enumerate().find(|(_, r)| !r.is_finite()) {
        return Err(Error::NonFinite {
            field: "rewards",
            index,
            value,
        });
    }
    ensure(
        config.std_eps.is_finite() && config.std_eps >= 0.0,
        "std_eps",
        config.std_eps,
        "must be >= 0",
    )?;
    let eps = f64::from(config.std_eps);
    let values = match config.estimator {
        AdvantageEstimator::GroupStd => group_std_advantages(rewards, group_size, eps),
        AdvantageEstimator::GroupMean => group_mean_advantages(rewards, group_size),
        AdvantageEstimator::BatchStd => batch_std_advantages(rewards, group_size, eps),
        AdvantageEstimator::Rloo => rloo_advantages(rewards, group_size),
    };
    let zero_groups = rewards.chunks(group_size).filter(|g| all_equal(g)).count();
    Ok(Advantages {
        values,
        zero_groups,
        groups: rewards.len() / group_size,
    })
}

/// Whether every reward of a group is the same value.
pub(crate) fn all_equal(group: &[f32]) -> bool {
    group.iter().all(|&r| r == group[0])
}

/// Mean of a group, in f64.
pub(crate) fn mean(group: &[f32]) -> f64 {
    group.iter().map(|&r| f64::from(r)).sum::<f64>() / group.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adv(estimator: AdvantageEstimator, rewards: &[f32], g: usize) -> Advantages {
        compute_advantages(
            &AdvantageConfig {
                estimator,
                std_eps: 1e-6,
            },
            rewards,
            g,
        )
        .unwrap()
    }

    fn close(got: &[f32], want: &[f32], tol: f32) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < tol, "{got:?} != {want:?}");
        }
    }

    /// Spec §1.2: (1,0,0,1) gives ±0.866 with the unbiased std; (1,0,0,0) gives (1.5,−.5,−.5,−.5).
    #[test]
    fn grpo_matches_spec_examples() {
        let s = 0.5 / (1.0f32 / 3.0).sqrt(); // (1 − 0.5)/sqrt(Σ 0.25·4 / 3)
        close(
            &adv(AdvantageEstimator::GroupStd, &[1., 0., 0., 1.], 4).values,
            &[s, -s, -s, s],
            1e-5,
        );
        close(
            &adv(AdvantageEstimator::GroupStd, &[1., 0., 0., 0.], 4).values,
            &[1.5, -0.5, -0.5, -0.5],
            1e-5,
        );
    }

    /// RLOO: r_i − mean of the others. (1,0,0,0): 1 − 0 = 1 and 0 − 1/3.
    #[test]
    fn rloo_is_leave_one_out() {
        let third = 1.0 / 3.0;
        close(
            &adv(AdvantageEstimator::Rloo, &[1., 0., 0., 0.], 4).values,
            &[1.0, -third, -third, -third],
            1e-6,
        );
    }

    /// All-equal groups give exactly 0 (never NaN) for every estimator and are counted.
    #[test]
    fn all_equal_groups_are_zero_and_counted() {
        let rewards = [0.1, 0.1, 0.1, 1., 0., 1., 3.0, 3.0, 3.0];
        for est in [
            AdvantageEstimator::GroupStd,
            AdvantageEstimator::GroupMean,
            AdvantageEstimator::BatchStd,
            AdvantageEstimator::Rloo,
        ] {
            let a = adv(est, &rewards, 3);
            assert_eq!((a.zero_groups, a.groups), (2, 3), "{est:?}");
            for i in [0, 1, 2, 6, 7, 8] {
                assert_eq!(a.values[i], 0.0, "{est:?}: {:?}", a.values);
            }
            assert!(a.values.iter().all(|v| v.is_finite()));
            assert!((a.zero_group_frac() - 2.0 / 3.0).abs() < 1e-12);
        }
    }

    /// Dr. GRPO equals GRPO when the group std is 1 (and eps = 0): the group (0, √2) has mean
    /// √2/2 and unbiased std sqrt(2·(√2/2)²/1) = 1; so has (5, 5 + √2).
    #[test]
    fn dr_grpo_equals_grpo_when_std_is_one() {
        let r = [
            0.0,
            std::f32::consts::SQRT_2,
            5.0,
            5.0 + std::f32::consts::SQRT_2,
        ];
        let cfg0 = AdvantageConfig {
            estimator: AdvantageEstimator::GroupStd,
            std_eps: 0.0,
        };
        let grpo = compute_advantages(&cfg0, &r, 2).unwrap();
        let dr = adv(AdvantageEstimator::GroupMean, &r, 2);
        close(&grpo.values, &dr.values, 1e-6);
    }

    #[test]
    fn bad_inputs_are_rejected() {
        let cfg = AdvantageConfig::default();
        assert!(matches!(
            compute_advantages(&cfg, &[1.0, 0.0], 1),
            Err(Error::GroupTooSmall { group_size: 1 })
        ));
        assert!(matches!(
            compute_advantages(&cfg, &[1.0, 0.0, 1.0], 2),
            Err(Error::RaggedGroups { .. })
        ));
        let err = compute_advantages(&cfg, &[1.0, f32::NAN], 2).unwrap_err();
        assert!(err.to_string().contains("rewards`[1]"), "{err}");
    }
}
