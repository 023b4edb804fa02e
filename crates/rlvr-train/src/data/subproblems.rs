//! SCRL's verifiable subproblems of a record (methods-extra §11; arXiv 2605.22074): the chain
//! q_1..q_L whose last is the original problem, read from a record field or derived from a
//! GSM8K solution's calculation annotations.
//!
//! The paper derives them offline with an LLM; here a task ships them (the bundled chain task
//! writes `"subproblems": [{"question": "37+45", "answer": "82"}, …]`) or GSM8K's reference
//! solution already holds them: each `<<48/2=24>>` is a checkable step whose answer is the value
//! after its last `=`. A derived chain keeps the solution's calculations in order, drops the ones
//! whose value is the gold answer (the original problem asks exactly that) and ends with the
//! original problem and its gold answer (`#### 72`).

use rlvr_objectives::shaping::ScrlConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::data::Example;

/// One subproblem: a question and its checkable answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subproblem {
    /// The question (for a GSM8K annotation, its expression: `48/2`).
    pub question: String,
    /// The gold answer (`24`).
    pub answer: String,
}

/// The subproblems of `example` under `[stages.scrl]`: derived from `annotations_field` when it
/// is set, else read from `subproblems_field`, then cut to `max_subproblems` ([`keep_last`]).
///
/// # Errors
/// A message naming the field that is missing or malformed.
pub fn subproblems_of(cfg: &ScrlConfig, example: &Example) -> Result<Vec<Subproblem>, String> {
    let chain = if cfg.annotations_field.is_empty() {
        from_field(&example.record, &cfg.subproblems_field)?
    } else {
        let field = &cfg.annotations_field;
        let solution = example
            .record
            .get(field)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("has no string `{field}` (SCRL's annotated solution)"))?;
        from_annotations(example.prompt.as_deref().unwrap_or_default(), solution)
            .ok_or_else(|| format!("`{field}` has no `####` final answer"))?
    };
    Ok(keep_last(chain, cfg.max_subproblems))
}

/// The subproblems in `record[field]` (`[{"question", "answer"}, …]`, the original last).
///
/// # Errors
/// A message naming the field when it is missing, not a list, empty, or holds an entry without a
/// string or number `answer`.
pub fn from_field(record: &Value, field: &str) -> Result<Vec<Subproblem>, String> {
    let list = record
        .get(field)
        .ok_or_else(|| format!("has no `{field}` (SCRL's subproblems)"))?
        .as_array()
        .ok_or_else(|| format!("`{field}` must be a list of {{\"question\", \"answer\"}}"))?;
    if list.is_empty() {
        return Err(format!(
            "`{field}` is empty: it must end with the original problem"
        ));
    }
    list.iter()
        .enumerate()
        .map(|(k, s)| {
            let text = |key: &str| match s.get(key) {
                Some(Value::String(t)) => Some(t.clone()),
                Some(Value::Number(n)) => Some(n.to_string()),
                _ => None,
            };
            Ok(Subproblem {
                question: text("question").unwrap_or_default(),
                answer: text("answer")
                    .ok_or_else(|| format!("`{field}`[{k}] has no string or number `answer`"))?,
            })
        })
        .collect()
}

/// The chain of a GSM8K-style `solution`: one subproblem per `<<expr=value>>` annotation, in
/// order, except those whose value is the gold answer, then `question` with the gold answer
/// (the text after the solution's last `####`). `None` when the solution has no `####`.
pub fn from_annotations(question: &str, solution: &str) -> Option<Vec<Subproblem>> {
    let gold = solution.rsplit_once("####")?.1.trim().to_string();
    let mut out = Vec::new();
    let mut rest = solution;
    while let Some(open) = rest.find("<<") {
        let body = &rest[open + 2..];
        let Some(close) = body.find(">>") else {
            break;
        };
        if let Some((expr, value)) = body[..close].rsplit_once('=') {
            let (expr, value) = (expr.trim(), value.trim());
            if !expr.is_empty() && !value.is_empty() && !same_number(value, &gold) {
                out.push(Subproblem {
                    question: expr.to_string(),
                    answer: value.to_string(),
                });
            }
        }
        rest = &body[close + 2..];
    }
    out.push(Subproblem {
        question: question.to_string(),
        answer: gold,
    });
    Some(out)
}

/// `chain` cut to at most `max` subproblems: the last `max − 1` intermediate steps and the
/// original problem (the steps nearest the answer are the ones a long chain keeps).
pub fn keep_last(mut chain: Vec<Subproblem>, max: usize) -> Vec<Subproblem> {
    if chain.len() > max {
        chain.drain(..chain.len() - max);
    }
    chain
}

/// Whether two numerals are the same number (`1,000` = `1000`, `5.0` = `5`).
fn same_number(a: &str, b: &str) -> bool {
    let parse = |s: &str| s.replace([',', '$'], "").parse::<f64>().ok();
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(q: &str, a: &str) -> Subproblem {
        Subproblem {
            question: q.into(),
            answer: a.into(),
        }
    }

    /// GSM8K's first training solution: 48/2 = 24 is a step; 48+24 = 72 is the gold answer, so
    /// the original problem stands for it.
    #[test]
    fn gsm8k_annotations_become_the_chain() {
        let solution = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = \
                        <<48+24=72>>72 clips altogether in April and May.\n#### 72";
        let got = from_annotations("How many?", solution).unwrap();
        assert_eq!(got, [sp("48/2", "24"), sp("How many?", "72")]);
        let comma = "a <<2*500=1000>> b <<1000+5=1,005>>\n#### 1,005";
        assert_eq!(
            from_annotations("Q", comma).unwrap(),
            [sp("2*500", "1000"), sp("Q", "1,005")]
        );
        assert_eq!(from_annotations("Q", "no final line"), None);
        assert_eq!(from_annotations("Q", "#### 3").unwrap(), [sp("Q", "3")]);
    }

    #[test]
    fn long_chains_keep_their_last_steps() {
        let chain: Vec<Subproblem> = (0..7).map(|k| sp(&k.to_string(), "1")).collect();
        let kept = keep_last(chain, 3);
        assert_eq!(
            kept.iter().map(|s| s.question.as_str()).collect::<Vec<_>>(),
            ["4", "5", "6"]
        );
    }

    #[test]
    fn a_field_is_read_or_refused_by_name() {
        let r: Value = serde_json::json!({"subs": [{"question": "37+45", "answer": "82"},
                                                  {"question": "37+45-20", "answer": 62}]});
        assert_eq!(
            from_field(&r, "subs").unwrap(),
            [sp("37+45", "82"), sp("37+45-20", "62")]
        );
        for (record, needle) in [
            (serde_json::json!({}), "has no `subs`"),
            (serde_json::json!({"subs": 3}), "must be a list"),
            (serde_json::json!({"subs": []}), "is empty"),
            (
                serde_json::json!({"subs": [{"question": "q"}]}),
                "`subs`[0] has no",
            ),
        ] {
            let err = from_field(&record, "subs").unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }
}
