//! `kind = "http"`: a remote reward service in OpenRLHF's remote-RM shape.
//!
//! One `POST url` per batch of up to `batch_size` items, body
//! `{"query": [prompt + response, ...], "prompts": [prompt, ...], "labels": [label, ...]}`
//! (OpenRLHF's `remote_rm_fn`: `labels` is the record's `label_field`, by default the reference
//! answer `answer`; `null` where a record has none), reply `{"rewards": [r, ...]}` with one
//! number in `[0, 1]` per query, in order (the key is `reward_key`; other keys are ignored).
//!
//! Each attempt is bounded as a whole by `timeout_s` (connect, send, headers and the full body);
//! transport errors, timeouts, HTTP 429 and 5xx are retried `retries` times after `backoff_s`,
//! doubled each time. A reply that is still bad (an HTTP error, not JSON, no reward list, the
//! wrong length, a non-number) gives every item of its batch an [`Outcome::Error`] verdict
//! (reward 0) saying exactly what was wrong; a single reward outside `[0, 1]` is an error
//! verdict for its item only.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{checked_reward, clip, outcome_of};
use crate::{Error, Outcome, Reference, Result, Verdict, Verifier};

/// Largest reply body read (bytes).
const MAX_REPLY: u64 = 16 << 20;
/// Longest single backoff between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Time beyond the worst case of all attempts that [`HttpConfig::item_time_limit`] allows.
const GRACE: Duration = Duration::from_secs(5);

/// Knobs of [`HttpVerifier`] (`[verifier] kind = "http"`).
///
/// ```toml
/// [verifier]
/// kind = "http"
/// url = "http://127.0.0.1:5000/get_reward"
/// batch_size = 32
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// The endpoint, `http://` or `https://` (rustls).
    pub url: String,
    /// Most items per request (default 32).
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    /// Limit of one attempt as a whole, in seconds (default 60).
    #[serde(default = "default_timeout_s")]
    pub timeout_s: f64,
    /// Attempts after the first on a transport error, a timeout, HTTP 429 or 5xx (default 2).
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Wait before the first retry in seconds, doubled for each further one, at most 30 s
    /// (default 1).
    #[serde(default = "default_backoff_s")]
    pub backoff_s: f64,
    /// Record field sent as the item's label (default `answer`).
    #[serde(default = "default_label_field")]
    pub label_field: String,
    /// Record field holding the prompt text (default `prompt`).
    #[serde(default = "default_prompt_field")]
    pub prompt_field: String,
    /// Key of the reward list in the reply (default `rewards`).
    #[serde(default = "default_reward_key")]
    pub reward_key: String,
}

fn default_batch_size() -> usize {
    32
}
fn default_timeout_s() -> f64 {
    60.0
}
fn default_retries() -> u32 {
    2
}
fn default_backoff_s() -> f64 {
    1.0
}
fn default_label_field() -> String {
    "answer".into()
}
fn default_prompt_field() -> String {
    "prompt".into()
}
fn default_reward_key() -> String {
    "rewards".into()
}

