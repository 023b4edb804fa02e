//! DelTA: discriminative token coefficients over the two sides of each group, for a
//! self-normalized surrogate.
//!
//! # Paper
//! Zhang, Wu, Lin, "DelTA: Discriminative Token Credit Assignment for Reinforcement Learning
//! from Verifiable Rewards", arXiv 2605.21467 (code announced at RUCBM/DelTA, not available).
//! Specification: `methods-extra.md` §13. The paper's view: the policy-gradient direction is a
//! linear discriminator between a positive and a negative centroid of token gradients, and
//! tokens shared by both sides dilute it; coefficients c that raise side-specific tokens and
//! lower shared ones, in L = −(1/Σc) Σ c·min(ρA, clip(ρ)A), make the centroids contrastive.
//!
//! # Formula [PROPOSED] (the paper's estimator was not available; spec §13 proxy (a))
//! The token-identity proxy (the last-layer gradient of token y_t, (e_{y_t} − p_t) ⊗ h_t, is
//! dominated by the token's identity). Per pool (a group, or the whole batch with
//! `scope = "batch"`), with |y_i| the response length and count_i(v) the occurrences of id v:
//!
//! F⁺(v) = Σ_{i: A_i>0} A_i · count_i(v)/|y_i|,  F⁻(v) = Σ_{i: A_i<0} |A_i| · count_i(v)/|y_i|,
//! P± = F± / Σ_v F±(v),  q(v) = P⁺(v) / (P⁺(v) + P⁻(v) + ε);
//!
//! a token of a positive response gets c = clip((2q)^κ, c_min, c_max), one of a negative
//! response c = clip((2(1 − q))^κ, c_min, c_max). Shared tokens (q ≈ ½) get c ≈ 1,
//! side-specific ones up to 2^κ, tokens typical of the other side c_min. Responses with A_i = 0
//! and every response of a pool without a positive or without a negative side get c = 1.
//! The form, κ = 1, c ∈ [0.1, 3] and ε are the specification's [PROPOSED] values, all knobs.
//!
//! The hidden-state proxy (spec §13 (b), rating B) is not built; the config does not accept it.
//!
//! Token ids are read as opaque identities (compared for equality, never decoded). The
//! coefficients reach the loss through `PolicyBatch::with_token_coef`, whose aggregation
//! divides by Σ c m instead of the token count (`crate::aggregate::aggregate_weighted`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::{Result, ensure};

/// Over which sequences DelTA's side statistics F⁺ / F⁻ are pooled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaScope {
    /// One pool per prompt group (G responses) — the specification's default.
    Group,
    /// One pool over the whole step's batch.
    Batch,
}

/// DelTA knobs (spec §13 (a); every value [PROPOSED] by the specification).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeltaConfig {
    /// Pool of the side statistics: per group (default) or per batch.
    pub scope: DeltaScope,
    /// κ, the exponent of (2q)^κ (default 1): side-specific tokens get up to 2^κ.
    pub kappa: f64,
    /// Lower clip of c (default 0.1); must be in (0, 1].
    pub c_min: f64,
    /// Upper clip of c (default 3); must be ≥ 1.
    pub c_max: f64,
    /// ε in q = P⁺/(P⁺ + P⁻ + ε) (default 1e-8; the specification names ε without a value).
    pub eps: f64,
}

impl Default for DeltaConfig {
    fn default() -> Self {
        Self {
            scope: DeltaScope::Group,
            kappa: 1.0,
            c_min: 0.1,
            c_max: 3.0,
            eps: 1e-8,
        }
    }
}

impl DeltaConfig {
    /// Checks the ranges: κ > 0, 0 < c_min ≤ 1 ≤ c_max (so c = 1 stays reachable and Σ c > 0),
    /// ε ≥ 0, all finite.
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.kappa.is_finite() && self.kappa > 0.0,
            "delta.kappa",
            self.kappa,
            "must be finite and > 0",
        )?;
        ensure(
            self.c_min.is_finite() && self.c_min > 0.0 && self.c_min <= 1.0,
            "delta.c_min",
            self.c_min,
            "must be in (0, 1] (a positive coefficient keeps the denominator sum c > 0)",
        )?;
        ensure(
            self.c_max.is_finite() && self.c_max >= 1.0,
            "delta.c_max",
            self.c_max,
            "must be finite and >= 1",
        )?;
        ensure(
            self.eps.is_finite() && self.eps >= 0.0,
            "delta.eps",
            self.eps,
            "must be finite and >= 0",
        )
    }
}

