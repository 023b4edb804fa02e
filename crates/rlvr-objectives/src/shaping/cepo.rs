//! CEPO: per-token weights from a teacher told the right answer against one told a wrong one.
//!
//! # Paper
//! Heakl et al., "CEPO: RLVR Self-Distillation using Contrastive Evidence Policy Optimization",
//! [arXiv 2605.19436](https://arxiv.org/abs/2605.19436); code ahmedheakl/CEPO
//! (`core_algos.py::apply_cepo_weighting`). Specification: `methods-extra.md` §15.
//!
//! # Formula (exact, from the code)
//! The teacher is the current policy (no gradient) scoring the response after
//! `prompt ⊕ r± ⊕`: r⁺ = " " + the gold answer, r⁻ = the answer of the group's worst rejected
//! rollout (r⁻ = r⁺ in all-correct groups). With δ_t = ℓ⁺_t − ℓ⁻_t (stop-gradient),
//! w_t = exp(sgn(A_i) δ_t), w̃_t = clip(w_t, 1 − ε_w, 1 + ε_w) and
//! Â_{i,t} = A_i · [(1 − λ) + λ w̃_t]. λ decays linearly, λ = max(0, λ_init (1 − step/warmup)),
//! or stays at λ_init. All-correct groups have δ = 0, w̃ = 1: CEPO leaves GRPO's advantage.
//! The trainer builds r± and runs the two conditioned passes; this module is the arithmetic.

use serde::{Deserialize, Serialize};

use crate::error::{Result, ensure};

/// How λ changes over the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CepoSchedule {
    /// λ = max(0, λ_init (1 − step / warmup_steps)): CEPO fades out after `warmup_steps`.
    Linear,
    /// λ = λ_init at every step.
    Constant,
}

/// CEPO knobs (spec §15; the code's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CepoConfig {
    /// λ_init, the weight of the contrastive term at step 0 (default 1.0; the paper's run 0.5).
    pub lambda_init: f64,
    /// Steps over which λ decays to 0 under the linear schedule (default 100).
    pub warmup_steps: u64,
    /// ε_w, the clip of the token weight to [1 − ε_w, 1 + ε_w] (default 0.2).
    pub eps_w: f64,
    /// Linear decay (default) or constant.
    pub schedule: CepoSchedule,
}

impl Default for CepoConfig {
    fn default() -> Self {
        Self {
            lambda_init: 1.0,
            warmup_steps: 100,
            eps_w: 0.2,
            schedule: CepoSchedule::Linear,
        }
    }
}

impl CepoConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            (0.0..=1.0).contains(&self.lambda_init),
            "cepo.lambda_init",
            self.lambda_init,
            "must be in [0, 1] (the token coefficient (1 - lambda) + lambda w stays positive)",
        )?;
        ensure(
            self.schedule == CepoSchedule::Constant || self.warmup_steps >= 1,
            "cepo.warmup_steps",
            self.warmup_steps,
            "must be >= 1 with schedule = \"linear\"",
        )?;
        ensure(
            self.eps_w.is_finite() && (0.0..1.0).contains(&self.eps_w),
            "cepo.eps_w",
            self.eps_w,
            "must be in [0, 1)",
        )
    }

    /// λ at `step` (0-based): the schedule's value, never below 0.
    pub fn lambda(&self, step: u64) -> f64 {
        match self.schedule {
            CepoSchedule::Constant => self.lambda_init,
            CepoSchedule::Linear => {
                (self.lambda_init * (1.0 - step as f64 / self.warmup_steps as f64)).max(0.0)
            }
        }
    }
}

/// w̃_t = clip(exp(sgn(A) δ_t), 1 − ε_w, 1 + ε_w) for every token of one response (w̃ = 1 when
/// A = 0).
pub fn cepo_weights(delta: &[f32], advantage: f32, eps_w: f64) -> Vec<f64> {
    let sign = if advantage > 0.0 {
        1.0
    } else if advantage < 0.0 {
        -1.0
    } else {
        0.0
    };
    delta
        .iter()
        .map(|&d| (sign * f64::from(d)).exp().clamp(1.0 - eps_w, 1.0 + eps_w))
        .collect()
}

/// CEPO's per-token advantages of one response, Â_t = A · [(1 − λ) + λ w̃_t].
pub fn cepo_token_advantages(delta: &[f32], advantage: f32, lambda: f64, eps_w: f64) -> Vec<f32> {
    let a = f64::from(advantage);
    cepo_weights(delta, advantage, eps_w)
        .into_iter()
        .map(|w| (a * ((1.0 - lambda) + lambda * w)) as f32)
        .collect()
}

