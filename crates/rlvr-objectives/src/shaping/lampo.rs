//! LamPO: pairwise decomposed advantage with log-prob confidence weights, and the ROUGE-L
//! auxiliary reward.
//!
//! # Paper
//! Deng et al., "LamPO: A Lambda Style Policy Optimization for Reasoning Language Models",
//! arXiv 2605.21235 (withdrawn; no code). Specification: `methods-extra.md` §4.
//!
//! # Formula \[PROPOSED, modelled on LambdaRank's pairwise sigmoid weights]
//! w_ij = 2σ(−sgn(r_i − r_j)(ℓ̄_i − ℓ̄_j)/τ) with ℓ̄ the mean sampler log-prob of a sequence;
//! A_i = 1/(G−1) Σ_{j≠i} (r_i − r_j) w_ij, optionally divided by the unbiased std_g(r) + ε.
//! With all w = 1, A_i = G/(G−1)(r_i − r̄). Auxiliary reward: r_i ← r_i + β·ROUGE-L F1(y_i, ref)
//! on whitespace tokens, both capped at `rouge_max_tokens`, only when a reference exists.

use serde::{Deserialize, Serialize};

use super::stats::{mean, unbiased_var};
use crate::error::{Result, ensure};

/// LamPO knobs, all **\[PROPOSED]** (spec §4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LampoConfig {
    /// Use the pairwise decomposed advantage as the sequence estimator (default true).
    pub pairwise: bool,
    /// τ of the pair weight's sigmoid (default 1).
    pub temperature: f64,
    /// Divide by the unbiased group std + ε for a GRPO-like scale (default false).
    pub normalize_std: bool,
    /// β of the ROUGE-L auxiliary reward (default 0.1; 0 = off).
    pub rouge_beta: f32,
    /// Whitespace tokens kept from each text before the O(n·m) LCS (default 2048).
    pub rouge_max_tokens: usize,
}

impl Default for LampoConfig {
    fn default() -> Self {
        Self {
            pairwise: true,
            temperature: 1.0,
            normalize_std: false,
            rouge_beta: 0.1,
            rouge_max_tokens: 2048,
        }
    }
}

impl LampoConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.temperature.is_finite() && self.temperature > 0.0,
            "lampo.temperature",
            self.temperature,
            "must be > 0",
        )?;
        ensure(
            self.rouge_beta.is_finite() && self.rouge_beta >= 0.0,
            "lampo.rouge_beta",
            self.rouge_beta,
            "must be >= 0",
        )?;
        ensure(
            self.rouge_max_tokens > 0,
            "lampo.rouge_max_tokens",
            self.rouge_max_tokens,
            "must be >= 1",
        )
    }
}

/// Pair weight w_ij = 2σ(−sgn(r_i − r_j)(ℓ̄_i − ℓ̄_j)/τ) (spec §4): small when the policy already
/// prefers the better response, large when it prefers the worse one, 1 at equal confidence.
pub fn pair_weight(r_i: f64, r_j: f64, l_i: f64, l_j: f64, temperature: f64) -> f64 {
    let sign = (r_i - r_j).signum() * f64::from(u8::from(r_i != r_j));
    let x = -sign * (l_i - l_j) / temperature;
    2.0 / (1.0 + (-x).exp())
}

/// LamPO advantages over `[prompts, group_size]` rewards with one mean log-prob per sequence;
/// returns the advantages and the mean pair weight over pairs with r_i ≠ r_j.
pub fn lampo_advantages(
    rewards: &[f32],
    logp_mean: &[f32],
    group_size: usize,
    cfg: &LampoConfig,
    eps: f64,
) -> (Vec<f32>, f64) {
    let mut out = Vec::with_capacity(rewards.len());
    let (mut wsum, mut wcount) = (0.0, 0usize);
    for (r, l) in rewards.chunks(group_size).zip(logp_mean.chunks(group_size)) {
        let g = r.len();
        let r64: Vec<f64> = r.iter().map(|&x| f64::from(x)).collect();
        let scale = if cfg.normalize_std {
            unbiased_var(&r64, mean(r)).map_or(1.0, |v| v.sqrt() + eps)
        } else {
            1.0
        };
        for i in 0..g {
            if g < 2 {
                out.push(0.0);
                continue;
            }
            let mut a = 0.0;
            for j in (0..g).filter(|&j| j != i) {
                let w = pair_weight(
                    r64[i],
                    r64[j],
                    f64::from(l[i]),
                    f64::from(l[j]),
                    cfg.temperature,
                );
                if r64[i] != r64[j] {
                    wsum += w;
                    wcount += 1;
                }
                a += (r64[i] - r64[j]) * w;
            }
            out.push((a / (g as f64 - 1.0) / scale) as f32);
        }
    }
    (out, wsum / wcount.max(1) as f64)
}

