//! TMN-Reweight: task-level mean normalization with difficulty-adaptive weights.
//!
//! # Paper
//! "GoLongRL: Capability-Oriented Long Context Reinforcement Learning with Multitask Alignment",
//! [arXiv 2605.19577](https://arxiv.org/abs/2605.19577); code xiaoxuanNLP/GoLongRL
//! (`compute_tmn_grpo_outcome_advantage`). Specification: `methods-extra.md` §5.
//!
//! # Formula (exact, from the code)
//! Per prompt u: μ_u, unbiased σ²_u (a single rollout: μ_u = 0, σ²_u = 1). Per task m:
//! scale_m = sqrt(mean_{u∈m} σ²_u). A_i = (r_i − μ_u)/(scale_m + ε). Difficulty weights:
//! M_m = mean_{u∈m} μ_u, μ̃_u = α μ_u + (1 − α) M_m (single rollout: M_m), p_u = share of
//! rollouts with r_i > μ̃_u, w⁺ = exp(γ(0.5 − p_u)), w⁻ = exp(γ(p_u − 0.5));
//! A_i ← A_i w⁺ if r_i > μ_u else A_i w⁻.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::stats::{mean, unbiased_var};
use crate::error::{Error, Result, ensure};

/// TMN-Reweight knobs (spec §5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TmnConfig {
    /// Divide by the task scale (`norm_adv_by_task_scale`, default true); false = r − μ_u.
    pub task_scale: bool,
    /// Apply the difficulty weights (`difficulty_reweight`, default true).
    pub difficulty_reweight: bool,
    /// α of the smoothed mean (`difficulty_smooth_alpha`; default 0.8 as in the paper's script,
    /// the code default is 0.5).
    pub smooth_alpha: f64,
    /// γ of the exponential weights (default 1.0).
    pub gamma: f64,
}

impl Default for TmnConfig {
    fn default() -> Self {
        Self {
            task_scale: true,
            difficulty_reweight: true,
            smooth_alpha: 0.8,
            gamma: 1.0,
        }
    }
}

impl TmnConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            (0.0..=1.0).contains(&self.smooth_alpha),
            "tmn.smooth_alpha",
            self.smooth_alpha,
            "must be in [0, 1]",
        )?;
        ensure(
            self.gamma.is_finite(),
            "tmn.gamma",
            self.gamma,
            "must be finite",
        )
    }
}

/// TMN advantages (before weights), the per-sequence difficulty weights and the mean pass rate.
#[derive(Debug, Clone, PartialEq)]
pub struct TmnOutput {
    /// (r_i − μ_u)/(scale_m + ε) per sequence.
    pub advantages: Vec<f32>,
    /// w⁺ or w⁻ per sequence (1 without `difficulty_reweight`).
    pub weights: Vec<f32>,
    /// Mean of p_u over prompts (`difficulty/mean_pass_rate`; 0 without reweighting).
    pub mean_pass_rate: f64,
}

/// TMN-Reweight over `[prompts, group_size]` rewards; `task_ids` has one entry per sequence and
/// must be constant within a group.
pub fn tmn(
    rewards: &[f32],
    task_ids: &[String],
    group_size: usize,
    cfg: &TmnConfig,
    eps: f64,
) -> Result<TmnOutput> {
    let groups: Vec<&[f32]> = rewards.chunks(group_size).collect();
    let mut task_of = Vec::with_capacity(groups.len());
    for (g, ids) in task_ids.chunks(group_size).enumerate() {
        if let Some(i) = ids.iter().position(|t| *t != ids[0]) {
            return Err(Error::BadInput {
                field: "task_ids",
                index: g * group_size + i,
                reason: format!("task `{}` differs from its group's `{}`", ids[i], ids[0]),
            });
        }
        task_of.push(ids[0].as_str());
    }
    // Per prompt: μ_u and σ²_u (single rollout: 0 and 1).
    let stats: Vec<(f64, f64)> = groups
        .iter()
        .map(|g| {
            let g64: Vec<f64> = g.iter().map(|&x| f64::from(x)).collect();
            match unbiased_var(&g64, mean(g)) {
                Some(v) => (mean(g), v),
                None => (0.0, 1.0),
            }
        })
        .collect();
    // Per task: scale_m and M_m.
    let mut per_task: BTreeMap<&str, (f64, f64, usize)> = BTreeMap::new();
    for (t, &(mu, var)) in task_of.iter().zip(&stats) {
        let e = per_task.entry(t).or_default();
        e.0 += var;
        e.1 += mu;
        e.2 += 1;
    }
    let (mut advantages, mut weights) = (Vec::new(), Vec::new());
    let mut pass_sum = 0.0;
    for ((g, &(mu, _)), t) in groups.iter().zip(&stats).zip(&task_of) {
        let (var_sum, mu_sum, n) = per_task[t];
        let scale = (var_sum / n as f64).sqrt();
        let task_mean = mu_sum / n as f64;
        let smoothed = if g.len() < 2 {
            task_mean
        } else {
            cfg.smooth_alpha * mu + (1.0 - cfg.smooth_alpha) * task_mean
        };
        let p = g.iter().filter(|&&r| f64::from(r) > smoothed).count() as f64 / g.len() as f64;
        pass_sum += p;
        let w_pos = (cfg.gamma * (0.5 - p)).exp();
        let w_neg = (cfg.gamma * (p - 0.5)).exp();
        for &r in *g {
            let centred = f64::from(r) - mu;
            let a = if cfg.task_scale {
                centred / (scale + eps)
            } else {
                centred
            };
            advantages.push(a as f32);
            let w = if !cfg.difficulty_reweight {
                1.0
            } else if f64::from(r) > mu {
                w_pos
            } else {
                w_neg
            };
            weights.push(w as f32);
        }
    }
    let mean_pass_rate = if cfg.difficulty_reweight {
        pass_sum / groups.len().max(1) as f64
    } else {
        0.0
    };
    Ok(TmnOutput {
        advantages,
        weights,
        mean_pass_rate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Spec §5 worked example (α = 0.8, γ = 1): u1 = [1,0,0,0], u2 = [1,1,1,0] → scale 0.5;
    /// u1: 1.5·e^0.25 = 1.926, −0.5·e^−0.25 = −0.389; u2 mirrored.
    #[test]
    fn spec_worked_example() {
        let r = [1., 0., 0., 0., 1., 1., 1., 0.];
        let out = tmn(&r, &ids(&["a"; 8]), 4, &TmnConfig::default(), 1e-6).unwrap();
        let a: Vec<f32> = out
            .advantages
            .iter()
            .zip(&out.weights)
            .map(|(a, w)| a * w)
            .collect();
        let want = [1.926, -0.389, -0.389, -0.389, 0.389, 0.389, 0.389, -1.926];
        for (g, w) in a.iter().zip(want) {
            assert!((g - w).abs() < 1e-3, "{a:?}");
        }
    }

    /// Single-rollout prompts: μ_u = 0, σ² = 1; two tasks keep separate scales.
    #[test]
    fn single_rollout_and_two_tasks() {
        let cfg = TmnConfig {
            difficulty_reweight: false,
            ..TmnConfig::default()
        };
        let out = tmn(&[0.5, 2.0], &ids(&["a", "b"]), 1, &cfg, 0.0).unwrap();
        assert_eq!(out.advantages, [0.5, 2.0]);
        let err = tmn(&[1.0, 0.0], &ids(&["a", "b"]), 2, &cfg, 0.0).unwrap_err();
        assert!(err.to_string().contains("task_ids`[1]"), "{err}");
    }
}