/// The same as offsets to add to the sequence advantage: Â_t − A = A · λ (w̃_t − 1).
pub fn cepo_offsets(delta: &[f32], advantage: f32, lambda: f64, eps_w: f64) -> Vec<f32> {
    let a = f64::from(advantage);
    cepo_weights(delta, advantage, eps_w)
        .into_iter()
        .map(|w| (a * lambda * (w - 1.0)) as f32)
        .collect()
}

/// CEPO's diagnostics (spec §15 item 7) over responses with a non-zero advantage: positive
/// rollouts (A > 0) want δ > 0, negative ones (A < 0) want δ < 0.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CepoStats {
    /// Mean δ over the tokens of positive rollouts (0 when there are none).
    pub delta_pos_mean: f64,
    /// Mean δ over the tokens of negative rollouts (0 when there are none).
    pub delta_neg_mean: f64,
    /// Share of positive rollouts' tokens with δ < 0 (pushed the wrong way).
    pub wrong_pos_frac: f64,
    /// Share of negative rollouts' tokens with δ > 0 (pushed the wrong way).
    pub wrong_neg_frac: f64,
    /// Mean |A| over all tokens before CEPO.
    pub adv_abs_before: f64,
    /// Mean |Â_t| over all tokens after CEPO.
    pub adv_abs_after: f64,
}

/// Per-sequence token offsets (`A_i λ (w̃_t − 1)`) and the diagnostics, for `deltas[i]` the δ of
/// sequence i (one per response token) and `advantages[i]` its sequence advantage.
pub fn cepo(
    deltas: &[Vec<f32>],
    advantages: &[f32],
    lambda: f64,
    cfg: &CepoConfig,
) -> (Vec<Vec<f32>>, CepoStats) {
    let mut s = CepoStats::default();
    let (mut n_pos, mut n_neg, mut n_all) = (0usize, 0usize, 0usize);
    let mut offsets = Vec::with_capacity(deltas.len());
    for (delta, &a) in deltas.iter().zip(advantages) {
        let off = cepo_offsets(delta, a, lambda, cfg.eps_w);
        for (&d, &o) in delta.iter().zip(&off) {
            let d = f64::from(d);
            if a > 0.0 {
                s.delta_pos_mean += d;
                s.wrong_pos_frac += f64::from(u8::from(d < 0.0));
                n_pos += 1;
            } else if a < 0.0 {
                s.delta_neg_mean += d;
                s.wrong_neg_frac += f64::from(u8::from(d > 0.0));
                n_neg += 1;
            }
            s.adv_abs_before += f64::from(a.abs());
            s.adv_abs_after += (f64::from(a) + f64::from(o)).abs();
            n_all += 1;
        }
        offsets.push(off);
    }
    let div = |x: &mut f64, n: usize| *x /= n.max(1) as f64;
    div(&mut s.delta_pos_mean, n_pos);
    div(&mut s.wrong_pos_frac, n_pos);
    div(&mut s.delta_neg_mean, n_neg);
    div(&mut s.wrong_neg_frac, n_neg);
    div(&mut s.adv_abs_before, n_all);
    div(&mut s.adv_abs_after, n_all);
    (offsets, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// λ_init = 1, warmup 4: 1, 0.75, 0.5, 0.25, 0, 0 (never negative); constant stays.
    #[test]
    fn the_lambda_schedule_decays_to_zero_and_stops() {
        let cfg = CepoConfig {
            warmup_steps: 4,
            ..CepoConfig::default()
        };
        let l: Vec<f64> = (0..6).map(|s| cfg.lambda(s)).collect();
        assert_eq!(l, [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]);
        let c = CepoConfig {
            lambda_init: 0.5,
            schedule: CepoSchedule::Constant,
            ..cfg
        };
        assert_eq!(c.lambda(1000), 0.5);
    }

    /// A = 0 gives w̃ = 1 and Â = 0 whatever δ; λ = 0 gives Â = A (GRPO).
    #[test]
    fn zero_advantage_and_zero_lambda_are_grpo() {
        assert_eq!(cepo_weights(&[3.0, -3.0], 0.0, 0.2), [1.0, 1.0]);
        assert_eq!(
            cepo_token_advantages(&[3.0, -3.0], 0.0, 1.0, 0.2),
            [0.0, 0.0]
        );
        assert_eq!(
            cepo_token_advantages(&[3.0, -3.0], 1.5, 0.0, 0.2),
            [1.5, 1.5]
        );
    }
}