impl HttpConfig {
    /// A config for `url` with every other knob at its default.
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            batch_size: default_batch_size(),
            timeout_s: default_timeout_s(),
            retries: default_retries(),
            backoff_s: default_backoff_s(),
            label_field: default_label_field(),
            prompt_field: default_prompt_field(),
            reward_key: default_reward_key(),
        }
    }

    /// The limit of one batch call for [`crate::verify_batch`]: every attempt at `timeout_s`
    /// plus every backoff, plus a grace (the verifier enforces its own limits).
    pub fn item_time_limit(&self) -> Duration {
        let attempt = Duration::from_secs_f64(self.timeout_s.clamp(0.0, 3600.0));
        let mut total = attempt + GRACE;
        let mut backoff = Duration::from_secs_f64(self.backoff_s.clamp(0.0, 60.0));
        for _ in 0..self.retries.min(10) {
            total += attempt + backoff.min(MAX_BACKOFF);
            backoff *= 2;
        }
        total
    }

    /// Validates the knobs and builds the verifier (no request is made).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the field (`verifier.url`, `verifier.batch_size`, ...).
    pub fn init(&self) -> Result<HttpVerifier> {
        let bad = |field: &str, reason: String| Error::InvalidConfig {
            field: format!("verifier.{field}"),
            reason,
        };
        let rest = self
            .url
            .strip_prefix("http://")
            .or_else(|| self.url.strip_prefix("https://"));
        if rest.is_none_or(|r| r.is_empty() || r.starts_with('/')) {
            return Err(bad(
                "url",
                format!(
                    "{:?} must be an http:// or https:// URL with a host",
                    self.url
                ),
            ));
        }
        if self.batch_size == 0 || self.batch_size > 65_536 {
            return Err(bad(
                "batch_size",
                format!("{} must be in 1..=65536", self.batch_size),
            ));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= 3600.0) {
            return Err(bad(
                "timeout_s",
                format!("{} must be in (0, 3600]", self.timeout_s),
            ));
        }
        if self.retries > 10 {
            return Err(bad("retries", format!("{} must be <= 10", self.retries)));
        }
        if !(self.backoff_s.is_finite() && (0.0..=60.0).contains(&self.backoff_s)) {
            return Err(bad(
                "backoff_s",
                format!("{} must be in [0, 60]", self.backoff_s),
            ));
        }
        for (field, v) in [
            ("label_field", &self.label_field),
            ("prompt_field", &self.prompt_field),
            ("reward_key", &self.reward_key),
        ] {
            if v.is_empty() {
                return Err(bad(field, "must not be empty".into()));
            }
        }
        let mut agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs_f64(self.timeout_s)))
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent("rlvr-verifiers");
        if crate::rubric::is_loopback_http(&self.url) {
            // A local service is never reached through an environment proxy.
            agent = agent.proxy(None);
        }
        Ok(HttpVerifier {
            config: self.clone(),
            agent: agent.build().into(),
        })
    }
}

/// Scores batches of responses with a remote reward service (see the module documentation for
/// the request, the reply and the failure rules).
#[derive(Debug)]
pub struct HttpVerifier {
    config: HttpConfig,
    agent: ureq::Agent,
}

impl Verifier for HttpVerifier {
    fn verify(&self, response: &str, reference: &Reference) -> Verdict {
        self.verify_chunk(&[(response.to_string(), reference.clone())])
            .pop()
            .unwrap_or_else(|| Verdict::zero(Outcome::Error, "no verdict"))
    }

    fn chunk_size(&self) -> usize {
        self.config.batch_size
    }

    fn verify_chunk(&self, items: &[(String, Reference)]) -> Vec<Verdict> {
        let mut out: Vec<Option<Verdict>> = vec![None; items.len()];
        let (mut sent, mut query, mut prompts, mut labels) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (i, (response, reference)) in items.iter().enumerate() {
            match self.request_parts(response, reference) {
                Ok((prompt, label)) => {
                    sent.push(i);
                    query.push(format!("{prompt}{response}"));
                    prompts.push(prompt);
                    labels.push(label);
                }
                Err(reason) => out[i] = Some(Verdict::zero(Outcome::Error, reason)),
            }
        }
        if !sent.is_empty() {
            let body = json!({ "query": query, "prompts": prompts, "labels": labels }).to_string();
            match self
                .post(&body)
                .and_then(|reply| self.rewards(&reply, sent.len()))
            {
                Ok(rewards) => {
                    for (&i, r) in sent.iter().zip(rewards) {
                        out[i] = Some(match checked_reward(r) {
                            Ok(r) => Verdict::new(r, outcome_of(r), None, json!({ "reward": r })),
                            Err(e) => Verdict::zero(
                                Outcome::Error,
                                format!("reward service at {}: {e}", self.config.url),
                            ),
                        });
                    }
                }
                Err(reason) => {
                    let reason = format!(
                        "reward service at {} (batch of {}): {reason}",
                        self.config.url,
                        sent.len()
                    );
                    for &i in &sent {
                        out[i] = Some(Verdict::zero(Outcome::Error, reason.clone()));
                    }
                }
            }
        }
        out.into_iter()
            .map(|v| v.unwrap_or_else(|| Verdict::zero(Outcome::Error, "no verdict")))
            .collect()
    }

    fn name(&self) -> &'static str {
        "http"
    }
}

impl HttpVerifier {
    /// `(prompt, label)` of one item, or why it cannot be sent.
    fn request_parts(
        &self,
        _response: &str,
        reference: &Reference,
    ) -> std::result::Result<(String, Value), String> {
        let Reference::Record { record } = reference else {
            return Err("http verifier needs a record reference".into());
        };
        let field = &self.config.prompt_field;
        let prompt = match record.get(field) {
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(format!("record field `{field}` is not a string")),
            None => return Err(format!("record has no prompt field `{field}`")),
        };
        let label = record
            .get(&self.config.label_field)
            .cloned()
            .unwrap_or(Value::Null);
        Ok((prompt, label))
    }

