//! ReBel: belief-consistency rewards and belief-aware grouping for multi-turn agents.
//!
//! # Paper
//! Tang, Li, Huang, Xiao, Zhou, "Rewarding Beliefs, Not Actions: Consistency-Guided Credit
//! Assignment for Long-Horizon Agents", arXiv 2605.20061 (code: Fateyetian/Rebel,
//! `verl/trainer/ppo/rebel/core_rebel.py`). Specification: `methods-extra.md` §19.
//!
//! # Estimator (the spec's "exact, from code" part)
//! For trajectory `i` of a prompt's group with policy steps `t = 0..T−1`:
//! - the task advantage `A_task,i = R_i − mean_group(R)` (mode `mean_norm`: no std division),
//!   one value per trajectory;
//! - the per-step belief reward `r_bel[t] = α·r_state + β·r_task + δ·r_format`;
//! - discounted returns `R_env[t] = γ^{T−1−t}·R_i` and `R_bel[t] = r_bel[t] + γ·R_bel[t+1]`;
//! - steps grouped by (prompt, belief key) across the group's trajectories; each return is
//!   centred inside its belief group (`N(x) = x − mean`), a singleton group gives 0, and
//!   `A_step[t] = N(R_env)[t] + N(R_bel)[t]`;
//! - `A_total = A_task + w_step·A_step[t]`, broadcast over the step's tokens.
//!
//! The stage replaces the estimator: the sequence advantage is `A_task`, and
//! `w_step·A_step[t]` is a token offset on the tokens of step `t` (observation tokens between
//! steps get 0 and are masked out of the loss anyway).
//!
//! **[PROPOSED]**: the prediction term `γ·r_pred` is not built (the bundled game has no
//! prediction field), and `r_format` is +1 for a step whose belief parses, −1 otherwise (the
//! reference code's +0.01 / −0.05 are on a success reward of 10). The environment decides what
//! `r_state`, `r_task` and the key are (the trainer's guess-the-number game: the believed
//! interval against the tracker's, the step's action against the game's phase, the believed
//! interval as key). The belief-weight schedule and per-task reweighting are not built.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, ensure};

/// `[stages.rebel]` knobs (spec §19 defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RebelConfig {
    /// γ, the discount of both step returns (default 0.95).
    pub discount: f32,
    /// w_step, the weight of the step advantage on the step's tokens (default 0.5).
    pub step_weight: f32,
    /// α, the weight of `r_state` in the belief reward (default 0.3).
    pub state_weight: f32,
    /// β, the weight of `r_task` (default 0.4).
    pub task_weight: f32,
    /// δ, the weight of `r_format` (default 0.1).
    pub format_weight: f32,
}

impl Default for RebelConfig {
    fn default() -> Self {
        Self {
            discount: 0.95,
            step_weight: 0.5,
            state_weight: 0.3,
            task_weight: 0.4,
            format_weight: 0.1,
        }
    }
}

impl RebelConfig {
    /// Checks the ranges: γ in [0, 1], the weights finite and ≥ 0.
    pub fn validate(&self) -> Result<()> {
        ensure(
            (0.0..=1.0).contains(&self.discount),
            "rebel.discount",
            self.discount,
            "must be in [0, 1]",
        )?;
        for (key, w) in [
            ("rebel.step_weight", self.step_weight),
            ("rebel.state_weight", self.state_weight),
            ("rebel.task_weight", self.task_weight),
            ("rebel.format_weight", self.format_weight),
        ] {
            ensure(w.is_finite() && w >= 0.0, key, w, "must be finite and >= 0")?;
        }
        Ok(())
    }

    /// `r_bel` of one step.
    pub fn belief_reward(&self, step: &StepCredit) -> f32 {
        let format = if step.format_ok { 1.0 } else { -1.0 };
        self.state_weight * step.state + self.task_weight * step.task + self.format_weight * format
    }
}