/// ROUGE-L F1 = 2PR/(P + R) with P = LCS/|candidate|, R = LCS/|reference| over whitespace
/// tokens, each text capped at `max_tokens` tokens; 0 when either is empty.
pub fn rouge_l_f1(candidate: &str, reference: &str, max_tokens: usize) -> f32 {
    let c: Vec<&str> = candidate.split_whitespace().take(max_tokens).collect();
    let r: Vec<&str> = reference.split_whitespace().take(max_tokens).collect();
    if c.is_empty() || r.is_empty() {
        return 0.0;
    }
    // Rolling-row LCS dynamic programme.
    let mut prev = vec![0usize; r.len() + 1];
    let mut cur = vec![0usize; r.len() + 1];
    for ct in &c {
        for (j, rt) in r.iter().enumerate() {
            cur[j + 1] = if ct == rt {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    let lcs = prev[r.len()] as f64;
    if lcs == 0.0 {
        return 0.0;
    }
    let p = lcs / c.len() as f64;
    let rec = lcs / r.len() as f64;
    (2.0 * p * rec / (p + rec)) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec §4 regression: with equal confidences every w = 1 and A_i = G/(G−1)(r_i − r̄).
    #[test]
    fn equal_confidence_is_scaled_dr_grpo() {
        let r = [1.0f32, 0.0, 0.5, 0.0];
        let (a, w) = lampo_advantages(&r, &[-1.0; 4], 4, &LampoConfig::default(), 1e-6);
        let m = 0.375;
        for (x, &ri) in a.iter().zip(&r) {
            assert!((x - 4.0 / 3.0 * (ri - m)).abs() < 1e-6, "{a:?}");
        }
        assert!((w - 1.0).abs() < 1e-12);
        assert!(a.iter().sum::<f32>().abs() < 1e-6, "zero-sum");
    }

    /// G = 2, r = (1, 0): the better response is more likely (ℓ̄ = −0.5 vs −1.5, τ = 1), so
    /// w = 2σ(−1) = 0.5379 and A = (±1)·0.5379.
    #[test]
    fn confident_correct_pairs_get_small_weight() {
        let (a, _) = lampo_advantages(&[1.0, 0.0], &[-0.5, -1.5], 2, &LampoConfig::default(), 0.0);
        let w = 2.0 / (1.0 + 1f64.exp());
        assert!((f64::from(a[0]) - w).abs() < 1e-6 && (f64::from(a[1]) + w).abs() < 1e-6);
        let (single, _) = lampo_advantages(&[1.0], &[-1.0], 1, &LampoConfig::default(), 0.0);
        assert_eq!(single, [0.0]);
    }

    /// "the cat sat on the mat" vs "the cat is on the mat": LCS 5 of 6 and 6 → F1 = 5/6.
    #[test]
    fn rouge_l_by_hand() {
        let f = rouge_l_f1("the cat sat on the mat", "the cat is on the mat", 2048);
        assert!((f - 5.0 / 6.0).abs() < 1e-6);
        assert_eq!(rouge_l_f1("", "x", 10), 0.0);
        assert_eq!(rouge_l_f1("a b", "c d", 10), 0.0);
        // Capped at 2 tokens each: "the cat" vs "the cat" → 1.
        assert_eq!(rouge_l_f1("the cat sat", "the cat is", 2), 1.0);
    }
}