/// What DelTA did on one step, over all response tokens of the batch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DeltaStats {
    /// Mean coefficient c (1 for tokens of unscored responses).
    pub coef_mean: f64,
    /// Smallest coefficient (1 when no token was scored).
    pub coef_min: f64,
    /// Largest coefficient (1 when no token was scored).
    pub coef_max: f64,
    /// Share of tokens whose (2q)^κ fell below c_min.
    pub clip_low_frac: f64,
    /// Share of tokens whose (2q)^κ rose above c_max.
    pub clip_high_frac: f64,
    /// Pools (groups, or the batch) with both a positive and a negative side.
    pub scored_pools: usize,
}

/// Per-token coefficients of one two-sided pool and its clipped-token counts.
struct PoolCoefficients {
    coef: Vec<Vec<f64>>,
    low: usize,
    high: usize,
}

/// DelTA's coefficients of one pool (spec §13 (a)): `tokens[i]` the response ids of sequence
/// i, `advantages[i]` its final sequence advantage. One-sided pools and A_i = 0 give c = 1.
pub fn delta_pool(tokens: &[Vec<u32>], advantages: &[f32], cfg: &DeltaConfig) -> Vec<Vec<f64>> {
    match pool(tokens, advantages, cfg) {
        Some(p) => p.coef,
        None => tokens.iter().map(|t| vec![1.0; t.len()]).collect(),
    }
}

fn pool(tokens: &[Vec<u32>], advantages: &[f32], cfg: &DeltaConfig) -> Option<PoolCoefficients> {
    // F⁺(v), F⁻(v) and their totals.
    let mut f: HashMap<u32, (f64, f64)> = HashMap::new();
    let (mut total_pos, mut total_neg) = (0.0f64, 0.0f64);
    for (ids, &a) in tokens.iter().zip(advantages) {
        if a == 0.0 || ids.is_empty() {
            continue;
        }
        let w = f64::from(a.abs()) / ids.len() as f64;
        for &v in ids {
            let e = f.entry(v).or_default();
            if a > 0.0 {
                e.0 += w;
            } else {
                e.1 += w;
            }
        }
        if a > 0.0 {
            total_pos += f64::from(a);
        } else {
            total_neg += f64::from(a.abs());
        }
    }
    if total_pos <= 0.0 || total_neg <= 0.0 {
        return None;
    }
    let q = |v: u32| {
        let (fp, fn_) = f.get(&v).copied().unwrap_or_default();
        let (pp, pn) = (fp / total_pos, fn_ / total_neg);
        pp / (pp + pn + cfg.eps)
    };
    let (mut low, mut high) = (0usize, 0usize);
    let coef = tokens
        .iter()
        .zip(advantages)
        .map(|(ids, &a)| {
            if a == 0.0 {
                return vec![1.0; ids.len()];
            }
            ids.iter()
                .map(|&v| {
                    let side = if a > 0.0 { q(v) } else { 1.0 - q(v) };
                    let raw = (2.0 * side).powf(cfg.kappa);
                    low += usize::from(raw < cfg.c_min);
                    high += usize::from(raw > cfg.c_max);
                    raw.clamp(cfg.c_min, cfg.c_max)
                })
                .collect()
        })
        .collect();
    Some(PoolCoefficients { coef, low, high })
}

