//! ACR (advantage collapse rate) and AVSPO's virtual samples for collapsed groups.
//!
//! # Paper
//! He et al., "Advantage Collapse in Group Relative Policy Optimization: Diagnosis and
//! Mitigation", [arXiv 2605.21125](https://arxiv.org/abs/2605.21125) (ICML 2026); project page
//! qingyonghu.github.io/AVSPO. Specification: `methods-extra.md` §2.
//!
//! # Formula
//! ACR: z_g = 1[Var_g(r) < τ_var] (population variance), ACR = mean_g z_g, with an EMA
//! (β = 0.9). AVSPO **\[PROPOSED reconstruction]**: for a collapsed group, V virtual rewards
//! v_j of weight α enter the normalization statistics only:
//! μ' = (Σ_i r_i + α Σ_j v_j)/(G + αV), σ'² = (Σ_i (r_i − μ')² + α Σ_j (v_j − μ')²)/(G + αV),
//! A_i = (r_i − μ')/(σ' + ε) for the G real rollouts (no gradient terms for virtual samples).

use serde::{Deserialize, Serialize};

use super::stats::{mean, pop_var};
use crate::error::{Result, ensure};
use crate::rng::SplitMix64;

/// ACR knobs; the metric is always computed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AcrConfig {
    /// τ_var: a group is collapsed when its population reward variance is below this
    /// (default 1e-2, spec §2; with binary rewards any mixed group has variance ≥ (1/G)(1 − 1/G)).
    pub var_threshold: f32,
    /// β of the ACR EMA used by AVSPO's gate (default 0.9, spec §2).
    pub ema_beta: f64,
}

impl Default for AcrConfig {
    fn default() -> Self {
        Self {
            var_threshold: 1e-2,
            ema_beta: 0.9,
        }
    }
}

impl AcrConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.var_threshold.is_finite() && self.var_threshold >= 0.0,
            "acr.var_threshold",
            self.var_threshold,
            "must be >= 0",
        )?;
        ensure(
            (0.0..1.0).contains(&self.ema_beta),
            "acr.ema_beta",
            self.ema_beta,
            "must be in [0, 1)",
        )
    }
}

/// One step's collapse statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct AcrStats {
    /// Per group: whether it collapsed (variance below the threshold).
    pub collapsed: Vec<bool>,
    /// Fraction of collapsed groups.
    pub acr: f64,
    /// Fraction of groups that collapsed with every rollout passing (`None` without verdicts).
    pub all_correct: Option<f64>,
    /// Fraction of groups that collapsed with no rollout passing (`None` without verdicts).
    pub all_wrong: Option<f64>,
}

/// ACR over `[prompts, group_size]` rewards (spec §2): z_g = 1[Var_g(r) < τ_var]. `passed` (one
/// per sequence, or empty) splits collapsed groups into all-correct and all-wrong.
pub fn advantage_collapse(
    rewards: &[f32],
    group_size: usize,
    passed: &[bool],
    cfg: &AcrConfig,
) -> AcrStats {
    let collapsed: Vec<bool> = rewards
        .chunks(group_size)
        .map(|g| pop_var(g, mean(g)) < f64::from(cfg.var_threshold))
        .collect();
    let groups = collapsed.len().max(1) as f64;
    let acr = collapsed.iter().filter(|&&c| c).count() as f64 / groups;
    let (all_correct, all_wrong) = if passed.len() == rewards.len() {
        let split = |want: bool| {
            passed
                .chunks(group_size)
                .zip(&collapsed)
                .filter(|(p, c)| **c && p.iter().all(|&x| x == want))
                .count() as f64
                / groups
        };
        (Some(split(true)), Some(split(false)))
    } else {
        (None, None)
    };
    AcrStats {
        collapsed,
        acr,
        all_correct,
        all_wrong,
    }
}

/// How AVSPO builds its virtual rewards (the paper's ablation, spec §2 item 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VirtualSamples {
    /// v_j = r_min + (j − 0.5)(r_max − r_min)/V: midpoints of V equal strata (the paper's choice).
    Stratified,
    /// Every virtual reward equals `fixed_value` (ablation "fixed partial r = 0.5").
    Fixed,
    /// V seeded uniform draws in [r_min, r_max] (ablation "random uniform"); seed = `seed` + step.
    Uniform,
    /// Stratified values whose weight decays as α·2^(−step/half_life) **\[PROPOSED]** (ablation
    /// "exponential decay"; the paper's form was not available).
    ExpDecay,
}

