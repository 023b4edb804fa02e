//! A verifier's judgement of one response: reward, outcome, extracted answer and details.

use serde::{Deserialize, Serialize};

/// How a verification ended.
///
/// The outcome says *what happened*; the reward is derived from it (and from the fraction of tests
/// passed, for code) by configuration, never hard-wired in a verifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The answer is right / every test passed / every rubric criterion holds.
    Correct,
    /// Some but not all tests or criteria passed.
    Partial,
    /// An answer was found and it is wrong / no test passed.
    Wrong,
    /// No answer could be extracted or parsed from the response.
    Unparseable,
    /// The check ran past its time limit.
    Timeout,
    /// The program under test crashed (did not load, died from a signal, or ended without
    /// reporting).
    Crashed,
    /// The verifier could not run (sandbox failure, unreachable judge): not the response's fault.
    Error,
}

impl Outcome {
    /// Whether this outcome counts as a pass.
    pub fn passed(self) -> bool {
        self == Outcome::Correct
    }
}

/// One verifier's judgement of one response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Reward in `[0, 1]`.
    pub reward: f32,
    /// `outcome == Correct`.
    pub passed: bool,
    /// How the verification ended.
    pub outcome: Outcome,
    /// The answer the verifier extracted from the response (math), or the program it ran (code).
    pub extracted: Option<String>,
    /// Verifier-specific details (per-test or per-criterion results, reasons).
    pub details: serde_json::Value,
    /// The parts of a `composite` verdict, in config order (empty for the other kinds): what
    /// the trainer logs as `reward/part/<name>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartVerdict>,
    /// Localized penalties of the dense code reward ([`crate::dense`]): character spans of the
    /// response, each with the amount to spread over the tokens that overlap it (empty for
    /// every other verifier).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub penalties: Vec<PenaltySpan>,
}

/// One localized diagnostic of the dense code reward (methods-extra §9, "token mapping"):
/// −κ·w_c on the characters of the response that hold the program line the finding names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PenaltySpan {
    /// The component the finding lowers: `syntax`, `style`, `security` or `exec`.
    pub component: String,
    /// The rule (`E501`, `B307`, `SyntaxError`, `ZeroDivisionError`, ...).
    pub rule: String,
    /// The line of the extracted program (1-based; 0 = the whole program).
    pub line: usize,
    /// First character (Unicode scalar index) of the span in the response.
    pub char_start: usize,
    /// One past its last character.
    pub char_end: usize,
    /// The penalty, ≤ 0: −κ·w_c, to be split evenly over the tokens that overlap the span.
    pub penalty: f32,
}

/// One part's result inside a `composite` [`Verdict`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartVerdict {
    /// The part's `name` from the config.
    pub name: String,
    /// The part's reward in `[0, 1]`, before weighting.
    pub reward: f32,
    /// Whether the part passed.
    pub passed: bool,
    /// How the part's verification ended.
    pub outcome: Outcome,
}

impl Verdict {
    /// A verdict with `reward` clamped to `[0, 1]` (NaN becomes 0) and `passed` set from `outcome`.
    pub fn new(
        reward: f32,
        outcome: Outcome,
        extracted: Option<String>,
        details: serde_json::Value,
    ) -> Self {
        let reward = if reward.is_nan() {
            0.0
        } else {
            reward.clamp(0.0, 1.0)
        };
        Verdict {
            reward,
            passed: outcome.passed(),
            outcome,
            extracted,
            details,
            parts: Vec::new(),
            penalties: Vec::new(),
        }
    }

    /// Reward 0 with the given outcome and a `reason` detail.
    pub fn zero(outcome: Outcome, reason: impl Into<String>) -> Self {
        Verdict::new(
            0.0,
            outcome,
            None,
            serde_json::json!({ "reason": reason.into() }),
        )
    }
}

/// Rewards given to the binary outcomes of the math verifier.
///
/// `correct` for [`Outcome::Correct`], `wrong` for [`Outcome::Wrong`], `unparseable` for
/// [`Outcome::Unparseable`] and [`Outcome::Timeout`]. The defaults (1, 0, 0) are the plain RLVR
/// reward of DeepSeek-R1 / Tülu 3; a small format penalty can be expressed as
/// `unparseable < wrong` only within `[0, 1]`, so shaping is done downstream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardMap {
    /// Reward for a correct answer (default 1).
    #[serde(default = "one")]
    pub correct: f32,
    /// Reward for a wrong answer (default 0).
    #[serde(default)]
    pub wrong: f32,
    /// Reward when no answer was found, or the check timed out (default 0).
    #[serde(default)]
    pub unparseable: f32,
}

fn one() -> f32 {
    1.0
}

impl Default for RewardMap {
    fn default() -> Self {
        RewardMap {
            correct: 1.0,
            wrong: 0.0,
            unparseable: 0.0,
        }
    }
}

impl RewardMap {
    /// The reward for an outcome.
    pub fn reward(&self, outcome: Outcome) -> f32 {
        match outcome {
            Outcome::Correct => self.correct,
            Outcome::Wrong | Outcome::Partial => self.wrong,
            Outcome::Unparseable | Outcome::Timeout | Outcome::Crashed | Outcome::Error => {
                self.unparseable
            }
        }
    }

    /// Checks that every reward lies in `[0, 1]`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] naming the field.
    pub fn validate(&self, prefix: &str) -> crate::Result<()> {
        for (name, v) in [
            ("correct", self.correct),
            ("wrong", self.wrong),
            ("unparseable", self.unparseable),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(crate::Error::InvalidConfig {
                    field: format!("{prefix}.rewards.{name}"),
                    reason: format!("{v} is outside [0, 1]"),
                });
            }
        }
        Ok(())
    }
}