/// One policy step of an episode, as the environment judged it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StepCredit {
    /// The step's response tokens: `start..end` (indices into the response).
    pub start: usize,
    /// See [`StepCredit::start`].
    pub end: usize,
    /// The canonical belief key the step is grouped by (`None`: the belief did not parse;
    /// such steps form one group of their own per prompt).
    pub key: Option<String>,
    /// `r_state` in [0, 1]: the believed state against the tracker's.
    pub state: f32,
    /// `r_task` in [0, 1]: the step's phase against the environment's.
    pub task: f32,
    /// Whether the step's belief parsed (`r_format` = +1, else −1).
    pub format_ok: bool,
}

/// What the stage reports.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RebelStats {
    /// Mean `r_bel` over all steps.
    pub belief_reward_mean: f64,
    /// Mean `r_state` and `r_task` over all steps.
    pub state_mean: f64,
    /// See [`RebelStats::state_mean`].
    pub task_mean: f64,
    /// Share of steps whose belief parsed.
    pub format_ok_frac: f64,
    /// Share of steps in a belief group of one (step advantage 0).
    pub singleton_frac: f64,
    /// Mean |w_step·A_step| over all steps.
    pub step_adv_abs_mean: f64,
}

/// ReBel's advantages: per sequence `A_task`, and per sequence its token offsets
/// (`response_lens[i]` values: `w_step·A_step[t]` on the tokens of step `t`, 0 elsewhere).
///
/// # Errors
/// A step span past its response, or `episodes` / `response_lens` not one per reward.
pub fn rebel(
    rewards: &[f32],
    episodes: &[Vec<StepCredit>],
    response_lens: &[usize],
    group_size: usize,
    cfg: &RebelConfig,
) -> Result<(Vec<f32>, Vec<Vec<f32>>, RebelStats)> {
    let n = rewards.len();
    for (name, len) in [
        ("episodes", episodes.len()),
        ("response_lens", response_lens.len()),
    ] {
        if len != n {
            return Err(Error::LengthMismatch {
                name,
                expected: n,
                got: len,
            });
        }
    }
    for (i, (steps, &len)) in episodes.iter().zip(response_lens).enumerate() {
        if let Some(s) = steps.iter().find(|s| s.start > s.end || s.end > len) {
            return Err(Error::BadInput {
                field: "episodes",
                index: i,
                reason: format!("step span {}..{} outside its {len} tokens", s.start, s.end),
            });
        }
    }
    let g = group_size.max(1);
    let mut advantages = vec![0.0f32; n];
    let mut offsets: Vec<Vec<f32>> = response_lens.iter().map(|&l| vec![0.0; l]).collect();
    let mut stats = RebelStats::default();
    let (mut steps_total, mut singletons) = (0usize, 0usize);
    for start in (0..n).step_by(g) {
        let rows = start..(start + g).min(n);
        let mean_r = rows.clone().map(|i| rewards[i]).sum::<f32>() / rows.len() as f32;
        // (row, step, R_env, R_bel) for every step of the group, and the belief groups.
        let mut returns: Vec<(usize, usize, f32, f32)> = Vec::new();
        let mut groups: HashMap<Option<&str>, Vec<usize>> = HashMap::new();
        for i in rows {
            advantages[i] = rewards[i] - mean_r;
            let steps = &episodes[i];
            let t_len = steps.len();
            let mut bel = 0.0f32;
            let mut per_step = vec![(0.0f32, 0.0f32); t_len];
            for t in (0..t_len).rev() {
                let r = cfg.belief_reward(&steps[t]);
                bel = r + cfg.discount * bel;
                let env = cfg.discount.powi((t_len - 1 - t) as i32) * rewards[i];
                per_step[t] = (env, bel);
                stats.belief_reward_mean += f64::from(r);
                stats.state_mean += f64::from(steps[t].state);
                stats.task_mean += f64::from(steps[t].task);
                stats.format_ok_frac += f64::from(u8::from(steps[t].format_ok));
            }
            for (t, (env, bel)) in per_step.into_iter().enumerate() {
                groups
                    .entry(steps[t].key.as_deref())
                    .or_default()
                    .push(returns.len());
                returns.push((i, t, env, bel));
            }
        }
        steps_total += returns.len();
        for members in groups.values() {
            if members.len() < 2 {
                singletons += members.len();
                continue;
            }
            let k = members.len() as f32;
            let env_mean = members.iter().map(|&j| returns[j].2).sum::<f32>() / k;
            let bel_mean = members.iter().map(|&j| returns[j].3).sum::<f32>() / k;
            for &j in members {
                let (i, t, env, bel) = returns[j];
                let a = cfg.step_weight * ((env - env_mean) + (bel - bel_mean));
                let s = &episodes[i][t];
                offsets[i][s.start..s.end].iter_mut().for_each(|o| *o = a);
                stats.step_adv_abs_mean += f64::from(a.abs());
            }
        }
    }
    let per = |x: f64| x / steps_total.max(1) as f64;
    stats.belief_reward_mean = per(stats.belief_reward_mean);
    stats.state_mean = per(stats.state_mean);
    stats.task_mean = per(stats.task_mean);
    stats.format_ok_frac = per(stats.format_ok_frac);
    stats.step_adv_abs_mean = per(stats.step_adv_abs_mean);
    stats.singleton_frac = per(singletons as f64);
    Ok((advantages, offsets, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(start: usize, end: usize, key: &str, state: f32, task: f32) -> StepCredit {
        StepCredit {
            start,
            end,
            key: Some(key.into()),
            state,
            task,
            format_ok: true,
        }
    }

    /// By hand, γ = 0.5, w_step = 1, α = 1, β = δ = 0: two trajectories of one group
    /// (R = 1 and 0, so A_task = ±0.5), both with two steps keyed "a", "b". Row 0's steps
    /// have r_state 1, 0 → R_bel = [1, 0], R_env = [0.5, 1]; row 1's have 0, 1 → R_bel =
    /// [0.5, 1], R_env = [0, 0]. Group "a": N(R_env) = ±0.25, N(R_bel) = ±0.25 → row 0 +0.5,
    /// row 1 −0.5; group "b": N(R_env) = ±0.5, N(R_bel) = ∓0.5 → 0 for both.
    #[test]
    fn two_trajectories_by_hand() {
        let cfg = RebelConfig {
            discount: 0.5,
            step_weight: 1.0,
            state_weight: 1.0,
            task_weight: 0.0,
            format_weight: 0.0,
        };
        let episodes = vec![
            vec![step(0, 2, "a", 1.0, 0.0), step(3, 4, "b", 0.0, 0.0)],
            vec![step(0, 1, "a", 0.0, 0.0), step(2, 4, "b", 1.0, 0.0)],
        ];
        let (a, off, s) = rebel(&[1.0, 0.0], &episodes, &[4, 4], 2, &cfg).unwrap();
        assert_eq!(a, vec![0.5, -0.5]);
        assert_eq!(off[0], vec![0.5, 0.5, 0.0, 0.0]);
        assert_eq!(off[1], vec![-0.5, 0.0, 0.0, 0.0]);
        assert_eq!(s.singleton_frac, 0.0);
    }

    #[test]
    fn a_singleton_belief_group_gets_no_step_advantage_and_bad_spans_are_refused() {
        let cfg = RebelConfig::default();
        let episodes = vec![
            vec![step(0, 2, "x", 1.0, 1.0)],
            vec![step(0, 2, "y", 0.0, 1.0)],
        ];
        let (_, off, s) = rebel(&[1.0, 0.0], &episodes, &[2, 2], 2, &cfg).unwrap();
        assert!(off.iter().flatten().all(|&o| o == 0.0));
        assert_eq!(s.singleton_frac, 1.0);
        let bad = vec![vec![step(0, 3, "x", 1.0, 1.0)], vec![]];
        assert!(rebel(&[1.0, 0.0], &bad, &[2, 2], 2, &cfg).is_err());
        let neg = RebelConfig {
            discount: 1.5,
            ..cfg
        };
        assert!(neg.validate().is_err());
    }
}
