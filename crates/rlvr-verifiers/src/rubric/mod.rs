//! The rubric verifier: a normalized weighted sum of per-criterion scores.

mod criteria;
mod http;
mod json_schema;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{Outcome, Reference, Verdict, Verifier};
pub use criteria::{Criterion, CriterionKind, LengthUnit};
pub use http::JudgeError;
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
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`;
    /// `POST {base_url}/chat/completions` is called. `https://` (rustls), or plain `http://` to a
    /// loopback host only (`127.0.0.0/8`, `[::1]`, `localhost`), so a key never crosses a network
    /// in clear text.
    pub base_url: String,
    /// Model name sent in the request.
    pub model: String,
    /// API key sent as `Authorization: Bearer …`.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Name of an environment variable holding the API key (used when `api_key` is unset).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Limit of one attempt as a whole, in seconds (default 60): resolving, connecting, TLS,
    /// sending and reading the full reply, not per read.
    #[serde(default = "default_judge_timeout")]
    pub timeout_s: f64,
    /// Attempts after the first when one fails with a transport error, a timeout, HTTP 429 or
    /// 5xx (default 2). A reply that is not a valid verdict is not retried.
    #[serde(default = "default_judge_retries")]
    pub max_retries: u32,
    /// Wait before the first retry in seconds, doubled for each further one (default 0.5).
    #[serde(default = "default_judge_backoff")]
    pub retry_backoff_s: f64,
}

fn default_judge_timeout() -> f64 {
    60.0
}
fn default_judge_retries() -> u32 {
    2
}
fn default_judge_backoff() -> f64 {
    0.5
}

/// Whether `url` is plain `http://` to a loopback host.
pub(crate) fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl RubricConfig {
    /// Validates and builds the verifier.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] for a judge URL that is neither `https://` nor `http://`
    /// to a loopback host, a non-positive timeout, a negative backoff or more than 10 retries.
    pub fn init(&self) -> crate::Result<RubricVerifier> {
        if let Some(j) = &self.judge {
            let bad = |field: &str, reason: String| crate::Error::InvalidConfig {
                field: format!("rubric.judge.{field}"),
                reason,
            };
            if !(j.base_url.starts_with("https://") || is_loopback_http(&j.base_url)) {
                return Err(bad(
                    "base_url",
                    format!(
                        "{:?} must start with https:// (plain http:// only to a loopback host)",
                        j.base_url
                    ),
                ));
            }
            if !(j.timeout_s.is_finite() && j.timeout_s > 0.0 && j.timeout_s <= 3600.0) {
                return Err(bad(
                    "timeout_s",
                    format!("{} must be in (0, 3600]", j.timeout_s),
                ));
            }
            if !(j.retry_backoff_s.is_finite() && (0.0..=60.0).contains(&j.retry_backoff_s)) {
                return Err(bad(
                    "retry_backoff_s",
                    format!("{} must be in [0, 60]", j.retry_backoff_s),
                ));
            }
            if j.max_retries > 10 {
                return Err(bad(
                    "max_retries",
                    format!("{} must be <= 10", j.max_retries),
                ));
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

#[cfg(test)]
mod tests {
    use super::is_loopback_http;

    #[test]
    fn loopback_hosts() {
        for (url, want) in [
            ("http://127.0.0.1:8000/v1", true),
            ("http://127.8.9.1/v1", true),
            ("http://localhost:1234", true),
            ("http://[::1]:80/v1", true),
            ("http://10.0.0.1/v1", false),
            ("http://127.0.0.1.evil.com/v1", false),
            ("http://user@127.0.0.1/v1", false),
            ("http://example.com/?127.0.0.1", false),
            ("https://127.0.0.1/v1", false),
        ] {
            assert_eq!(is_loopback_http(url), want, "{url}");
        }
    }
}
