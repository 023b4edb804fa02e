//! GeoX-style self-play: the policy proposes problems as executable programs and solves them;
//! the proposer is rewarded by how learnable its problem is for the current solver.
//!
//! # Paper
//! Lee, Ahn, Gummadi, Cha, "GeoX: Mastering Geospatial Reasoning Through Self-Play and
//! Verifiable Rewards", [arXiv 2605.20006](https://arxiv.org/abs/2605.20006) (only the start of
//! the abstract was readable; no code). Specification: `methods-extra.md` §21. Text only here:
//! a grid of moves stands in for the paper's image (`rlvr_verifiers::grid_program`).
//!
//! # The rewards \[PROPOSED] (the spec's Absolute-Zero-style pattern)
//! A proposal that parses and runs is a task; the solver samples n answers to it, each scored
//! by execution, r ∈ {0, 1}. The proposer's reward is the task's learnability,
//!
//! r_propose = 1 − s̄ when 0 < s̄ < 1, else 0   (s̄ = the mean of the n solver rewards),
//!
//! so a task the solver always or never solves teaches nothing and earns nothing; an invalid
//! proposal earns `invalid_reward`. A proposer prompt's G proposals form a GRPO group, and the
//! n answers to one proposed task another (advantages with the objective's own estimator).

use serde::{Deserialize, Serialize};

use crate::advantage::{AdvantageConfig, compute_advantages};
use crate::error::{Error, Result, ensure};

/// GeoX self-play knobs (`[geox]`; every one **\[PROPOSED]**).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GeoxConfig {
    /// n, the solver's answers per valid proposal (default 4; at least 2, a GRPO group).
    pub solver_samples: usize,
    /// The reward of a proposal that does not parse or fails to run (default −0.5, Absolute
    /// Zero's penalty for a well-formed answer whose program errs).
    pub invalid_reward: f32,
}

impl Default for GeoxConfig {
    fn default() -> Self {
        Self {
            solver_samples: 4,
            invalid_reward: -0.5,
        }
    }
}

impl GeoxConfig {
    /// Checks the knobs.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `geox.solver_samples` (< 2) or `geox.invalid_reward`
    /// (not finite, or above 0, which would pay a broken program more than a trivial one).
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.solver_samples >= 2,
            "geox.solver_samples",
            self.solver_samples,
            "must be >= 2 (a GRPO group)",
        )?;
        ensure(
            self.invalid_reward.is_finite() && self.invalid_reward <= 0.0,
            "geox.invalid_reward",
            self.invalid_reward,
            "must be finite and <= 0 (a valid but trivial task earns 0)",
        )
    }
}

/// r_propose for a task the solver solved with mean reward `solve_rate`.
pub fn learnability(solve_rate: f32) -> f32 {
    if solve_rate > 0.0 && solve_rate < 1.0 {
        1.0 - solve_rate
    } else {
        0.0
    }
}

/// What [`geox_rewards`] computes.
#[derive(Debug, Clone, PartialEq)]
pub struct GeoxRewards {
    /// r_propose per proposal (in the order given).
    pub proposer_rewards: Vec<f32>,
    /// Each valid proposal's solve rate s̄, in the order of the valid proposals.
    pub solve_rates: Vec<f32>,
    /// The solver answers' advantages (groups of n: one per valid proposal).
    pub solver_advantages: Vec<f32>,
}

/// The proposers' rewards and the solver answers' advantages.
///
/// `valid[p]` says whether proposal `p` is a task; `solver_rewards` holds n rewards per valid
/// proposal, valid proposals in order. The proposers' own advantages come from the caller's
/// group estimate over their prompt's group (they are ordinary rollout samples).
///
/// # Errors
/// [`Error::RaggedGroups`] when `solver_rewards` does not hold n per valid proposal, and the
/// estimator's errors (a non-finite reward).
pub fn geox_rewards(
    cfg: &GeoxConfig,
    adv: &AdvantageConfig,
    valid: &[bool],
    solver_rewards: &[f32],
) -> Result<GeoxRewards> {
    let n = cfg.solver_samples;
    let tasks = valid.iter().filter(|&&v| v).count();
    if solver_rewards.len() != tasks * n {
        return Err(Error::RaggedGroups {
            len: solver_rewards.len(),
            group_size: tasks * n,
        });
    }
    let solve_rates: Vec<f32> = solver_rewards
        .chunks(n)
        .map(|r| (r.iter().map(|&x| f64::from(x)).sum::<f64>() / n as f64) as f32)
        .collect();
    let mut rates = solve_rates.iter();
    let proposer_rewards = valid
        .iter()
        .map(|&v| {
            if v {
                // One rate per valid proposal (the length check above).
                rates
                    .next()
                    .map_or(cfg.invalid_reward, |&s| learnability(s))
            } else {
                cfg.invalid_reward
            }
        })
        .collect();
    let solver_advantages = if tasks == 0 {
        Vec::new()
    } else {
        compute_advantages(adv, solver_rewards, n)?.values
    };
    Ok(GeoxRewards {
        proposer_rewards,
        solve_rates,
        solver_advantages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learnability_pays_only_tasks_in_reach() {
        assert_eq!(learnability(0.0), 0.0);
        assert_eq!(learnability(1.0), 0.0);
        assert_eq!(learnability(0.25), 0.75);
        assert_eq!(learnability(0.75), 0.25);
    }

    #[test]
    fn knobs_are_checked_by_name() {
        for (cfg, key) in [
            (
                GeoxConfig {
                    solver_samples: 1,
                    ..GeoxConfig::default()
                },
                "geox.solver_samples",
            ),
            (
                GeoxConfig {
                    invalid_reward: 0.5,
                    ..GeoxConfig::default()
                },
                "geox.invalid_reward",
            ),
            (
                GeoxConfig {
                    invalid_reward: f32::NAN,
                    ..GeoxConfig::default()
                },
                "geox.invalid_reward",
            ),
        ] {
            let err = cfg.validate().unwrap_err().to_string();
            assert!(err.contains(key), "{err}");
        }
        assert!(GeoxConfig::default().validate().is_ok());
    }
}
