//! The checklist term of the K2V reward (methods-extra §17, "Checklist synthesis" and "Reward"):
//! the fraction of a question's criteria the reasoning satisfies, paid only with a correct
//! answer.
//!
//! The paper asks a judge LLM a yes/no question per criterion of an LLM-written checklist. The
//! source is pluggable ([`Checklist`]); this crate ships the deterministic rule-based checklist
//! that the specification's §24 "Judge" note allows for CPU work (**\[PROPOSED\]**: the rules
//! are ours). An LLM judge is not part of this module.

use serde::{Deserialize, Serialize};

/// A source of checklist scores: how many of a question's criteria a response satisfies.
pub trait Checklist: Send + Sync {
    /// `(satisfied, total)` for the reasoning `think` of a response whose answer is `answer`,
    /// with `adjacent` the graph neighbours of the answer that the question does not show.
    fn judge(&self, think: &str, answer: &str, adjacent: &[String]) -> (usize, usize);
}

/// Where the checklist comes from (`verifier.checklist`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChecklistSource {
    /// [`RuleChecklist`]: criteria checked by rules (**\[PROPOSED\]**).
    #[default]
    Rules,
}

/// One rule of [`RuleChecklist`] (**\[PROPOSED\]**).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleCriterion {
    /// The reasoning is not empty (after trimming whitespace).
    Nonempty,
    /// The reasoning names an entity adjacent to the answer in the graph that the question
    /// does not show (the record's `adjacent`): it recalls related knowledge.
    Adjacent,
    /// The reasoning names the answer it gives.
    Answer,
}

impl RuleCriterion {
    /// Every rule, in the default order of `verifier.criteria`.
    pub const ALL: [RuleCriterion; 3] = [
        RuleCriterion::Nonempty,
        RuleCriterion::Adjacent,
        RuleCriterion::Answer,
    ];
}

/// The rule-based checklist: each criterion of `criteria` checked on the reasoning.
/// Entity names are matched case-insensitively as whole words (no letter or digit on either
/// side), so `ZAR` is not found in `ZARO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleChecklist {
    /// The criteria, each counted once.
    pub criteria: Vec<RuleCriterion>,
}

impl Checklist for RuleChecklist {
    fn judge(&self, think: &str, answer: &str, adjacent: &[String]) -> (usize, usize) {
        let satisfied = self
            .criteria
            .iter()
            .filter(|c| match c {
                RuleCriterion::Nonempty => !think.trim().is_empty(),
                RuleCriterion::Adjacent => adjacent.iter().any(|e| mentions(think, e)),
                RuleCriterion::Answer => mentions(think, answer),
            })
            .count();
        (satisfied, self.criteria.len())
    }
}

/// Whether `text` names `entity` as a whole word, case-insensitively (an empty entity is never
/// named).
pub fn mentions(text: &str, entity: &str) -> bool {
    let entity = entity.trim();
    if entity.is_empty() {
        return false;
    }
    let (text, entity) = (text.to_lowercase(), entity.to_lowercase());
    let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    text.match_indices(&entity).any(|(at, _)| {
        boundary(text[..at].chars().next_back())
            && boundary(text[at + entity.len()..].chars().next())
    })
}
