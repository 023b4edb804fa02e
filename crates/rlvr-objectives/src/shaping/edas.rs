//! EDAS: error-diversity modulation of the negative advantages of wrong rollouts.
//!
//! # Paper
//! Liu et al., "Leveraging Error Diversity in Group Rollouts for Reinforcement Learning",
//! [arXiv 2605.17333](https://arxiv.org/abs/2605.17333). Specification: `methods-extra.md` §1.
//!
//! # Formula \[PROPOSED] (the paper's weighting was not available)
//! Wrong rollouts W (m = |W|) are clustered by extracted answer (`None` is one cluster), n_k
//! the cluster sizes, f_i = n_{k(i)}/m. Absolute mode: ω_i = clip((n_{k(i)}/τ)^α, ω_min, ω_max).
//! Redistribute mode: ω_i = (f_i K)^α / mean_{j∈W} (f_j K)^α, K = number of wrong clusters.
//! A_i ← ω_i A_i for i ∈ W with A_i < 0; groups with m < 2 or all A_i = 0 are unchanged.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::{Result, ensure};

/// How EDAS turns cluster sizes into weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdasMode {
    /// ω = clip((n/τ)^α, ω_min, ω_max): a pair is neutral, repeats are penalized more.
    Absolute,
    /// ω = (f K)^α / mean (f K)^α: keeps the group's negative mass, moves it between clusters.
    Redistribute,
}

/// EDAS knobs, all **\[PROPOSED]** (spec §1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EdasConfig {
    /// α, the exponent on the cluster size (default 0.5).
    pub alpha: f64,
    /// τ, the neutral cluster size in absolute mode (default 2: a pair keeps its advantage).
    pub tau: f64,
    /// ω_min in absolute mode (default 0.5).
    pub weight_min: f64,
    /// ω_max in absolute mode (default 2.0).
    pub weight_max: f64,
    /// Absolute (default) or redistribute.
    pub mode: EdasMode,
}

impl Default for EdasConfig {
    fn default() -> Self {
        Self {
            alpha: 0.5,
            tau: 2.0,
            weight_min: 0.5,
            weight_max: 2.0,
            mode: EdasMode::Absolute,
        }
    }
}

impl EdasConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.alpha.is_finite() && self.alpha >= 0.0,
            "edas.alpha",
            self.alpha,
            "must be >= 0",
        )?;
        ensure(
            self.tau.is_finite() && self.tau > 0.0,
            "edas.tau",
            self.tau,
            "must be > 0",
        )?;
        ensure(
            self.weight_min.is_finite()
                && self.weight_max.is_finite()
                && 0.0 < self.weight_min
                && self.weight_min <= self.weight_max,
            "edas.weight_min",
            self.weight_min,
            "need 0 < weight_min <= weight_max",
        )
    }
}

/// EDAS diversity diagnostics over the groups it shaped.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EdasStats {
    /// Groups that had ≥ 2 wrong rollouts and a non-zero advantage.
    pub groups_shaped: usize,
    /// Mean number K of distinct wrong answers per shaped group.
    pub distinct_mean: f64,
    /// Mean normalized answer entropy H = −Σ f_k ln f_k / ln m per shaped group.
    pub entropy_mean: f64,
    /// Mean ω over the wrong rollouts of the shaped groups.
    pub weight_mean: f64,
}