    /// The numbers of a reply body, checked for shape and length (not yet for range).
    fn rewards(&self, body: &str, n: usize) -> std::result::Result<Vec<f64>, String> {
        let key = &self.config.reward_key;
        let v: Value = serde_json::from_str(body)
            .map_err(|e| format!("reply is not JSON ({e}): {:?}", clip(body, 200)))?;
        let list = match v.get(key) {
            Some(Value::Array(list)) => list,
            Some(other) => {
                return Err(format!(
                    "reply field `{key}` is not a list: {}",
                    clip(&other.to_string(), 200)
                ));
            }
            None => {
                return Err(format!("reply has no `{key}` list: {:?}", clip(body, 200)));
            }
        };
        if list.len() != n {
            return Err(format!("reply has {} rewards for {n} queries", list.len()));
        }
        list.iter()
            .enumerate()
            .map(|(k, x)| {
                x.as_f64().ok_or_else(|| {
                    format!(
                        "reply `{key}[{k}]` is not a number: {}",
                        clip(&x.to_string(), 80)
                    )
                })
            })
            .collect()
    }

    /// Posts `body` with retries; the reply body, or what went wrong on the last attempt.
    fn post(&self, body: &str) -> std::result::Result<String, String> {
        let cfg = &self.config;
        let mut backoff = Duration::from_secs_f64(cfg.backoff_s);
        let mut attempts = 0;
        loop {
            attempts += 1;
            let started = Instant::now();
            let (error, retry) = match self
                .agent
                .post(&cfg.url)
                .header("Content-Type", "application/json")
                .send(body)
            {
                Err(e) => (
                    format!(
                        "request failed: {e} (after {:.2} s)",
                        started.elapsed().as_secs_f64()
                    ),
                    true,
                ),
                Ok(mut reply) => {
                    let status = reply.status().as_u16();
                    let text = reply
                        .body_mut()
                        .with_config()
                        .limit(MAX_REPLY)
                        .read_to_string();
                    match (status, text) {
                        (200..=299, Ok(text)) => return Ok(text),
                        (200..=299, Err(e)) => (
                            format!(
                                "reading the reply failed: {e} (after {:.2} s)",
                                started.elapsed().as_secs_f64()
                            ),
                            true,
                        ),
                        (status, text) => (
                            format!(
                                "HTTP {status}: {:?}",
                                clip(text.as_deref().unwrap_or_default().trim(), 200)
                            ),
                            status == 429 || status >= 500,
                        ),
                    }
                }
            };
            if !retry || attempts > cfg.retries {
                return Err(format!(
                    "{error} (attempt {attempts} of {})",
                    cfg.retries + 1
                ));
            }
            std::thread::sleep(backoff.min(MAX_BACKOFF));
            backoff *= 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_time_limit_covers_every_attempt_and_backoff() {
        let mut c = HttpConfig::new("http://127.0.0.1:1/x");
        c.timeout_s = 2.0;
        c.retries = 2;
        c.backoff_s = 0.5;
        // 3 attempts × 2 s + backoffs 0.5 + 1.0 + grace 5 s.
        assert_eq!(c.item_time_limit(), Duration::from_secs_f64(12.5));
    }

    #[test]
    fn bad_knobs_name_their_field() {
        for (edit, field) in [
            (
                (|c: &mut HttpConfig| c.url = "ftp://x".into()) as fn(&mut HttpConfig),
                "verifier.url",
            ),
            (|c| c.url = "http://".into(), "verifier.url"),
            (|c| c.batch_size = 0, "verifier.batch_size"),
            (|c| c.timeout_s = 0.0, "verifier.timeout_s"),
            (|c| c.retries = 11, "verifier.retries"),
            (|c| c.backoff_s = -1.0, "verifier.backoff_s"),
            (|c| c.label_field = String::new(), "verifier.label_field"),
        ] {
            let mut c = HttpConfig::new("http://127.0.0.1:1/x");
            edit(&mut c);
            let e = c.init().unwrap_err().to_string();
            assert!(e.contains(&format!("`{field}`")), "{e}");
        }
        assert!(
            HttpConfig::new("https://rm.example/get_reward")
                .init()
                .is_ok()
        );
    }
}
