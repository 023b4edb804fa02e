//! POW3R: policy-aware rubric weights that favour criteria which currently separate rollouts.
//!
//! # Paper
//! Tyagi et al., "Not Every Rubric Teaches Equally: Policy-Aware Rubric Rewards for RLVR",
//! [arXiv 2605.20164](https://arxiv.org/abs/2605.20164) (no code). Specification:
//! `methods-extra.md` §6.
//!
//! # Formula \[PROPOSED]
//! Per prompt with criteria k (signed human weights h_k: a negative weight is a pitfall, whose
//! score counts against the reward; |h_k| is its importance) and scores s_{i,k} ∈ [0, 1]:
//! c_k = population std_i s_{i,k}; within each category g, with H_g = Σ_{k∈g} |h_k|,
//! ŵ_k = H_g |h_k| (c_k + ε_c)^γ / Σ_{k'∈g} |h_{k'}| (c_{k'} + ε_c)^γ (ŵ = |h| if the sum is 0);
//! w_k = (1 − λ)|h_k| + λ ŵ_k; R_i = Σ_k sgn(h_k) w_k s_{i,k} / Σ_k |h_k|.
//! Logged: the human-weighted score R^h_i = Σ_k h_k s_{i,k} / Σ_k |h_k| and strict completion
//! (every positive criterion met and no pitfall met; "met" = s ≥ 0.5 \[PROPOSED]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, ensure};

/// A score counts as "criterion met" at or above this value (strict completion) \[PROPOSED].
const MET: f32 = 0.5;

/// POW3R knobs, all **\[PROPOSED]** (spec §6).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Pow3rConfig {
    /// λ, the mix between human weights (0) and contrast weights (1) (default 0.5).
    pub lambda: f64,
    /// γ, the exponent on the contrast (default 1).
    pub gamma: f64,
    /// ε_c added to each contrast, so saturated criteria keep some weight (default 0.05).
    pub contrast_eps: f64,
}

impl Default for Pow3rConfig {
    fn default() -> Self {
        Self {
            lambda: 0.5,
            gamma: 1.0,
            contrast_eps: 0.05,
        }
    }
}

impl Pow3rConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            (0.0..=1.0).contains(&self.lambda),
            "pow3r.lambda",
            self.lambda,
            "must be in [0, 1]",
        )?;
        ensure(
            self.gamma.is_finite() && self.gamma >= 0.0,
            "pow3r.gamma",
            self.gamma,
            "must be >= 0",
        )?;
        ensure(
            self.contrast_eps.is_finite() && self.contrast_eps >= 0.0,
            "pow3r.contrast_eps",
            self.contrast_eps,
            "must be >= 0",
        )
    }
}

/// A prompt's rubric: one signed human weight and one category per criterion. Empty vectors
/// mean "every weight 1, one category".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RubricSpec {
    /// h_k; negative for a pitfall criterion.
    pub weights: Vec<f32>,
    /// g(k), the category of each criterion.
    pub categories: Vec<u32>,
}

/// POW3R's rewards and diagnostics.
#[derive(Debug, Clone, PartialEq)]
pub struct Pow3rOutput {
    /// R_i, the training reward (unchanged for prompts with an empty rubric).
    pub rewards: Vec<f32>,
    /// R^h_i, the human-weighted score (the evaluation target).
    pub human_rewards: Vec<f32>,
    /// Strict completion per sequence.
    pub strict: Vec<bool>,
    /// Prompts whose rubric had no criteria.
    pub empty_groups: usize,
}

/// POW3R over `[prompts, group_size]` sequences: `scores` has one vector of criterion scores per
/// sequence, `rubrics` one spec per prompt (or none: all weights 1, one category); `rewards`
/// are kept for prompts with an empty rubric.
pub fn pow3r(
    rewards: &[f32],
    scores: &[Vec<f32>],
    rubrics: Option<&[RubricSpec]>,
    group_size: usize,
    cfg: &Pow3rConfig,
) -> Result<Pow3rOutput> {
    let mut out = Pow3rOutput {
        rewards: rewards.to_vec(),
        human_rewards: rewards.to_vec(),
        strict: vec![false; rewards.len()],
        empty_groups: 0,
    };
    for (g, group) in scores.chunks(group_size).enumerate() {
        let base = g * group_size;
        let k = group[0].len();
        for (i, s) in group.iter().enumerate() {
            if s.len() != k {
                return Err(Error::BadInput {
                    field: "rubric_scores",
                    index: base + i,
                    reason: format!("{} criteria, its group's first sequence has {k}", s.len()),
                });
            }
            if let Some(j) = s.iter().position(|x| !(0.0..=1.0).contains(x)) {
                return Err(Error::BadInput {
                    field: "rubric_scores",
                    index: base + i,
                    reason: format!("criterion {j} scores {}, outside [0, 1]", s[j]),
                });
            }
        }
        if k == 0 {
            out.empty_groups += 1;
            continue;
        }
        let spec = rubrics.map(|r| &r[g]);
        let h: Vec<f64> = match spec.filter(|s| !s.weights.is_empty()) {
            Some(s) if s.weights.len() == k => s.weights.iter().map(|&x| f64::from(x)).collect(),
            Some(s) => return Err(mismatch(g, "weights", s.weights.len(), k)),
            None => vec![1.0; k],
        };
        let cat: Vec<u32> = match spec.filter(|s| !s.categories.is_empty()) {
            Some(s) if s.categories.len() == k => s.categories.clone(),
            Some(s) => return Err(mismatch(g, "categories", s.categories.len(), k)),
            None => vec![0; k],
        };
        let total: f64 = h.iter().map(|x| x.abs()).sum();
        if !(total > 0.0 && total.is_finite()) {
            return Err(Error::BadInput {
                field: "rubrics",
                index: g,
                reason: format!("human weights sum to {total}; need a positive finite sum"),
            });
        }
        let w = mixed_weights(group, &h, &cat, cfg);
        for (i, s) in group.iter().enumerate() {
            let dot = |wt: &dyn Fn(usize) -> f64| -> f64 {
                (0..k).map(|c| wt(c) * f64::from(s[c])).sum::<f64>() / total
            };
            out.rewards[base + i] = dot(&|c| h[c].signum() * w[c]) as f32;
            out.human_rewards[base + i] = dot(&|c| h[c]) as f32;
            out.strict[base + i] = (0..k).all(|c| (s[c] >= MET) == (h[c] > 0.0) || h[c] == 0.0);
        }
    }
    Ok(out)
}