/// Applies EDAS in place to `adv` (`[prompts, group_size]`, any estimator's output), with
/// `passed` and `answers` one per sequence (spec §1, steps 1–5).
pub fn edas(
    adv: &mut [f32],
    group_size: usize,
    passed: &[bool],
    answers: &[Option<String>],
    cfg: &EdasConfig,
) -> EdasStats {
    let mut stats = EdasStats::default();
    let mut weight_count = 0usize;
    for (g, a) in adv.chunks_mut(group_size).enumerate() {
        let base = g * group_size;
        let wrong: Vec<usize> = (0..a.len()).filter(|&i| !passed[base + i]).collect();
        let m = wrong.len();
        if m < 2 || a.iter().all(|&x| x == 0.0) {
            continue;
        }
        // Step 2: cluster the wrong rollouts by answer key (None is one cluster).
        let mut sizes: HashMap<Option<&str>, usize> = HashMap::new();
        for &i in &wrong {
            *sizes.entry(answers[base + i].as_deref()).or_default() += 1;
        }
        let k = sizes.len() as f64;
        let key = |i: usize| sizes[&answers[base + i].as_deref()] as f64;
        let omega: Vec<f64> = match cfg.mode {
            EdasMode::Absolute => wrong
                .iter()
                .map(|&i| {
                    (key(i) / cfg.tau)
                        .powf(cfg.alpha)
                        .clamp(cfg.weight_min, cfg.weight_max)
                })
                .collect(),
            EdasMode::Redistribute => {
                let raw: Vec<f64> = wrong
                    .iter()
                    .map(|&i| (key(i) / m as f64 * k).powf(cfg.alpha))
                    .collect();
                let mean = raw.iter().sum::<f64>() / m as f64;
                raw.iter().map(|w| w / mean).collect()
            }
        };
        // Step 4: only negative advantages of wrong rollouts change.
        for (&i, &w) in wrong.iter().zip(&omega) {
            if a[i] < 0.0 {
                a[i] = (f64::from(a[i]) * w) as f32;
            }
        }
        // Step 5: diagnostics.
        let entropy: f64 = sizes
            .values()
            .map(|&n| {
                let f = n as f64 / m as f64;
                -f * f.ln()
            })
            .sum::<f64>()
            / (m as f64).ln();
        stats.groups_shaped += 1;
        stats.distinct_mean += k;
        stats.entropy_mean += entropy;
        stats.weight_mean += omega.iter().sum::<f64>();
        weight_count += m;
    }
    if stats.groups_shaped > 0 {
        stats.distinct_mean /= stats.groups_shaped as f64;
        stats.entropy_mean /= stats.groups_shaped as f64;
        stats.weight_mean /= weight_count as f64;
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(keys: &[&str]) -> Vec<Option<String>> {
        keys.iter()
            .map(|k| (!k.is_empty()).then(|| k.to_string()))
            .collect()
    }

    /// Spec §1 tests: all-distinct wrong answers get ω = (1/2)^0.5 = 0.7071 (absolute) or 1
    /// (redistribute); correct rollouts never change.
    #[test]
    fn distinct_wrong_answers() {
        let passed = [true, false, false, false];
        let ans = answers(&["7", "1", "2", "3"]);
        let base = [1.5f32, -0.5, -0.5, -0.5];
        let mut a = base;
        let s = edas(&mut a, 4, &passed, &ans, &EdasConfig::default());
        assert_eq!(a[0], 1.5);
        for x in &a[1..] {
            assert!((x + 0.5 * 0.5f32.sqrt()).abs() < 1e-6, "{a:?}");
        }
        assert_eq!(s.groups_shaped, 1);
        assert!((s.distinct_mean - 3.0).abs() < 1e-12 && (s.entropy_mean - 1.0).abs() < 1e-12);
        let mut r = base;
        let cfg = EdasConfig {
            mode: EdasMode::Redistribute,
            ..EdasConfig::default()
        };
        edas(&mut r, 4, &passed, &ans, &cfg);
        assert_eq!(r, base);
    }

    /// One dominant wrong answer (3 of 4 wrong, "no answer" the fourth): the repeat gets
    /// (3/2)^0.5 = 1.2247, the singleton 0.7071, so the repeat's |A| is larger.
    #[test]
    fn dominant_answer_is_penalized_more() {
        let passed = [true, false, false, false, false];
        let ans = answers(&["4", "9", "9", "9", ""]);
        let mut a = [2.0f32, -0.5, -0.5, -0.5, -0.5];
        edas(&mut a, 5, &passed, &ans, &EdasConfig::default());
        assert!((a[1] + 0.5 * 1.5f32.sqrt()).abs() < 1e-6, "{a:?}");
        assert!((a[4] + 0.5 * 0.5f32.sqrt()).abs() < 1e-6, "{a:?}");
    }

    /// Collapsed groups (all advantages 0) and groups with one wrong rollout are unchanged.
    #[test]
    fn collapsed_and_single_wrong_groups_are_untouched() {
        let passed = [false, false, true, false];
        let ans = answers(&["1", "1", "2", "3"]);
        let mut a = [0.0f32, 0.0, 0.9, -0.9];
        let s = edas(&mut a, 2, &passed, &ans, &EdasConfig::default());
        assert_eq!(a, [0.0, 0.0, 0.9, -0.9]);
        assert_eq!(s, EdasStats::default());
    }
}
