//! SRaR's step judgments from a dataset line: a deterministic stand-in for the paper's judge.
//!
//! SRaR (methods-extra §7) asks an LLM judge whether each rubric item of a prompt holds for a
//! response and to which `### Step N:` it belongs. Without a judge model, a training line may
//! carry its step rubric with a literal check per item \[PROPOSED]:
//!
//! ```json
//! {"id": "p1", "prompt": "...", "answer": "4",
//!  "step_rubric": [{"kind": "suggest", "step": 1, "contains": "2+2"},
//!                  {"kind": "pitfall", "step": 2, "contains": "=5"}]}
//! ```
//!
//! An item is satisfied iff the response contains its `contains` text. A line without
//! `step_rubric` gives no judgments (no step offsets for its responses).

use rlvr_objectives::shaping::{RubricItemKind, StepJudgment};
use serde::Deserialize;

use crate::data::Example;
use crate::error::{Error, Result};

/// One item of a line's `step_rubric`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepItem {
    kind: RubricItemKind,
    /// 1-indexed step; 0 = whole solution; −1 = no relevant step.
    step: i32,
    /// The literal text whose presence satisfies the item.
    contains: String,
}

/// The judgments of `response` against the `step_rubric` of `example` (empty without one).
pub fn step_judgments(example: &Example, response: &str) -> Result<Vec<StepJudgment>> {
    let Some(value) = example.record.get("step_rubric") else {
        return Ok(Vec::new());
    };
    let items: Vec<StepItem> = serde_json::from_value(value.clone()).map_err(|e| {
        Error::Config(format!(
            "example `{}`: step_rubric: {e} (expected [{{\"kind\", \"step\", \"contains\"}}])",
            example.id
        ))
    })?;
    Ok(items
        .into_iter()
        .map(|it| StepJudgment {
            kind: it.kind,
            satisfied: response.contains(&it.contains),
            step: it.step,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(record: serde_json::Value) -> Example {
        Example {
            id: "p1".into(),
            prompt: Some("1+1=".into()),
            messages: None,
            record,
        }
    }

    #[test]
    fn items_are_satisfied_by_their_literal_text() {
        let ex = example(serde_json::json!({
            "step_rubric": [{"kind": "suggest", "step": 1, "contains": "12"},
                            {"kind": "pitfall", "step": 0, "contains": "x"}]
        }));
        let j = step_judgments(&ex, "12").unwrap();
        assert_eq!(j.len(), 2);
        assert!(j[0].satisfied && j[0].kind == RubricItemKind::Suggest && j[0].step == 1);
        assert!(!j[1].satisfied && j[1].kind == RubricItemKind::Pitfall);
        assert!(
            step_judgments(&example(serde_json::json!({})), "12")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_malformed_rubric_names_the_example() {
        let ex = example(serde_json::json!({"step_rubric": [{"kind": "maybe", "step": 1}]}));
        let err = step_judgments(&ex, "12").unwrap_err().to_string();
        assert!(err.contains("p1") && err.contains("step_rubric"), "{err}");
    }
}