/// AVSPO knobs (spec §2; README defaults where sourced, the rest **\[PROPOSED]**).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AvspoConfig {
    /// α, the weight of each virtual sample in the statistics (`virtual_sample_alpha`, 0.5).
    pub alpha: f64,
    /// V, the number of virtual rewards (default 8 = the README's G) \[PROPOSED].
    pub virtual_samples: usize,
    /// How the virtual rewards are built (default `stratified`, the paper's best).
    pub construction: VirtualSamples,
    /// Lower end of the reward range for the strata (default 0, binary rewards).
    pub reward_min: f64,
    /// Upper end of the reward range for the strata (default 1, binary rewards).
    pub reward_max: f64,
    /// The value of every virtual reward in `fixed` mode (default 0.5).
    pub fixed_value: f64,
    /// Half-life in steps of the weight in `exp_decay` mode (default 100) \[PROPOSED].
    pub half_life: f64,
    /// Seed of the `uniform` draws (default 0).
    pub seed: u64,
    /// Intervene only when the ACR EMA exceeds the threshold τ_t (default true, the paper's
    /// "adaptive"); false = always intervene on collapsed groups.
    pub adaptive: bool,
    /// τ_0 (`acr_threshold_init`, 0.5).
    pub threshold_init: f64,
    /// τ_min reached at `threshold_decay_steps` (default 0.3) \[PROPOSED].
    pub threshold_min: f64,
    /// Steps over which τ decays linearly from τ_0 to τ_min (default 500, the README's run
    /// length; 0 = constant τ_0) \[PROPOSED].
    pub threshold_decay_steps: usize,
    /// Scale α by min(1, ACR_EMA/τ_t) (default false) \[PROPOSED option of the spec].
    pub scale_alpha: bool,
}

impl Default for AvspoConfig {
    fn default() -> Self {
        Self {
            alpha: 0.5,
            virtual_samples: 8,
            construction: VirtualSamples::Stratified,
            reward_min: 0.0,
            reward_max: 1.0,
            fixed_value: 0.5,
            half_life: 100.0,
            seed: 0,
            adaptive: true,
            threshold_init: 0.5,
            threshold_min: 0.3,
            threshold_decay_steps: 500,
            scale_alpha: false,
        }
    }
}

impl AvspoConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.alpha.is_finite() && self.alpha > 0.0,
            "avspo.alpha",
            self.alpha,
            "must be > 0",
        )?;
        ensure(
            self.virtual_samples > 0,
            "avspo.virtual_samples",
            self.virtual_samples,
            "must be >= 1",
        )?;
        ensure(
            self.reward_min.is_finite()
                && self.reward_max.is_finite()
                && self.reward_min <= self.reward_max,
            "avspo.reward_max",
            self.reward_max,
            "must be finite and >= reward_min",
        )?;
        ensure(
            self.fixed_value.is_finite(),
            "avspo.fixed_value",
            self.fixed_value,
            "must be finite",
        )?;
        ensure(
            self.half_life.is_finite() && self.half_life > 0.0,
            "avspo.half_life",
            self.half_life,
            "must be > 0",
        )?;
        ensure(
            self.threshold_min.is_finite()
                && self.threshold_init.is_finite()
                && (0.0..=1.0).contains(&self.threshold_min)
                && (0.0..=1.0).contains(&self.threshold_init),
            "avspo.threshold_init",
            self.threshold_init,
            "threshold_init and threshold_min must be in [0, 1]",
        )
    }

    /// τ_t: linear decay from `threshold_init` to `threshold_min` over `threshold_decay_steps`.
    pub fn threshold(&self, step: u64) -> f64 {
        if self.threshold_decay_steps == 0 {
            return self.threshold_init;
        }
        let frac = (step as f64 / self.threshold_decay_steps as f64).min(1.0);
        self.threshold_init + (self.threshold_min - self.threshold_init) * frac
    }

    /// The virtual rewards and the weight of each at `step`.
    pub fn virtual_rewards(&self, step: u64) -> (Vec<f64>, f64) {
        let v = self.virtual_samples;
        let (lo, hi) = (self.reward_min, self.reward_max);
        let stratified = || -> Vec<f64> {
            (0..v)
                .map(|j| lo + (j as f64 + 0.5) * (hi - lo) / v as f64)
                .collect()
        };
        match self.construction {
            VirtualSamples::Stratified => (stratified(), self.alpha),
            VirtualSamples::Fixed => (vec![self.fixed_value; v], self.alpha),
            VirtualSamples::Uniform => {
                let mut rng = SplitMix64::new(self.seed.wrapping_add(step));
                let draws = (0..v)
                    .map(|_| lo + f64::from(rng.next_f32()) * (hi - lo))
                    .collect();
                (draws, self.alpha)
            }
            VirtualSamples::ExpDecay => (
                stratified(),
                self.alpha * 0.5f64.powf(step as f64 / self.half_life),
            ),
        }
    }
}

