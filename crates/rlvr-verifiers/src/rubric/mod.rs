//! The rubric verifier: a normalized weighted sum of per-criterion scores.

mod criteria;
mod http;
mod json_schema;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{Outcome, Reference, Verdict, Verifier};
pub use criteria::{Criterion, CriterionKind, LengthUnit};
pub use json_schema::validate as validate_json_schema;

/// Knobs of [`RubricVerifier`] (`[verifier] kind = "rubric"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RubricConfig {
    /// The judge for `llm_judge` criteria; without it such criteria score 0 with an error detail.
    #[serde(default)]
    pub judge: Option<JudgeConfig>,
}

/// An OpenAI-compatible chat-completions endpoint used by `llm_judge` criteria.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeConfig {
    /// Base URL, e.g. `http://127.0.0.1:8000/v1`; `POST {base_url}/chat/completions` is called.
    /// Plain `http://` only (a local or proxied judge).
    pub base_url: String,
    /// Model name sent in the request.
    pub model: String,
    /// API key sent as `Authorization: Bearer …`.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Name of an environment variable holding the API key (used when `api_key` is unset).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Request timeout in seconds (default 60).
    #[serde(default = "default_judge_timeout")]
    pub timeout_s: f64,
}

fn default_judge_timeout() -> f64 {
    60.0
}

impl RubricConfig {
    /// Validates and builds the verifier.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] for a judge URL that is not `http://` or a non-positive
    /// timeout.
    pub fn init(&self) -> crate::Result<RubricVerifier> {
        if let Some(j) = &self.judge {
            if !j.base_url.starts_with("http://") {
                return Err(crate::Error::InvalidConfig {
                    field: "rubric.judge.base_url".into(),
                    reason: format!("{:?} must start with http://", j.base_url),
                });
            }
            if !(j.timeout_s.is_finite() && j.timeout_s > 0.0) {
                return Err(crate::Error::InvalidConfig {
                    field: "rubric.judge.timeout_s".into(),
                    reason: format!("{} must be > 0", j.timeout_s),
                });
            }
        }
        Ok(RubricVerifier {
            config: self.clone(),
        })
    }
}

/// Scores a response by weighted criteria: `reward = Σ wᵢ sᵢ / Σ wᵢ` with `sᵢ ∈ [0, 1]`.
///
/// Outcome: `Correct` when every criterion scores 1, `Wrong` when the reward is 0, `Partial`
/// otherwise; `Error` for an invalid rubric (no criteria, a weight ≤ 0, a bad regex). The
/// details hold one entry per criterion (`id`, `weight`, `score`, `detail`).
#[derive(Debug, Clone)]
pub struct RubricVerifier {
    config: RubricConfig,
}

impl Verifier for RubricVerifier {
    fn verify(&self, response: &str, reference: &Reference) -> Verdict {
        let Reference::Rubric { criteria } = reference else {
            return Verdict::zero(Outcome::Error, "rubric verifier needs a rubric reference");
        };
        if criteria.is_empty() {
            return Verdict::zero(Outcome::Error, "rubric has no criteria");
        }
        if let Some(c) = criteria
            .iter()
            .find(|c| !(c.weight.is_finite() && c.weight > 0.0))
        {
            return Verdict::zero(
                Outcome::Error,
                format!("criterion `{}`: weight {} must be > 0", c.id, c.weight),
            );
        }
        let mut results = Vec::with_capacity(criteria.len());
        let (mut total, mut weights, mut all, mut errors) = (0.0, 0.0, true, 0);
        for c in criteria {
            let (score, detail) = match criteria::score(c, response, self.config.judge.as_ref()) {
                Ok((s, d)) => (s.clamp(0.0, 1.0), d),
                Err(e) => {
                    errors += 1;
                    (0.0, format!("error: {e}"))
                }
            };
            total += c.weight * score;
            weights += c.weight;
            all &= score >= 1.0;
            results
                .push(json!({ "id": c.id, "weight": c.weight, "score": score, "detail": detail }));
        }
        let reward = (total / weights) as f32;
        let outcome = if errors == criteria.len() {
            Outcome::Error
        } else if all {
            Outcome::Correct
        } else if reward <= 0.0 {
            Outcome::Wrong
        } else {
            Outcome::Partial
        };
        Verdict::new(
            reward,
            outcome,
            None,
            json!({ "criteria": results, "errors": errors }),
        )
    }

    fn name(&self) -> &'static str {
        "rubric"
    }
}
