//! K2V: the Knowledge-to-Verification reward (methods-extra §17; "Knowledge-to-Verification:
//! Exploring RLVR for LLMs in Knowledge-Intensive Domains", ACL 2026, arXiv 2605.18261).
//!
//! Fill-in-the-blank questions synthesized from a knowledge graph are scored by the paper's
//! composition (its code, `custom_reward_fn/K2V.py`):
//!
//! ```text
//! score = answer_weight · match + checklist_weight · checklist · match + format_weight · format
//! ```
//!
//! - match ∈ {0, 1}: the text between the answer tags equals the gold answer (after trimming
//!   whitespace; case-sensitive). Hardened (**\[PROPOSED\]**, [`tags::Tags::answer`]): both
//!   answer tags exactly once and outside the reasoning, so a second answer block, an answer
//!   only in the reasoning or an empty block never counts.
//! - checklist ∈ [0, 1]: satisfied / total criteria, **gated** on the match (0 with a wrong
//!   answer). Source pluggable ([`checklist::Checklist`]); shipped: the rule-based checklist
//!   (**\[PROPOSED\]**, [`checklist::RuleChecklist`]).
//! - format: [`format::format_score`], the paper's tag shaping (≤ 0.75 + `trailing_penalty`).
//!
//! Defaults are the paper's (6, 1, the format as is, 0.001 per trailing character);
//! `format_weight` is a **\[PROPOSED\]** knob (0 turns the shaping off: the exact-match
//! baseline). A [`crate::Verdict`]'s reward lies in `[0, 1]`, so the verdict carries
//! `score / max_score` (max_score = answer_weight + checklist_weight + format_weight ·
//! (0.75 + trailing_penalty)); a positive rescaling, which group-normalized advantages do not
//! see. The raw score and its terms are in the verdict's details, and the three terms are its
//! parts (`answer`, `checklist`, `format`, each in `[0, 1]`: `reward/part/<name>` in the
//! trainer). A format term made negative by a long tail is clamped at 0 in the reward only.

pub mod checklist;
pub mod format;
pub mod tags;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{Outcome, PartVerdict, Reference, Verdict, Verifier};
use checklist::{Checklist, ChecklistSource, RuleChecklist, RuleCriterion};
use format::{format_score, max_format_score};
use tags::TagSet;

/// Knobs of [`K2vVerifier`] (`[verifier] kind = "k2v"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct K2vConfig {
    /// Reward of a correct answer (default 6.0, the paper's).
    #[serde(default = "default_answer_weight")]
    pub answer_weight: f64,
    /// Weight of the answer-gated checklist score (default 1.0, the paper's).
    #[serde(default = "one")]
    pub checklist_weight: f64,
    /// Weight of the format term (default 1.0: the paper's sum) **\[PROPOSED\]** knob; 0 = no
    /// format shaping.
    #[serde(default = "one")]
    pub format_weight: f64,
    /// Penalty per character after the closing answer tag, applied twice as the paper's code
    /// does (default 0.001; see [`format::format_score`]).
    #[serde(default = "default_trailing_penalty")]
    pub trailing_penalty: f64,
    /// The tag strings (default `xml`, the paper's; `compact` for the bundled model).
    #[serde(default)]
    pub tags: TagSet,
    /// Where the checklist comes from (default and only source here: `rules`).
    #[serde(default)]
    pub checklist: ChecklistSource,
    /// The rules of the `rules` checklist (default all: `nonempty`, `adjacent`, `answer`)
    /// **\[PROPOSED\]**.
    #[serde(default = "default_criteria")]
    pub criteria: Vec<RuleCriterion>,
}

fn default_answer_weight() -> f64 {
    6.0
}
fn one() -> f64 {
    1.0
}
fn default_trailing_penalty() -> f64 {
    0.001
}
fn default_criteria() -> Vec<RuleCriterion> {
    RuleCriterion::ALL.to_vec()
}

impl Default for K2vConfig {
    fn default() -> Self {
        K2vConfig {
            answer_weight: default_answer_weight(),
            checklist_weight: one(),
            format_weight: one(),
            trailing_penalty: default_trailing_penalty(),
            tags: TagSet::default(),
            checklist: ChecklistSource::default(),
            criteria: default_criteria(),
        }
    }
}