/// AVSPO advantages of one group's real rollouts with virtual rewards `virt` of weight `alpha`
/// in the statistics only (spec §2, step 2):
/// A_i = (r_i − μ')/(σ' + ε), μ' and σ' over the real and the weighted virtual samples.
pub fn avspo_group(rewards: &[f32], virt: &[f64], alpha: f64, eps: f64) -> Vec<f32> {
    let total = rewards.len() as f64 + alpha * virt.len() as f64;
    let real_sum: f64 = rewards.iter().map(|&r| f64::from(r)).sum();
    let mu = (real_sum + alpha * virt.iter().sum::<f64>()) / total;
    let ss = rewards
        .iter()
        .map(|&r| (f64::from(r) - mu).powi(2))
        .sum::<f64>()
        + alpha * virt.iter().map(|&v| (v - mu).powi(2)).sum::<f64>();
    let sigma = (ss / total).sqrt();
    rewards
        .iter()
        .map(|&r| ((f64::from(r) - mu) / (sigma + eps)) as f32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec §2 worked example (G = V = 8, α = 0.5, stratified): all-correct gives
    /// μ' = (8 + 0.5·4)/12 = 0.8333, σ'² = (8·(1/6)² + 0.5·Σ(v − 5/6)²)/12 → σ' = 0.2879 and
    /// A = (1/6)/0.2879 = +0.5789; all-wrong gives −0.5789.
    #[test]
    fn worked_example_all_correct_and_all_wrong() {
        let cfg = AvspoConfig::default();
        let (v, a) = cfg.virtual_rewards(0);
        assert_eq!(v.len(), 8);
        assert!((v[0] - 1.0 / 16.0).abs() < 1e-12 && (v[7] - 15.0 / 16.0).abs() < 1e-12);
        let up = avspo_group(&[1.0; 8], &v, a, 1e-6);
        let down = avspo_group(&[0.0; 8], &v, a, 1e-6);
        for (u, d) in up.iter().zip(&down) {
            assert!((u - 0.5789).abs() < 1e-4, "{up:?}");
            assert!((d + 0.5789).abs() < 1e-4, "{down:?}");
        }
    }

    /// Binary mixed groups of 4 have variance ≥ 3/16 > 1e-2; equal ones are collapsed.
    #[test]
    fn acr_counts_equal_groups_and_splits_them() {
        let r = [1., 1., 1., 1., 0., 1., 0., 0., 0., 0., 0., 0.];
        let p: Vec<bool> = r.iter().map(|&x| x > 0.5).collect();
        let s = advantage_collapse(&r, 4, &p, &AcrConfig::default());
        assert_eq!(s.collapsed, [true, false, true]);
        assert!((s.acr - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.all_correct, Some(1.0 / 3.0));
        assert_eq!(s.all_wrong, Some(1.0 / 3.0));
        let no_verdicts = advantage_collapse(&r, 4, &[], &AcrConfig::default());
        assert_eq!(no_verdicts.all_correct, None);
    }

    #[test]
    fn threshold_decays_linearly_then_holds() {
        let c = AvspoConfig::default();
        assert_eq!(c.threshold(0), 0.5);
        assert!((c.threshold(250) - 0.4).abs() < 1e-12);
        assert!((c.threshold(10_000) - 0.3).abs() < 1e-12);
    }

    #[test]
    fn uniform_draws_are_seeded_and_in_range() {
        let c = AvspoConfig {
            construction: VirtualSamples::Uniform,
            ..AvspoConfig::default()
        };
        let (a, _) = c.virtual_rewards(3);
        assert_eq!(a, c.virtual_rewards(3).0);
        assert_ne!(a, c.virtual_rewards(4).0);
        assert!(a.iter().all(|v| (0.0..1.0).contains(v)));
        let e = AvspoConfig {
            construction: VirtualSamples::ExpDecay,
            ..AvspoConfig::default()
        };
        assert!((e.virtual_rewards(100).1 - 0.25).abs() < 1e-12);
    }
}
