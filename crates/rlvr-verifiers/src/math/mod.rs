//! The math verifier: extract → normalize → parse → equivalence, one file per stage.

pub mod answer;
pub mod bare;
pub mod equiv;
pub mod expr;
pub mod extract;
pub mod final_form;
pub mod normalize;
pub mod num;
mod token;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::verdict::RewardMap;
use crate::{Outcome, Reference, Verdict, Verifier};
pub use extract::{Fallback, Source};

/// Knobs of [`MathVerifier`] (`[verifier] kind = "math"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MathConfig {
    /// What to take from a response without `\boxed{}`, `####` or "the answer is": `last_number`
    /// (default: a bare answer, see [`bare::bare_answer`], else the last number, the lenient
    /// GSM8K convention), `bare` (a bare answer only) or `none`.
    #[serde(default)]
    pub fallback: Fallback,
    /// Relative tolerance for inexact values (default 1e-6: radicals and π agree to ~1e-15, a
    /// rounded decimal such as 0.333 for 1/3 does not) **\[PROPOSED\]**.
    #[serde(default = "default_rel_tol")]
    pub rel_tol: f64,
    /// Absolute tolerance near zero (default 1e-9) **\[PROPOSED\]**.
    #[serde(default = "default_abs_tol")]
    pub abs_tol: f64,
    /// Random points for the algebraic identity test (default 6) **\[PROPOSED\]**.
    #[serde(default = "default_points")]
    pub points: usize,
    /// Rewards per outcome.
    #[serde(default)]
    pub rewards: RewardMap,
}

fn default_rel_tol() -> f64 {
    1e-6
}
fn default_abs_tol() -> f64 {
    1e-9
}
fn default_points() -> usize {
    6
}

impl Default for MathConfig {
    fn default() -> Self {
        MathConfig {
            fallback: Fallback::default(),
            rel_tol: default_rel_tol(),
            abs_tol: default_abs_tol(),
            points: default_points(),
            rewards: RewardMap::default(),
        }
    }
}

impl MathConfig {
    /// Validates the knobs and builds the verifier.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] for a negative or non-finite tolerance, zero points, or a
    /// reward outside `[0, 1]`.
    pub fn init(&self) -> crate::Result<MathVerifier> {
        for (field, v) in [("rel_tol", self.rel_tol), ("abs_tol", self.abs_tol)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(crate::Error::InvalidConfig {
                    field: format!("math.{field}"),
                    reason: format!("{v} must be finite and >= 0"),
                });
            }
        }
        if self.points == 0 || self.points > 64 {
            return Err(crate::Error::InvalidConfig {
                field: "math.points".into(),
                reason: format!("{} must be in 1..=64", self.points),
            });
        }
        self.rewards.validate("math")?;
        Ok(MathVerifier {
            config: self.clone(),
        })
    }
}

/// Checks a response's final answer against a gold answer (MATH, GSM8K and similar).
///
/// # Pipeline
/// 1. [`extract::extract`] the response's answer (the gold too, when it is a full solution);
///    a response that is nothing but its answer, or prose ending on one, is read whole
///    ([`bare::bare_answer`]) before the last-number fallback;
/// 2. [`normalize::normalize`] both; equal strings are correct at once (the hot path for integer
///    answers);
/// 3. [`answer::parse_answer`] both into structures; a gold written as a number needs an answer
///    written as one ([`final_form`]: `37+45` is not an answer to 82, so a policy cannot echo its
///    prompt's arithmetic);
/// 4. compare with [`equiv::equivalent`]: exact rationals, numeric tolerance, identity of
///    expressions at random points, equations, intervals, tuples, sets, matrices.
///
/// Work is bounded by input size (answers over [`answer::MAX_ANSWER_CHARS`] compare as text,
/// parsing depth and token count are capped), so one check takes microseconds to a few
/// milliseconds and no answer can stall a batch.
#[derive(Debug, Clone)]
pub struct MathVerifier {
    config: MathConfig,
}

impl MathVerifier {
    /// Whether `response`'s answer matches `gold` (a bare answer or a full solution): the core
    /// of [`Verifier::verify`], returning the outcome, the extracted answer and details.
    pub fn check(
        &self,
        response: &str,
        gold: &str,
    ) -> (Outcome, Option<String>, serde_json::Value) {
        let gold_answer =
            extract::extract(gold, Fallback::None).map_or(gold.to_string(), |(s, _)| s);
        let Some((raw, source)) = extract::extract(response, self.config.fallback) else {
            return (
                Outcome::Unparseable,
                None,
                json!({ "reason": "no final answer found" }),
            );
        };
        let (ours, theirs) = (
            normalize::normalize(&raw),
            normalize::normalize(&gold_answer),
        );
        let details = json!({ "source": source, "answer": ours, "gold": theirs });
        if ours.is_empty() {
            return (Outcome::Unparseable, Some(raw), details);
        }
        if ours == theirs {
            return (Outcome::Correct, Some(raw), details);
        }
        let (ours_parsed, theirs_parsed) =
            (answer::parse_answer(&ours), answer::parse_answer(&theirs));
        if final_form::is_numeral_answer(&theirs_parsed)
            && !final_form::in_numeral_form(&ours_parsed)
        {
            let mut details = details;
            details["reason"] = json!(
                "the gold is a number and the answer is not written as one (unevaluated \
                 arithmetic such as `37+45` for 82 is not an answer)"
            );
            return (Outcome::Wrong, Some(raw), details);
        }
        let tol = equiv::Tolerance {
            rel: self.config.rel_tol,
            abs: self.config.abs_tol,
            points: self.config.points,
        };
        let same = equiv::equivalent(&ours_parsed, &theirs_parsed, &tol);
        (
            if same {
                Outcome::Correct
            } else {
                Outcome::Wrong
            },
            Some(raw),
            details,
        )
    }
}

impl Verifier for MathVerifier {
    fn verify(&self, response: &str, reference: &Reference) -> Verdict {
        let Reference::Math { answer } = reference else {
            return Verdict::zero(Outcome::Error, "math verifier needs a math reference");
        };
        let (outcome, extracted, details) = self.check(response, answer);
        Verdict::new(
            self.config.rewards.reward(outcome),
            outcome,
            extracted,
            details,
        )
    }

    /// A gold answer is usable when the verifier's own rules read it: its final answer (the
    /// whole text when it has no `\boxed{}`, `####` or "the answer is") normalizes to a
    /// non-empty string, and a response that boxes exactly that answer is judged correct.
    fn check_reference(&self, reference: &Reference) -> Result<(), String> {
        let Reference::Math { answer } = reference else {
            return Err("the math verifier needs a math reference (a gold `answer`)".into());
        };
        let gold = extract::extract(answer, Fallback::None).map_or(answer.clone(), |(s, _)| s);
        if normalize::normalize(&gold).is_empty() {
            return Err(format!(
                "gold answer {answer:?} is empty once normalized: no response could match it"
            ));
        }
        let (outcome, _, _) = self.check(&format!("\\boxed{{{gold}}}"), answer);
        if outcome == Outcome::Correct {
            Ok(())
        } else {
            Err(format!(
                "gold answer {answer:?} is not readable by the math verifier (its final answer \
                 {gold:?} does not match itself when boxed: unbalanced braces or a malformed \
                 \\boxed{{}}?)"
            ))
        }
    }

    fn name(&self) -> &'static str {
        "math"
    }
}
