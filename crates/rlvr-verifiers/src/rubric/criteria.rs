//! Rubric criteria: what each kind checks and how it scores in `[0, 1]`.

use serde::{Deserialize, Serialize};

use super::JudgeConfig;
use crate::math::{Fallback, extract, normalize};

/// Largest compiled regex (bytes) a rubric may ask for; a bigger pattern is a criterion error.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// One weighted criterion: `{"id": "cites", "weight": 2, "kind": "regex", "pattern": "\\[\\d+\\]"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Criterion {
    /// Name reported in the details.
    pub id: String,
    /// Weight (> 0, default 1).
    #[serde(default = "one")]
    pub weight: f64,
    /// What is checked.
    #[serde(flatten)]
    pub kind: CriterionKind,
}

fn one() -> f64 {
    1.0
}

/// Unit of a length criterion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LengthUnit {
    /// Unicode scalar values.
    #[default]
    Chars,
    /// Whitespace-separated words.
    Words,
}

/// What a criterion checks. Each scores 1 (holds) or 0, except `llm_judge` (the judge's score).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CriterionKind {
    /// The response matches a regular expression (Rust `regex` syntax).
    Regex {
        /// The pattern.
        pattern: String,
    },
    /// The response contains a string.
    Contains {
        /// The string.
        text: String,
        /// Compare case-insensitively.
        #[serde(default)]
        case_insensitive: bool,
    },
    /// The response does not contain a string.
    NotContains {
        /// The string.
        text: String,
        /// Compare case-insensitively.
        #[serde(default)]
        case_insensitive: bool,
    },
    /// The response's final answer (extracted as by the math verifier) is a number within
    /// `tolerance` of `value`.
    Numeric {
        /// The expected value.
        value: f64,
        /// Absolute tolerance (default 0).
        #[serde(default)]
        tolerance: f64,
    },
    /// The response's length lies in `[min, max]`.
    Length {
        /// Lower bound (inclusive).
        #[serde(default)]
        min: Option<usize>,
        /// Upper bound (inclusive).
        #[serde(default)]
        max: Option<usize>,
        /// Counting unit.
        #[serde(default)]
        unit: LengthUnit,
    },
    /// The response (or its fenced ```json block) is JSON valid under a JSON-Schema subset.
    JsonSchema {
        /// The schema (`type`, `properties`, `required`, `additionalProperties`, `items`,
        /// `enum`, `const`, `minimum`, `maximum`, `minLength`, `maxLength`, `minItems`,
        /// `maxItems`).
        schema: serde_json::Value,
    },
    /// An LLM judge scores the response against a question; it must answer exactly
    /// `{"score": x}` with `x` in [0, 1] (anything else is an error, scored 0).
    LlmJudge {
        /// What the judge is asked about the response.
        question: String,
    },
}

/// Scores one criterion: `Ok((score, detail))`, or `Err` when the criterion itself is broken
/// (bad regex, judge unreachable).
pub(super) fn score(
    c: &Criterion,
    response: &str,
    judge: Option<&JudgeConfig>,
) -> Result<(f64, String), String> {
    let bool_score = |ok: bool, what: String| Ok((if ok { 1.0 } else { 0.0 }, what));
    match &c.kind {
        CriterionKind::Regex { pattern } => {
            let re = regex::RegexBuilder::new(pattern)
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map_err(|e| format!("bad regex: {e}"))?;
            bool_score(re.is_match(response), format!("regex {pattern:?}"))
        }
        CriterionKind::Contains {
            text,
            case_insensitive,
        } => bool_score(
            contains(response, text, *case_insensitive),
            format!("contains {text:?}"),
        ),
        CriterionKind::NotContains {
            text,
            case_insensitive,
        } => bool_score(
            !contains(response, text, *case_insensitive),
            format!("does not contain {text:?}"),
        ),
        CriterionKind::Numeric { value, tolerance } => {
            let Some((raw, _)) = extract::extract(response, Fallback::LastNumber) else {
                return bool_score(false, "no number found".into());
            };
            let norm = normalize::normalize(&raw);
            let got = crate::math::expr::parse(&norm)
                .ok()
                .map(|e| e.eval(&Default::default()))
                .filter(|z| z.im == 0.0 && z.re.is_finite())
                .map(|z| z.re);
            match got {
                Some(x) => bool_score((x - value).abs() <= *tolerance, format!("found {x}")),
                None => bool_score(false, format!("{raw:?} is not a number")),
            }
        }
        CriterionKind::Length { min, max, unit } => {
            let n = match unit {
                LengthUnit::Chars => response.chars().count(),
                LengthUnit::Words => response.split_whitespace().count(),
            };
            let ok = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
            bool_score(ok, format!("length {n}"))
        }
        CriterionKind::JsonSchema { schema } => {
            let Some(value) = find_json(response) else {
                return bool_score(false, "no JSON found".into());
            };
            match super::json_schema::validate(&value, schema) {
                Ok(()) => bool_score(true, "valid".into()),
                Err(e) => bool_score(false, e),
            }
        }
        CriterionKind::LlmJudge { question } => {
            let judge = judge.ok_or("no [verifier.judge] configured")?;
            let (score, said) =
                super::http::judge(judge, question, response).map_err(|e| e.to_string())?;
            Ok((score, format!("judge said {said:?}")))
        }
    }
}

fn contains(hay: &str, needle: &str, case_insensitive: bool) -> bool {
    if case_insensitive {
        hay.to_lowercase().contains(&needle.to_lowercase())
    } else {
        hay.contains(needle)
    }
}

/// The JSON value of a response: its fenced ```json block, the whole text, or the span from the
/// first `{`/`[` to the last `}`/`]`.
fn find_json(response: &str) -> Option<serde_json::Value> {
    if let Some(start) = response.find("```") {
        let body = &response[start + 3..];
        let body = body.split_once('\n').map_or(body, |(_, rest)| rest);
        if let Some(end) = body.find("```")
            && let Ok(v) = serde_json::from_str(&body[..end])
        {
            return Some(v);
        }
    }
    if let Ok(v) = serde_json::from_str(response.trim()) {
        return Some(v);
    }
    let start = response.find(['{', '['])?;
    let end = response.rfind(['}', ']'])?;
    (end > start)
        .then(|| serde_json::from_str(&response[start..=end]).ok())
        .flatten()
}
