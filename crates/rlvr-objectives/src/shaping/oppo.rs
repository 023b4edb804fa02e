//! OPPO (self-oracle): token advantages from the running success probability that an
//! oracle-prompted pass of the policy implies.
//!
//! # Paper
//! Li, Miao, Lan, Qi, "OPPO: Bayesian Value Recursion for Token-Level Credit Assignment in LLM
//! Reasoning", [arXiv 2605.21851](https://arxiv.org/abs/2605.21851) (no code found).
//! Specification: `methods-extra.md` §14.
//!
//! # Formula \[PROPOSED] (the recursion is the specification's derivation from Bayes)
//! ℓ_t is the sampling policy's log-prob of response token t, ℓᵒ_t the policy's log-prob of the
//! same token after `prompt ⊕ oracle context` ("The correct final answer is <gold>."), and
//! δ_t = clip(ℓᵒ_t − ℓ_t, −c, c) (c = 5). With the prior p₀ = clip(p̂, 1/(2G), 1 − 1/(2G))
//! (p̂ the group's pass rate), log p_t = log p₀ + Σ_{s≤t} δ_s and p_t = min(1, exp(log p_t)).
//! For a response of T tokens (t = 1..T): A_t = p_t − p_{t−1} for t < T and A_T = r − p_{T−1}.
//!
//! The sum telescopes: Σ_t A_t = r − p₀ exactly, also when p_t saturates at 1 (the advantages
//! are differences of the clipped p_t, so the min(1, ·) only moves credit between tokens: a
//! token whose running sum stays above log 1 gets A_t = 0, and the first-order form
//! A_t = p_{t−1}(e^{δ_t} − 1) no longer holds there). δ_T never enters: the last token carries
//! the outcome. Optionally the token advantages of a group are divided by (σ_g(r) + ε), GRPO's
//! unbiased group std. All-equal reward groups get zero token advantages by default (the
//! project's convention for collapsed groups; `keep_collapsed` keeps their r − p₀ unscaled).

use serde::{Deserialize, Serialize};

use super::stats::{mean, unbiased_var};
use crate::error::{Result, ensure};

/// The placeholder of the gold answer in [`OppoConfig::oracle_template`].
pub const ANSWER_PLACEHOLDER: &str = "{answer}";

/// OPPO knobs, all **\[PROPOSED]** (spec §14).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OppoConfig {
    /// c, the clip of |δ_t| (default 5).
    pub delta_clip: f64,
    /// The oracle context, with `{answer}` where the gold answer goes (default
    /// "The correct final answer is {answer}.").
    pub oracle_template: String,
    /// Divide a group's token advantages by (σ_g(r) + ε) (default true: GRPO's scale).
    pub scale_by_group_std: bool,
    /// Keep the token advantages of all-equal reward groups (r − p₀, unscaled) instead of zeroing
    /// them (default false).
    pub keep_collapsed: bool,
}

impl Default for OppoConfig {
    fn default() -> Self {
        Self {
            delta_clip: 5.0,
            oracle_template: format!("The correct final answer is {ANSWER_PLACEHOLDER}."),
            scale_by_group_std: true,
            keep_collapsed: false,
        }
    }
}

impl OppoConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.delta_clip.is_finite() && self.delta_clip > 0.0,
            "oppo.delta_clip",
            self.delta_clip,
            "must be > 0",
        )?;
        ensure(
            self.oracle_template.contains(ANSWER_PLACEHOLDER),
            "oppo.oracle_template",
            &self.oracle_template,
            "must contain {answer}, where the gold answer goes",
        )
    }

    /// The oracle context for a gold answer.
    pub fn oracle_context(&self, answer: &str) -> String {
        self.oracle_template.replace(ANSWER_PLACEHOLDER, answer)
    }
}

/// One response's OPPO trace.
#[derive(Debug, Clone, PartialEq)]
pub struct OppoTrace {
    /// A_t, one per response token (f64, so the telescoping sum is exact to rounding).
    pub advantages: Vec<f64>,
    /// p₀, the clipped prior.
    pub p0: f64,
    /// Tokens whose |ℓᵒ − ℓ| exceeded the clip (the last token's included).
    pub clipped: usize,
    /// Tokens t < T whose p_t saturated at 1.
    pub saturated: usize,
}

/// The token advantages of one response with log-probs `logp` (ℓ), oracle log-probs
/// `oracle_logp` (ℓᵒ, same length), reward `reward`, group pass rate `pass_rate` and group size
/// `group_size` (for the prior's clip), with |δ| clipped at `delta_clip`.
///
/// # Panics
/// If `logp` and `oracle_logp` differ in length.
pub fn oppo_token_advantages(
    logp: &[f32],
    oracle_logp: &[f32],
    reward: f32,
    pass_rate: f64,
    group_size: usize,
    delta_clip: f64,
) -> OppoTrace {
    assert_eq!(
        logp.len(),
        oracle_logp.len(),
        "one oracle log-prob per token"
    );
    let floor = 1.0 / (2.0 * group_size.max(1) as f64);
    let p0 = pass_rate.clamp(floor, 1.0 - floor);
    let n = logp.len();
    let (mut clipped, mut saturated) = (0usize, 0usize);
    let mut advantages = Vec::with_capacity(n);
    let (mut log_p, mut prev) = (p0.ln(), p0);
    for (t, (&l, &lo)) in logp.iter().zip(oracle_logp).enumerate() {
        let raw = f64::from(lo) - f64::from(l);
        clipped += usize::from(raw.abs() > delta_clip);
        if t + 1 == n {
            advantages.push(f64::from(reward) - prev);
            break;
        }
        log_p += raw.clamp(-delta_clip, delta_clip);
        let p = log_p.exp().min(1.0);
        saturated += usize::from(p >= 1.0);
        advantages.push(p - prev);
        prev = p;
    }
    OppoTrace {
        advantages,
        p0,
        clipped,
        saturated,
    }
}