/// DelTA's per-token coefficients for the whole step (one vector per sequence, as long as its
/// response) and the diagnostics; pools are the groups of `group_size` consecutive sequences,
/// or the whole batch with `scope = "batch"`.
pub fn delta(
    tokens: &[Vec<u32>],
    advantages: &[f32],
    group_size: usize,
    cfg: &DeltaConfig,
) -> (Vec<Vec<f32>>, DeltaStats) {
    let size = match cfg.scope {
        DeltaScope::Group => group_size.max(1),
        DeltaScope::Batch => tokens.len().max(1),
    };
    let mut s = DeltaStats {
        coef_min: f64::INFINITY,
        coef_max: f64::NEG_INFINITY,
        ..DeltaStats::default()
    };
    let (mut sum, mut count) = (0.0f64, 0usize);
    let mut out = Vec::with_capacity(tokens.len());
    for (ids, adv) in tokens.chunks(size).zip(advantages.chunks(size)) {
        let coef = match pool(ids, adv, cfg) {
            Some(p) => {
                s.scored_pools += 1;
                s.clip_low_frac += p.low as f64;
                s.clip_high_frac += p.high as f64;
                p.coef
            }
            None => ids.iter().map(|t| vec![1.0; t.len()]).collect(),
        };
        for row in coef {
            for &c in &row {
                sum += c;
                count += 1;
                s.coef_min = s.coef_min.min(c);
                s.coef_max = s.coef_max.max(c);
            }
            out.push(row.into_iter().map(|c| c as f32).collect());
        }
    }
    if count == 0 {
        s.coef_min = 1.0;
        s.coef_max = 1.0;
    }
    let n = count.max(1) as f64;
    s.coef_mean = if count == 0 { 1.0 } else { sum / n };
    s.clip_low_frac /= n;
    s.clip_high_frac /= n;
    (out, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// G = 2, y⁺ = (5, 7), y⁻ = (5, 9), A = ±1: P⁺ = P⁻ = ½ on the shared id 5, so
    /// q(5) = ½/(1 + ε) and c ≈ 1 on both sides; 7 is only positive (q = ½/(½ + ε), c ≈ 2) and 9
    /// only negative (q = 0, c = 2(1 − 0) = 2).
    #[test]
    fn shared_tokens_keep_one_and_side_specific_ones_double() {
        let cfg = DeltaConfig::default();
        let e = cfg.eps;
        let c = delta_pool(&[vec![5, 7], vec![5, 9]], &[1.0, -1.0], &cfg);
        let want = [
            [1.0 / (1.0 + e), 1.0 / (0.5 + e)],
            [2.0 * (1.0 - 0.5 / (1.0 + e)), 2.0],
        ];
        for (row, w) in c.iter().zip(want) {
            for (a, b) in row.iter().zip(w) {
                assert!((a - b).abs() < 1e-12, "{c:?}");
            }
        }
    }

    /// A one-sided group and A = 0 give c = 1 whatever the tokens.
    #[test]
    fn one_sided_groups_and_zero_advantages_are_untouched() {
        let cfg = DeltaConfig::default();
        let c = delta_pool(&[vec![1, 2], vec![3]], &[1.0, 0.5], &cfg);
        assert_eq!(c, [vec![1.0, 1.0], vec![1.0]]);
        let c = delta_pool(&[vec![1], vec![2], vec![1, 1]], &[1.0, -1.0, 0.0], &cfg);
        assert_eq!(c[2], [1.0, 1.0]);
        assert_eq!(c[0], [2.0 / (1.0 + 1e-8)]);
    }

    /// Out-of-range knobs are refused, naming the key.
    #[test]
    fn bad_knobs_are_refused() {
        for (cfg, key) in [
            (
                DeltaConfig {
                    kappa: 0.0,
                    ..DeltaConfig::default()
                },
                "delta.kappa",
            ),
            (
                DeltaConfig {
                    c_min: 0.0,
                    ..DeltaConfig::default()
                },
                "delta.c_min",
            ),
            (
                DeltaConfig {
                    c_max: 0.5,
                    ..DeltaConfig::default()
                },
                "delta.c_max",
            ),
            (
                DeltaConfig {
                    eps: -1.0,
                    ..DeltaConfig::default()
                },
                "delta.eps",
            ),
        ] {
            let err = cfg.validate().unwrap_err().to_string();
            assert!(err.contains(key), "{err}");
        }
    }
}