impl K2vConfig {
    /// Checks the knobs.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] naming the key (`verifier.answer_weight`, ...): a weight
    /// or penalty negative or not finite, every weight 0, a repeated criterion, or a checklist
    /// with weight > 0 and no criterion.
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |field: &str, reason: String| crate::Error::InvalidConfig {
            field: format!("verifier.{field}"),
            reason,
        };
        for (field, v) in [
            ("answer_weight", self.answer_weight),
            ("checklist_weight", self.checklist_weight),
            ("format_weight", self.format_weight),
            ("trailing_penalty", self.trailing_penalty),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(field, format!("{v} must be finite and >= 0")));
            }
        }
        if self.answer_weight + self.checklist_weight + self.format_weight <= 0.0 {
            return Err(bad(
                "answer_weight",
                "answer_weight, checklist_weight and format_weight are all 0: every response \
                 would score 0"
                    .into(),
            ));
        }
        for (i, c) in self.criteria.iter().enumerate() {
            if self.criteria[..i].contains(c) {
                return Err(bad("criteria", format!("{c:?} is listed twice")));
            }
        }
        if self.criteria.is_empty() && self.checklist_weight > 0.0 {
            return Err(bad(
                "criteria",
                "no criterion and checklist_weight > 0: the checklist would always score 0 \
                 (set checklist_weight = 0 to turn it off)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Validates the knobs and builds the verifier.
    ///
    /// # Errors
    /// As [`K2vConfig::validate`].
    pub fn init(&self) -> crate::Result<K2vVerifier> {
        self.validate()?;
        let checklist: Box<dyn Checklist> = match self.checklist {
            ChecklistSource::Rules => Box::new(RuleChecklist {
                criteria: self.criteria.clone(),
            }),
        };
        Ok(K2vVerifier {
            config: self.clone(),
            format_re: self.tags.tags().format_regex(),
            checklist,
        })
    }

    /// The largest score: `answer_weight + checklist_weight + format_weight · (0.75 +
    /// trailing_penalty)`, which the verdict's reward divides by.
    pub fn max_score(&self) -> f64 {
        self.answer_weight
            + self.checklist_weight
            + self.format_weight * max_format_score(self.trailing_penalty)
    }
}

/// The K2V reward's terms for one response (before normalization).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct K2vScore {
    /// Whether the answer matches the gold answer.
    pub matched: bool,
    /// The checklist fraction in `[0, 1]`, 0 without a match (the gate).
    pub checklist: f64,
    /// The format term ([`format::format_score`]).
    pub format: f64,
    /// `answer_weight · match + checklist_weight · checklist + format_weight · format`.
    pub score: f64,
}

/// The K2V verifier: answer match, answer-gated checklist and format shaping (see the module).
pub struct K2vVerifier {
    config: K2vConfig,
    format_re: regex::Regex,
    checklist: Box<dyn Checklist>,
}

impl std::fmt::Debug for K2vVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("K2vVerifier")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl K2vVerifier {
    /// The terms and raw score of `response` for the gold `answer` and the answer's
    /// `adjacent` entities.
    pub fn score(&self, response: &str, answer: &str, adjacent: &[String]) -> K2vScore {
        let c = &self.config;
        let tags = c.tags.tags();
        let matched = tags
            .answer(response)
            .is_some_and(|a| !a.is_empty() && a == answer.trim());
        let checklist = if matched {
            let (ok, total) = self.checklist.judge(tags.think(response), answer, adjacent);
            if total == 0 {
                0.0
            } else {
                ok as f64 / total as f64
            }
        } else {
            0.0
        };
        let format = format_score(response, &tags, &self.format_re, c.trailing_penalty);
        let score = c.answer_weight * f64::from(u8::from(matched))
            + c.checklist_weight * checklist
            + c.format_weight * format;
        K2vScore {
            matched,
            checklist,
            format,
            score,
        }
    }
}

impl Verifier for K2vVerifier {
    fn verify(&self, response: &str, reference: &Reference) -> Verdict {
        let Reference::K2v { answer, adjacent } = reference else {
            return Verdict::zero(Outcome::Error, "k2v needs a k2v reference");
        };
        let s = self.score(response, answer, adjacent);
        let extracted = self.config.tags.tags().answer(response).map(str::to_string);
        let outcome = match (s.matched, &extracted) {
            (true, _) => Outcome::Correct,
            (false, Some(_)) => Outcome::Wrong,
            (false, None) => Outcome::Unparseable,
        };
        let max = self.config.max_score();
        let details = json!({"k2v": {"score": s.score, "match": s.matched,
            "checklist": s.checklist, "format": s.format, "max_score": max}});
        let mut verdict = Verdict::new((s.score / max) as f32, outcome, extracted, details);
        let format_max = max_format_score(self.config.trailing_penalty);
        verdict.parts = [
            ("answer", f64::from(u8::from(s.matched))),
            ("checklist", s.checklist),
            ("format", (s.format / format_max).clamp(0.0, 1.0)),
        ]
        .into_iter()
        .map(|(name, v)| PartVerdict {
            name: name.into(),
            reward: v as f32,
            passed: s.matched,
            outcome,
        })
        .collect();
        verdict
    }

    fn check_reference(&self, reference: &Reference) -> Result<(), String> {
        match reference {
            Reference::K2v { answer, .. } if answer.trim().is_empty() => {
                Err("the gold answer is empty: no response can match it".into())
            }
            Reference::K2v { .. } => Ok(()),
            _ => Err("k2v needs a k2v reference (`answer`, `adjacent`)".into()),
        }
    }

    fn name(&self) -> &'static str {
        "k2v"
    }
}