/// OPPO's diagnostics over one batch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OppoStats {
    /// Mean prior p₀ over the sequences.
    pub p0_mean: f64,
    /// Mean |ℓᵒ − ℓ| over the tokens (before the clip).
    pub delta_abs_mean: f64,
    /// Share of tokens whose |δ| was clipped.
    pub clip_frac: f64,
    /// Share of tokens whose running p_t saturated at 1.
    pub saturated_frac: f64,
    /// Mean |A_t| over the tokens, after the group scale.
    pub adv_abs_mean: f64,
}

/// Per-token advantages of every sequence over `[prompts, group_size]` (flat, row-major):
/// [`oppo_token_advantages`] with each group's pass rate from `passed`, then the group scale
/// and the collapsed-group rule of `cfg`; `eps` is the std guard.
pub fn oppo(
    logp: &[Vec<f32>],
    oracle_logp: &[Vec<f32>],
    rewards: &[f32],
    passed: &[bool],
    group_size: usize,
    cfg: &OppoConfig,
    eps: f64,
) -> (Vec<Vec<f32>>, OppoStats) {
    let mut s = OppoStats::default();
    let mut tokens = 0usize;
    let mut out = Vec::with_capacity(rewards.len());
    for (gi, group) in rewards.chunks(group_size).enumerate() {
        let rows = gi * group_size..gi * group_size + group.len();
        let pass = passed[rows.clone()].iter().filter(|&&p| p).count() as f64 / group.len() as f64;
        let collapsed = group.windows(2).all(|w| w[0] == w[1]);
        let m = mean(group);
        let sd = unbiased_var(&group.iter().map(|&r| f64::from(r)).collect::<Vec<_>>(), m)
            .map_or(0.0, f64::sqrt);
        let scale = if collapsed {
            if cfg.keep_collapsed { 1.0 } else { 0.0 }
        } else if cfg.scale_by_group_std {
            1.0 / (sd + eps)
        } else {
            1.0
        };
        for i in rows {
            let trace = oppo_token_advantages(
                &logp[i],
                &oracle_logp[i],
                rewards[i],
                pass,
                group_size,
                cfg.delta_clip,
            );
            s.p0_mean += trace.p0;
            s.clip_frac += trace.clipped as f64;
            s.saturated_frac += trace.saturated as f64;
            s.delta_abs_mean += logp[i]
                .iter()
                .zip(&oracle_logp[i])
                .map(|(&l, &o)| (f64::from(o) - f64::from(l)).abs())
                .sum::<f64>();
            tokens += trace.advantages.len();
            let a: Vec<f32> = trace
                .advantages
                .iter()
                .map(|&a| (a * scale) as f32)
                .collect();
            s.adv_abs_mean += a.iter().map(|x| f64::from(x.abs())).sum::<f64>();
            out.push(a);
        }
    }
    s.p0_mean /= rewards.len().max(1) as f64;
    for x in [
        &mut s.delta_abs_mean,
        &mut s.clip_frac,
        &mut s.saturated_frac,
        &mut s.adv_abs_mean,
    ] {
        *x /= tokens.max(1) as f64;
    }
    (out, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand check, G = 4, p̂ = 0.5 (p₀ = 0.5), r = 1, δ = (ln 1.2, ln 0.5, 0.7):
    /// p₁ = 0.6, p₂ = 0.3, so A = (0.1, −0.3, 1 − 0.3 = 0.7); the last δ is not used, and
    /// Σ A = 0.5 = r − p₀.
    #[test]
    fn a_hand_checked_trace() {
        let logp = [-1.0f32, -1.0, -1.0];
        let oracle = [-1.0 + 1.2f32.ln(), -1.0 + 0.5f32.ln(), -0.3];
        let t = oppo_token_advantages(&logp, &oracle, 1.0, 0.5, 4, 5.0);
        let want = [0.1, -0.3, 0.7];
        for (a, w) in t.advantages.iter().zip(want) {
            assert!((a - w).abs() < 1e-6, "{:?}", t.advantages);
        }
        assert_eq!(t.p0, 0.5);
        assert_eq!((t.clipped, t.saturated), (0, 0));
    }

    /// The template needs its placeholder; the clip must be positive.
    #[test]
    fn bad_knobs_are_refused_naming_them() {
        let cfg = OppoConfig {
            oracle_template: "no answer here".into(),
            ..OppoConfig::default()
        };
        assert!(
            cfg.validate()
                .unwrap_err()
                .to_string()
                .contains("oppo.oracle_template")
        );
        let cfg = OppoConfig {
            delta_clip: 0.0,
            ..OppoConfig::default()
        };
        assert!(
            cfg.validate()
                .unwrap_err()
                .to_string()
                .contains("oppo.delta_clip")
        );
        assert_eq!(
            OppoConfig::default().oracle_context("49"),
            "The correct final answer is 49."
        );
    }
}