/// w_k = (1 − λ)|h_k| + λ ŵ_k with the category-preserving contrast weights ŵ (steps 1–3).
fn mixed_weights(group: &[Vec<f32>], h: &[f64], cat: &[u32], cfg: &Pow3rConfig) -> Vec<f64> {
    let n = group.len() as f64;
    let contrast: Vec<f64> = (0..h.len())
        .map(|c| {
            let m = group.iter().map(|s| f64::from(s[c])).sum::<f64>() / n;
            (group
                .iter()
                .map(|s| (f64::from(s[c]) - m).powi(2))
                .sum::<f64>()
                / n)
                .sqrt()
        })
        .collect();
    let raw: Vec<f64> = (0..h.len())
        .map(|c| h[c].abs() * (contrast[c] + cfg.contrast_eps).powf(cfg.gamma))
        .collect();
    let mut sums: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    for c in 0..h.len() {
        let e = sums.entry(cat[c]).or_default();
        e.0 += h[c].abs();
        e.1 += raw[c];
    }
    (0..h.len())
        .map(|c| {
            let (mass, norm) = sums[&cat[c]];
            let hat = if norm > 0.0 {
                mass * raw[c] / norm
            } else {
                h[c].abs()
            };
            (1.0 - cfg.lambda) * h[c].abs() + cfg.lambda * hat
        })
        .collect()
}

fn mismatch(g: usize, what: &str, got: usize, k: usize) -> Error {
    Error::BadInput {
        field: "rubrics",
        index: g,
        reason: format!("{got} {what} for {k} criteria"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two criteria, one category, uniform human weights, λ = 1, γ = 1, ε_c = 0: criterion 0 is
    /// saturated (c = 0), criterion 1 separates (scores 1, 0: c = 0.5). ŵ = (0, 2), so
    /// R = (0·1 + 2·1)/2 = 1 and (0 + 0)/2 = 0 while R^h = 1 and 0.5.
    #[test]
    fn contrast_moves_weight_to_separating_criteria() {
        let scores = vec![vec![1.0, 1.0], vec![1.0, 0.0]];
        let cfg = Pow3rConfig {
            lambda: 1.0,
            contrast_eps: 0.0,
            ..Pow3rConfig::default()
        };
        let out = pow3r(&[0.0, 0.0], &scores, None, 2, &cfg).unwrap();
        assert_eq!(out.rewards, [1.0, 0.0]);
        assert_eq!(out.human_rewards, [1.0, 0.5]);
        assert_eq!(out.strict, [true, false]);
    }

    /// Empty rubrics keep the verifier reward; all-saturated criteria keep the human weights.
    #[test]
    fn empty_and_saturated_rubrics() {
        let scores = vec![vec![], vec![], vec![1.0, 0.0], vec![1.0, 0.0]];
        let spec = [
            RubricSpec::default(),
            RubricSpec {
                weights: vec![3.0, -1.0],
                categories: vec![],
            },
        ];
        let out = pow3r(
            &[0.7, 0.2, 0.0, 0.0],
            &scores,
            Some(&spec),
            2,
            &Pow3rConfig::default(),
        )
        .unwrap();
        assert_eq!(out.empty_groups, 1);
        assert_eq!(&out.rewards[..2], &[0.7, 0.2]);
        // Both criteria have c = 0: w = |h|, R = (3·1 − 1·0)/4 = 0.75.
        assert!((out.rewards[2] - 0.75).abs() < 1e-6);
        let bad = pow3r(
            &[0.0; 2],
            &[vec![1.0], vec![1.5]],
            None,
            2,
            &Pow3rConfig::default(),
        );
        assert!(bad.unwrap_err().to_string().contains("rubric_scores`[1]"));
    }
}
