//! TIER: trajectory-invariant execution rewards for multi-step tool use (Kulkarni et al.,
//! arXiv 2605.16790; methods-extra §8), selected by `[env] reward = "tier"`.
//!
//! The reward comes from the tools' schemas and their execution, not from a reference
//! trajectory, so any valid call path earns the same credit. Each call `j` of an episode is
//! checked in turn ([`CallCheck`]): `f_j` it parses, `s_j = f_j · [known tool ∧ arguments
//! satisfy its JSON Schema]`, `e_j = s_j · [the tool returned without an error]`. With
//! `F, S, E` their means over the episode's `n` calls and `a` the verifier's score of the
//! answer turn,
//!
//! `R = w_F·F + w_S·S + w_E·E + w_A·a − p·#{j : e_j = 0}`.
//!
//! **[PROPOSED]** (the paper names the four parts, not their formulas): the weights
//! `0.1 / 0.2 / 0.2 / 0.5`, the per-call means, `n = 0` giving `F = S = E = 0` when the task
//! needs tools (1 otherwise), and the optional penalty `p` per call that fails (0 by default;
//! the spec suggests 0.05). Schema adherence is all-or-nothing per call (the spec's optional
//! partial credit per argument check is not built). Means are invariant to the order of the
//! calls, so equivalent call orders earn equal rewards (tested).
//!
//! What the policy can earn without a right answer is `w_F + w_S + w_E` (0.5 by default) for
//! well-formed calls that run: the design's shaping, documented in the objectives README.

use serde::{Deserialize, Serialize};

use crate::env::CallCheck;

/// `[env.tier]`: TIER's weights (used when `[env] reward = "tier"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TierConfig {
    /// `w_F`: weight of the fraction of calls that parse.
    pub format: f32,
    /// `w_S`: weight of the fraction of calls that satisfy their tool's schema.
    pub schema: f32,
    /// `w_E`: weight of the fraction of calls that execute without an error.
    pub execution: f32,
    /// `w_A`: weight of the verifier's score of the answer turn.
    pub answer: f32,
    /// `p`: subtracted once per call that does not execute (malformed, invalid or failed).
    pub failed_call_penalty: f32,
    /// Whether the task needs tools: an episode without a call then scores `F = S = E = 0`
    /// (otherwise 1, so a tool-free answer is not punished).
    pub needs_tools: bool,
}

impl Default for TierConfig {
    fn default() -> Self {
        Self {
            format: 0.1,
            schema: 0.2,
            execution: 0.2,
            answer: 0.5,
            failed_call_penalty: 0.0,
            needs_tools: true,
        }
    }
}

/// An episode's per-call means and failure count.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TierParts {
    /// `F`: mean of `f_j`.
    pub format: f32,
    /// `S`: mean of `s_j`.
    pub schema: f32,
    /// `E`: mean of `e_j`.
    pub execution: f32,
    /// Calls that did not execute.
    pub failed_calls: usize,
}

impl TierConfig {
    /// The checks of an episode's calls (in any order) as `F`, `S`, `E` and the failures.
    pub fn parts(&self, calls: &[CallCheck]) -> TierParts {
        if calls.is_empty() {
            let v = if self.needs_tools { 0.0 } else { 1.0 };
            return TierParts {
                format: v,
                schema: v,
                execution: v,
                failed_calls: 0,
            };
        }
        let mean = |f: fn(&CallCheck) -> bool| {
            calls.iter().filter(|c| f(c)).count() as f32 / calls.len() as f32
        };
        TierParts {
            format: mean(|c| c.parsed),
            schema: mean(|c| c.valid),
            execution: mean(|c| c.executed),
            failed_calls: calls.iter().filter(|c| !c.executed).count(),
        }
    }

    /// The reward's part that does not depend on the answer: `w_F·F + w_S·S + w_E·E − p·failed`.
    pub fn call_reward(&self, parts: &TierParts) -> f32 {
        self.format * parts.format + self.schema * parts.schema + self.execution * parts.execution
            - self.failed_call_penalty * parts.failed_calls as f32
    }

    /// `R` for an episode whose answer the verifier scored `answer`.
    pub fn reward(&self, calls: &[CallCheck], answer: f32) -> f32 {
        self.call_reward(&self.parts(calls)) + self.answer * answer
    }

    /// Checks the weights: finite and not negative.
    ///
    /// # Errors
    /// The offending key, as `env.tier.<key>`.
    pub fn check(&self) -> Result<(), String> {
        for (key, w) in [
            ("format", self.format),
            ("schema", self.schema),
            ("execution", self.execution),
            ("answer", self.answer),
            ("failed_call_penalty", self.failed_call_penalty),
        ] {
            if !w.is_finite() || w < 0.0 {
                return Err(format!(
                    "env.tier.{key} must be a finite number >= 0, got {w}"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: CallCheck = CallCheck {
        parsed: false,
        valid: false,
        executed: false,
    };
    const PARSED: CallCheck = CallCheck {
        parsed: true,
        ..NONE
    };
    const VALID: CallCheck = CallCheck {
        valid: true,
        ..PARSED
    };
    const RAN: CallCheck = CallCheck {
        executed: true,
        ..VALID
    };

    /// By hand: calls [ran, valid-but-failed, parsed, unparsed] give F = 3/4, S = 2/4,
    /// E = 1/4, 3 failures; R = 0.1·0.75 + 0.2·0.5 + 0.2·0.25 + 0.5·1 − 0.05·3 = 0.575.
    #[test]
    fn a_mixed_episode_by_hand() {
        let tier = TierConfig {
            failed_call_penalty: 0.05,
            ..TierConfig::default()
        };
        let calls = [RAN, VALID, PARSED, NONE];
        let p = tier.parts(&calls);
        assert_eq!(
            (p.format, p.schema, p.execution, p.failed_calls),
            (0.75, 0.5, 0.25, 3)
        );
        assert!((tier.reward(&calls, 1.0) - 0.575).abs() < 1e-6);
        // Any order of the same calls earns the same reward.
        let reversed = [NONE, PARSED, VALID, RAN];
        assert_eq!(tier.reward(&reversed, 1.0), tier.reward(&calls, 1.0));
    }

    #[test]
    fn no_call_scores_by_whether_the_task_needs_tools() {
        let needs = TierConfig::default();
        assert_eq!(needs.reward(&[], 1.0), 0.5);
        let free = TierConfig {
            needs_tools: false,
            ..needs
        };
        assert!((free.reward(&[], 1.0) - 1.0).abs() < 1e-6);
        assert!((free.reward(&[], 0.0) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn negative_or_nan_weights_are_refused_by_key() {
        let bad = TierConfig {
            schema: -0.1,
            ..TierConfig::default()
        };
        assert!(bad.check().unwrap_err().contains("env.tier.schema"));
        let nan = TierConfig {
            failed_call_penalty: f32::NAN,
            ..TierConfig::default()
        };
        assert!(
            nan.check()
                .unwrap_err()
                .contains("env.tier.failed_call_penalty")
        );
        assert!(TierConfig::default().check().is_ok());
    }
}
