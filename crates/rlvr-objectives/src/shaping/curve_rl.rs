//! CurveRL: prompt weights from the density and CDF of a lagged pool of pass rates.
//!
//! # Paper
//! Sun et al., "CurveRL: Principled Distribution-Aware Context Reweighting for LLM Reasoning",
//! [arXiv 2605.24331](https://arxiv.org/abs/2605.24331); code zhyzmath/CurveRL
//! (`compute_curverl_outcome_advantage`). Specification: `methods-extra.md` §3.
//!
//! # Formula (exact, from the code)
//! Per prompt p̂ = mean_i s_i (s_i = r_i when every reward of the batch lies in [0, 1], else
//! 1\[r_i > 0\]). A histogram with max(G + 1, 2) bins over the reference pool (p̂ with 0 < p̂ < 1
//! from the last `pool_num` batches; the current batch when the pool is empty) gives
//! w_b = mass_b / max(cdf_b, ε), the reverse hazard rate f/F. Prompt weight w(p̂) = w_{bin(p̂)}
//! for 0 < p̂ < 1, else 0; A_i = w(p̂)(s_i − p̂). The current batch enters the pool afterwards.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Guard in mass/max(cdf, ε): only empty leading bins have cdf 0, and their mass is 0 too.
const CDF_EPS: f64 = 1e-12;

/// Which advantage CurveRL's weight multiplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CurveAdvantage {
    /// A_i = s_i − p̂ (no std division), as in the official code; replaces the base estimator.
    Centered,
    /// Keep the configured estimator's advantages and only weight them \[PROPOSED composition].
    Base,
}

/// CurveRL knobs (spec §3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CurveRlConfig {
    /// Batches in the reference pool (`pool_num`, default 10 = the paper's t_0); 0 = current
    /// batch only.
    pub pool_num: usize,
    /// `centered` (default, the paper) or `base`.
    pub advantage: CurveAdvantage,
}

impl Default for CurveRlConfig {
    fn default() -> Self {
        Self {
            pool_num: 10,
            advantage: CurveAdvantage::Centered,
        }
    }
}

impl CurveRlConfig {
    /// Checks the ranges (every value is valid).
    pub fn validate(&self) -> Result<()> {
        Ok(())
    }
}

/// One step of CurveRL.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveRlOutput {
    /// Per prompt weight w(p̂).
    pub prompt_weights: Vec<f64>,
    /// Per sequence s_i − p̂.
    pub centered: Vec<f32>,
    /// The bin weights of the reference histogram.
    pub bin_weights: Vec<f64>,
}

/// Bin of a pass rate: floor(p · bins), clamped to bins − 1.
pub fn bin_index(p: f64, bins: usize) -> usize {
    ((p * bins as f64).floor() as usize).min(bins - 1)
}

/// Reverse-hazard bin weights mass_b / max(cdf_b, ε) of `pool` over `bins` bins.
pub fn bin_weights(pool: &[f64], bins: usize) -> Vec<f64> {
    let mut counts = vec![0usize; bins];
    for &p in pool {
        counts[bin_index(p, bins)] += 1;
    }
    let total = pool.len().max(1) as f64;
    let mut cdf = 0.0;
    counts
        .iter()
        .map(|&c| {
            let mass = c as f64 / total;
            cdf += mass;
            mass / cdf.max(CDF_EPS)
        })
        .collect()
}

/// CurveRL over `[prompts, group_size]` rewards, reading and then extending `pool` (the state
/// the trainer checkpoints).
pub fn curve_rl(
    rewards: &[f32],
    group_size: usize,
    pool: &mut VecDeque<Vec<f64>>,
    cfg: &CurveRlConfig,
) -> CurveRlOutput {
    let unit = rewards.iter().all(|r| (0.0..=1.0).contains(r));
    let success: Vec<f64> = rewards
        .iter()
        .map(|&r| {
            if unit {
                f64::from(r)
            } else {
                f64::from(u8::from(r > 0.0))
            }
        })
        .collect();
    let rates: Vec<f64> = success
        .chunks(group_size)
        .map(|g| g.iter().sum::<f64>() / g.len() as f64)
        .collect();
    let mixed = |p: &f64| 0.0 < *p && *p < 1.0;
    let current: Vec<f64> = rates.iter().copied().filter(mixed).collect();
    let bins = (group_size + 1).max(2);
    let reference: Vec<f64> = if pool.iter().all(Vec::is_empty) {
        current.clone()
    } else {
        pool.iter().flatten().copied().collect()
    };
    let weights = bin_weights(&reference, bins);
    let prompt_weights: Vec<f64> = rates
        .iter()
        .map(|p| {
            if mixed(p) {
                weights[bin_index(*p, bins)]
            } else {
                0.0
            }
        })
        .collect();
    let centered = success
        .iter()
        .enumerate()
        .map(|(i, s)| (s - rates[i / group_size]) as f32)
        .collect();
    pool.push_back(current);
    while pool.len() > cfg.pool_num {
        pool.pop_front();
    }
    CurveRlOutput {
        prompt_weights,
        centered,
        bin_weights: weights,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec §3: pool {1,1,2,4,4,4,7}/8 with 9 bins → [0, 1, 1/3, 0, 1/2, 0, 0, 1/7, 0]
    /// (bins 1, 2, 4, 7 hold 2, 1, 3, 1 of 7; mass/cdf = (2/7)/(2/7), (1/7)/(3/7), (3/7)/(6/7),
    /// (1/7)/1).
    #[test]
    fn spec_bin_weights() {
        let pool: Vec<f64> = [1., 1., 2., 4., 4., 4., 7.]
            .iter()
            .map(|k| k / 8.0)
            .collect();
        let w = bin_weights(&pool, 9);
        let want = [0.0, 1.0, 1.0 / 3.0, 0.0, 0.5, 0.0, 0.0, 1.0 / 7.0, 0.0];
        for (g, e) in w.iter().zip(want) {
            assert!((g - e).abs() < 1e-12, "{w:?}");
        }
    }

    /// The pool is lagged: the first step uses the current batch, the second the first's pool.
    /// Step 1 (G = 4): p̂ = (1/4, 3/4, 1) → weights from {1/4, 3/4} over 5 bins (bins 1 and 3):
    /// 1 and 1/2; the all-pass group gets 0. Step 2: p̂ = 3/4 reads the step-1 pool → 1/2.
    #[test]
    fn pool_is_lagged_and_evicts() {
        let mut pool = VecDeque::new();
        let cfg = CurveRlConfig {
            pool_num: 1,
            ..CurveRlConfig::default()
        };
        let r1 = [1., 0., 0., 0., 1., 1., 1., 0., 1., 1., 1., 1.];
        let out = curve_rl(&r1, 4, &mut pool, &cfg);
        assert_eq!(out.prompt_weights, [1.0, 0.5, 0.0]);
        assert_eq!(out.centered[0], 0.75);
        let out2 = curve_rl(&[1., 1., 1., 0.], 4, &mut pool, &cfg);
        assert_eq!(out2.prompt_weights, [0.5]);
        assert_eq!(pool.len(), 1);
        assert_eq!(pool[0], [0.75]);
    }
}
