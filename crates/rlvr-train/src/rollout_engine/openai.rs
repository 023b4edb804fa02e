//! The client of OpenAI-compatible completion servers (`rlvr-serve`'s wire format): prompts go
//! out as token ids, one request per response, and the tokens, the sampler's log-probs, the
//! finish reason and the weights version come back.
//!
//! Seeds: local generation samples row `r` of a batch generated with seed `s` from
//! `row_seed(s, r) = splitmix64(s ^ splitmix64(r))`, and a server samples choice `i` of a request
//! with seed `q` from `row_seed(q, i)`. A request with `n` = G choices could match only the
//! batch's first G rows (choice `i` of prompt `p` would need `q ^ splitmix64(i) = s ^
//! splitmix64(p·G + i)` for every `i`), so every response is its own request (`n` = 1) with the
//! seed [`request_seed`]`(s, r)`, which gives row `r`'s exact seed.
//!
//! Requests are spread over the endpoints round robin, `rollout.concurrency` at a time; a
//! connection error or a 5xx answer is retried `rollout.retries` times with exponential backoff.

use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rlvr_models::{FinishReason, Generation, GenerationConfig, splitmix64};
use serde_json::{Value, json};

use crate::config::{RolloutSection, ServerKind};
use crate::error::{Error, Result};

/// The first retry's wait; each further retry waits twice as long, up to [`BACKOFF_MAX`].
const BACKOFF_START: Duration = Duration::from_millis(500);
/// The longest wait between two attempts.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// The largest reply body read.
const MAX_REPLY: u64 = 256 << 20;

/// The seed of the one-choice request for batch row `row` of a rollout seeded `seed`: the server
/// then samples from `row_seed(request_seed(seed, row), 0) = row_seed(seed, row)`, the seed
/// `rlvr_models::generate` gives that row.
pub fn request_seed(seed: u64, row: usize) -> u64 {
    seed ^ splitmix64(row as u64) ^ splitmix64(0)
}

/// The `POST /v1/completions` body for one response to `prompt`, ending at any of `stop` too
/// when it is not empty (a multi-turn episode's stop strings, `</tool_call>`).
pub fn completion_body(
    prompt: &[u32],
    cfg: &GenerationConfig,
    stop: &[String],
    seed: u64,
) -> Value {
    let mut body = json!({
        "prompt": prompt,
        "n": 1,
        "max_tokens": cfg.max_new_tokens,
        "temperature": cfg.temperature,
        "top_p": cfg.top_p.unwrap_or(1.0),
        "top_k": cfg.top_k.unwrap_or(0),
        "seed": seed,
        "logprobs": 0,
        "return_token_ids": true,
    });
    if !stop.is_empty() {
        body["stop"] = json!(stop);
    }
    body
}

/// Reads the one choice of a completions reply: its token ids, their log-probs (rlvr-serve's: at
/// temperature 1 without truncation, what generation reports locally), why it stopped, and the
/// weights version it came from, which must lie in `accept` when given.
///
/// # Errors
/// What is missing or wrong in the reply.
pub fn parse_completion(
    reply: &Value,
    accept: Option<RangeInclusive<u64>>,
) -> std::result::Result<(Generation, u64), String> {
    let version = reply["weights_version"]
        .as_u64()
        .ok_or("the reply has no weights_version (is this rlvr-serve?)")?;
    if let Some(range) = accept.filter(|r| !r.contains(&version)) {
        let want = if range.start() == range.end() {
            range.start().to_string()
        } else {
            format!("between {} and {}", range.start(), range.end())
        };
        return Err(format!(
            "the reply comes from weights_version {version}, and the weight syncs made it \
             {want} (did the server restart, or does another process update it?)"
        ));
    }
    let choice = match reply["choices"].as_array().map(Vec::as_slice) {
        Some([one]) => one,
        _ => return Err("the reply does not have exactly one choice".into()),
    };
    let tokens = choice["token_ids"]
        .as_array()
        .ok_or("the choice has no token_ids (the server ignored return_token_ids)")?
        .iter()
        .map(|v| v.as_u64().and_then(|id| u32::try_from(id).ok()))
        .collect::<Option<Vec<u32>>>()
        .ok_or("token_ids holds a value that is not a token id")?;
    let logprobs = choice["logprobs"]["token_logprobs"]
        .as_array()
        .ok_or("the choice has no logprobs.token_logprobs")?
        .iter()
        .map(|v| v.as_f64().map(|x| x as f32))
        .collect::<Option<Vec<f32>>>()
        .ok_or("logprobs.token_logprobs holds a value that is not a number")?;
    if logprobs.len() != tokens.len() {
        return Err(format!(
            "{} token_ids and {} token_logprobs",
            tokens.len(),
            logprobs.len()
        ));
    }
    let finish_reason = match choice["finish_reason"].as_str() {
        Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        other => return Err(format!("unknown finish_reason {other:?}")),
    };
    let generation = Generation {
        tokens,
        logprobs,
        finish_reason,
    };
    Ok((generation, version))
}

/// One response from a server: the generation, the endpoint that sampled it and the weights
/// version it reported.
#[derive(Debug, Clone)]
pub struct Served {
    /// Tokens, sampler log-probs and finish reason.
    pub generation: Generation,
    /// Index of the endpoint in `rollout.endpoints`.
    pub endpoint: usize,
    /// The server's weights version when it answered.
    pub weights_version: u64,
}

/// One failed attempt: worth retrying or not.
enum Attempt {
    Retry(String),
    Fatal(String),
}

/// The HTTP client over `rollout.endpoints`. Clones share the connection pool and the weights
/// versions the syncs recorded (an asynchronous rollout samples on a clone while the trainer
/// syncs).
#[derive(Clone)]
pub struct OpenAiClient {
    endpoints: Vec<String>,
    agent: ureq::Agent,
    concurrency: usize,
    retries: u32,
    /// What the endpoints are: how to sync them, whether replies carry a weights version.
    server: ServerKind,
    /// The weights versions the syncs recorded, shared by clones.
    versions: Arc<Mutex<Versions>>,
}

/// What the syncs of a client (and its clones) recorded.
#[derive(Debug, Clone)]
struct Versions {
    /// Per endpoint, the weights version the last sync reported (`None` before the first); for
    /// servers that report none, the number of syncs.
    expected: Vec<Option<u64>>,
    /// A sync is under way: a server may already answer from the next version.
    syncing: bool,
}

impl OpenAiClient {
    /// A client of `rollout.endpoints` with its concurrency, timeout and retries. It connects
    /// directly (no environment proxy: inference servers are on the training network).
    pub fn new(rollout: &RolloutSection) -> Self {
        let endpoints: Vec<String> = rollout
            .endpoints
            .iter()
            .map(|e| e.trim_end_matches('/').to_string())
            .collect();
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs_f64(rollout.request_timeout_s)))
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(None)
            .user_agent("rlvr-train")
            .build()
            .into();
        Self {
            versions: Arc::new(Mutex::new(Versions {
                expected: vec![None; endpoints.len()],
                syncing: false,
            })),
            endpoints,
            agent,
            concurrency: rollout.concurrency.max(1),
            retries: rollout.retries,
            server: rollout.server,
        }
    }

    /// The endpoints, without a trailing slash.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// Per endpoint, the weights version the last sync reported (`None` before the first).
    pub fn expected_versions(&self) -> Vec<Option<u64>> {
        self.versions().expected
    }

    fn versions(&self) -> Versions {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Marks a sync as under way (`update_weights` clears it with the new versions).
    fn begin_sync(&self) {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .syncing = true;
    }

    /// Records that endpoint `endpoint` now serves weights version `version`.
    pub fn set_expected_version(&mut self, endpoint: usize, version: u64) {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .expected[endpoint] = Some(version);
    }

    /// An error about endpoint `endpoint`.
    pub fn error(&self, endpoint: usize, message: impl Into<String>) -> Error {
        Error::Engine {
            endpoint: self.endpoints[endpoint].clone(),
            message: message.into(),
        }
    }

    /// Samples one response per prompt; response `r` is seeded as row `r` of
    /// `rlvr_models::generate(_, prompts, cfg, seed)`. The stop tokens are the server's (its
    /// tokenizer's EOS ids, as `cfg.stop_token_ids` holds them for the same tokenizer). A reply
    /// must come from the weights of the last sync before the call or of a sync made while it
    /// runs (an asynchronous rollout).
    ///
    /// # Errors
    /// [`Error::Engine`] naming the endpoint of the first request that failed after its retries,
    /// or whose reply was malformed or from other weights.
    pub fn generate(
        &self,
        prompts: &[Vec<u32>],
        cfg: &GenerationConfig,
        seed: u64,
    ) -> Result<Vec<Served>> {
        self.generate_until(prompts, cfg, &[], seed)
    }

    /// [`Self::generate`], each response also ending at the first of `stop` it writes (as
    /// `rlvr_models::generate_with_stop_strings` ends it locally; the reply's token ids keep the
    /// tokens that complete the stop string, as rlvr-serve returns them).
    ///
    /// # Errors
    /// As [`Self::generate`].
    pub fn generate_until(
        &self,
        prompts: &[Vec<u32>],
        cfg: &GenerationConfig,
        stop: &[String],
        seed: u64,
    ) -> Result<Vec<Served>> {
        let n = prompts.len();
        let floor = self.expected_versions();
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let results: Mutex<Vec<Option<Served>>> = Mutex::new(vec![None; n]);
        let first_error: Mutex<Option<Error>> = Mutex::new(None);
        std::thread::scope(|scope| {
            for _ in 0..self.concurrency.min(n) {
                scope.spawn(|| {
                    loop {
                        let row = next.fetch_add(1, Ordering::Relaxed);
                        if row >= n || failed.load(Ordering::Relaxed) {
                            break;
                        }
                        let endpoint = row % self.endpoints.len();
                        let body = completion_body(&prompts[row], cfg, stop, self.seed(seed, row));
                        let got = self
                            .post_json(endpoint, "/v1/completions", &body)
                            .map(|reply| self.with_version(reply, endpoint))
                            .and_then(|reply| {
                                let accept = self.accepted_versions(&floor, endpoint);
                                parse_completion(&reply, accept)
                                    .map_err(|e| self.error(endpoint, e))
                            })
                            .map(|(generation, weights_version)| Served {
                                generation,
                                endpoint,
                                weights_version,
                            });
                        match got {
                            Ok(g) => {
                                results.lock().unwrap_or_else(PoisonError::into_inner)[row] =
                                    Some(g);
                            }
                            Err(e) => {
                                failed.store(true, Ordering::Relaxed);
                                first_error
                                    .lock()
                                    .unwrap_or_else(PoisonError::into_inner)
                                    .get_or_insert(e);
                                break;
                            }
                        }
                    }
                });
            }
        });
        if let Some(e) = first_error
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            return Err(e);
        }
        Ok(results
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .into_iter()
            .map(|g| g.expect("every row was answered or an error returned"))
            .collect())
    }

    /// The seed of row `row`'s request: [`request_seed`], below 2^63 for servers that take a
    /// signed 64-bit seed (their samplers do not reproduce local sampling anyway).
    fn seed(&self, seed: u64, row: usize) -> u64 {
        match self.server {
            ServerKind::RlvrServe => request_seed(seed, row),
            ServerKind::Sglang | ServerKind::Vllm => request_seed(seed, row) & (u64::MAX >> 1),
        }
    }

    /// A reply with a weights version: its own, or for a server that reports none, the count of
    /// syncs this client made to `endpoint`.
    fn with_version(&self, mut reply: Value, endpoint: usize) -> Value {
        if self.server != ServerKind::RlvrServe && reply["weights_version"].is_null() {
            let synced = self.expected_versions()[endpoint].unwrap_or(0);
            reply["weights_version"] = json!(synced);
        }
        reply
    }

    /// The weights versions a reply of `endpoint` may carry during a call that started when the
    /// syncs had recorded `floor`: from that version to the latest sync's, or the one after it
    /// while a sync is under way (the server swaps before the sync is recorded here); `None`
    /// before any sync: any version.
    fn accepted_versions(
        &self,
        floor: &[Option<u64>],
        endpoint: usize,
    ) -> Option<RangeInclusive<u64>> {
        let now = self.versions();
        let latest = now.expected[endpoint]? + u64::from(now.syncing);
        Some(floor[endpoint].unwrap_or(0)..=latest)
    }

    /// Asks every endpoint (in parallel) to load the HuggingFace directory `model_path` and
    /// returns the weights version each reports; the versions become the expected ones.
    ///
    /// # Errors
    /// [`Error::Engine`] naming an endpoint that failed, refused the weights, or did not
    /// advance its version.
    pub fn update_weights(&mut self, model_path: &std::path::Path) -> Result<Vec<u64>> {
        let path = model_path.to_string_lossy();
        let (route, body) = match self.server {
            ServerKind::RlvrServe | ServerKind::Sglang => {
                ("/update_weights_from_disk", json!({ "model_path": path }))
            }
            ServerKind::Vllm => (
                "/collective_rpc",
                json!({ "method": "reload_weights", "kwargs": { "weights_path": path } }),
            ),
        };
        self.begin_sync();
        let this = &*self;
        let answers: Vec<Result<u64>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..this.endpoints.len())
                .map(|e| {
                    let body = &body;
                    scope.spawn(move || {
                        let reply = this.post_json(e, route, body)?;
                        this.check_update(e, &reply)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a weight update thread panicked"))
                .collect()
        });
        let versions = answers.into_iter().collect::<Result<Vec<u64>>>();
        // The new versions and the end of the sync land together (see `accepted_versions`).
        let mut state = self.versions.lock().unwrap_or_else(PoisonError::into_inner);
        state.syncing = false;
        let versions = versions?;
        for (e, &v) in versions.iter().enumerate() {
            state.expected[e] = Some(v);
        }
        Ok(versions)
    }

    /// The version a weight update reply reports, if it succeeded and advanced the version; for
    /// a server that reports none, the next count (vLLM's reload answers an empty 200).
    fn check_update(&self, endpoint: usize, reply: &Value) -> Result<u64> {
        let next = || self.expected_versions()[endpoint].map_or(1, |v| v + 1);
        match self.server {
            ServerKind::Vllm => return Ok(next()),
            ServerKind::Sglang if reply["success"].as_bool() == Some(true) => return Ok(next()),
            _ => {}
        }
        if reply["success"].as_bool() != Some(true) {
            return Err(self.error(
                endpoint,
                format!("/update_weights_from_disk did not succeed: {reply}"),
            ));
        }
        let version = reply["weights_version"].as_u64().ok_or_else(|| {
            self.error(
                endpoint,
                "/update_weights_from_disk answered without weights_version",
            )
        })?;
        if let Some(old) = self.expected_versions()[endpoint].filter(|&old| version <= old) {
            return Err(self.error(
                endpoint,
                format!("the weight update left weights_version at {version} (was {old})"),
            ));
        }
        Ok(version)
    }

    /// POSTs `body` to `path` of endpoint `endpoint` with the retries and returns the JSON reply.
    ///
    /// # Errors
    /// [`Error::Engine`]: the last attempt's transport error or 5xx after the retries, or at
    /// once a 4xx answer (with the server's message) or a reply that is not JSON.
    pub fn post_json(&self, endpoint: usize, path: &str, body: &Value) -> Result<Value> {
        let url = format!("{}{path}", self.endpoints[endpoint]);
        let text = body.to_string();
        let mut backoff = BACKOFF_START;
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let why = match self.post_once(&url, &text) {
                Ok(v) => return Ok(v),
                Err(Attempt::Fatal(why)) => {
                    return Err(self.error(endpoint, format!("POST {path}: {why}")));
                }
                Err(Attempt::Retry(why)) => why,
            };
            if attempts > self.retries {
                return Err(self.error(
                    endpoint,
                    format!("POST {path} failed after {attempts} attempt(s): {why}"),
                ));
            }
            tracing::warn!("POST {url} (attempt {attempts}): {why}; retrying in {backoff:?}");
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    fn post_once(&self, url: &str, text: &str) -> std::result::Result<Value, Attempt> {
        let mut reply = self
            .agent
            .post(url)
            .header("Content-Type", "application/json")
            .send(text)
            .map_err(|e| Attempt::Retry(e.to_string()))?;
        let status = reply.status().as_u16();
        let body = reply
            .body_mut()
            .with_config()
            .limit(MAX_REPLY)
            .read_to_string()
            .map_err(|e| Attempt::Retry(e.to_string()))?;
        if status == 429 || status >= 500 {
            return Err(Attempt::Retry(format!(
                "HTTP {status}: {}",
                error_message(&body)
            )));
        }
        if !(200..300).contains(&status) {
            return Err(Attempt::Fatal(format!(
                "HTTP {status}: {}",
                error_message(&body)
            )));
        }
        if body.trim().is_empty() {
            // An empty 2xx (vLLM's `/collective_rpc`).
            return Ok(Value::Null);
        }
        serde_json::from_str(&body).map_err(|e| Attempt::Fatal(format!("reply is not JSON: {e}")))
    }
}

/// The message of an OpenAI-style error body (`error.message`, or `message`), else the body's
/// start.
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v["error"]["message"]
            .as_str()
            .or_else(|| v["message"].as_str())
            .map(str::to_string)
    });
    message.unwrap_or_else(|| body.chars().take(300).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlvr_models::row_seed;

    /// The server seeds choice 0 of a request with `row_seed(q, 0)`; with `q = request_seed(s,
    /// r)` that must be row `r`'s seed under `s`, for any `s` and `r`.
    #[test]
    fn a_one_choice_request_gets_its_rows_seed() {
        for s in [0u64, 1, 42, u64::MAX, 0x9E37_79B9_7F4A_7C15] {
            for r in [0usize, 1, 2, 7, 1000] {
                assert_eq!(
                    row_seed(request_seed(s, r), 0),
                    row_seed(s, r as u64),
                    "s={s} r={r}"
                );
            }
        }
        // Row 0's request keeps the rollout's seed.
        assert_eq!(request_seed(42, 0), 42);
    }

    fn reply(version: u64, finish: &str, ids: &str, lps: &str) -> Value {
        serde_json::from_str(&format!(
            r#"{{"weights_version": {version}, "choices": [{{"index": 0, "text": "x",
              "finish_reason": "{finish}", "token_ids": {ids},
              "logprobs": {{"tokens": [], "token_logprobs": {lps}}}}}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_reply_gives_tokens_logprobs_and_finish() {
        let (g, v) =
            parse_completion(&reply(3, "stop", "[5, 0]", "[-0.5, -1.25]"), Some(3..=3)).unwrap();
        assert_eq!(v, 3);
        assert_eq!(g.tokens, vec![5, 0]);
        assert_eq!(g.logprobs, vec![-0.5, -1.25]);
        assert_eq!(g.finish_reason, FinishReason::Stop);
        let (g, _) = parse_completion(&reply(0, "length", "[1]", "[-2]"), None).unwrap();
        assert_eq!(g.finish_reason, FinishReason::Length);
        // During an asynchronous rollout a sync may land between two replies.
        let (_, v) = parse_completion(&reply(4, "stop", "[1]", "[-2]"), Some(3..=4)).unwrap();
        assert_eq!(v, 4);
    }

    #[test]
    fn bad_replies_are_refused_with_the_reason() {
        let e = parse_completion(&reply(2, "stop", "[5]", "[-0.5]"), Some(3..=3)).unwrap_err();
        assert!(e.contains("weights_version 2") && e.contains('3'), "{e}");
        let e = parse_completion(&reply(5, "stop", "[5]", "[-0.5]"), Some(3..=4)).unwrap_err();
        assert!(e.contains("between 3 and 4"), "{e}");
        let e = parse_completion(&reply(3, "stop", "[5, 6]", "[-0.5]"), Some(3..=3)).unwrap_err();
        assert!(e.contains("2 token_ids and 1 token_logprobs"), "{e}");
        let e = parse_completion(&reply(3, "abort", "[5]", "[-0.5]"), Some(3..=3)).unwrap_err();
        assert!(e.contains("finish_reason"), "{e}");
        let e = parse_completion(&json!({"choices": []}), None).unwrap_err();
        assert!(e.contains("weights_version"), "{e}");
    }

    fn client(server: ServerKind) -> OpenAiClient {
        OpenAiClient::new(&RolloutSection {
            endpoints: vec!["http://127.0.0.1:9".into()],
            server,
            ..Default::default()
        })
    }

    /// rlvr-serve gets the local rows' exact u64 seeds; SGLang and vLLM take signed 64-bit
    /// seeds, so theirs lose the top bit (and only it).
    #[test]
    fn seeds_fit_the_servers_integer_type() {
        let row = (0..64)
            .find(|&r| request_seed(7, r) >= 1 << 63)
            .expect("a row whose seed has the top bit");
        let full = request_seed(7, row);
        assert_eq!(client(ServerKind::RlvrServe).seed(7, row), full);
        for kind in [ServerKind::Sglang, ServerKind::Vllm] {
            let s = client(kind).seed(7, row);
            assert!(s < 1 << 63);
            assert_eq!(s, full - (1 << 63));
        }
    }

    /// Servers without a weights version: a sync counts 1, 2, ... (vLLM's empty reply, SGLang's
    /// `success`), and replies get the count; rlvr-serve's own versions are required.
    #[test]
    fn servers_without_versions_are_counted_by_the_client() {
        let mut vllm = client(ServerKind::Vllm);
        assert_eq!(vllm.check_update(0, &Value::Null).unwrap(), 1);
        vllm.set_expected_version(0, 1);
        assert_eq!(vllm.check_update(0, &Value::Null).unwrap(), 2);
        let reply = vllm.with_version(json!({"choices": []}), 0);
        assert_eq!(reply["weights_version"], json!(1));
        let sglang = client(ServerKind::Sglang);
        assert_eq!(
            sglang.check_update(0, &json!({"success": true})).unwrap(),
            1
        );
        assert!(sglang.check_update(0, &json!({"success": false})).is_err());
        let rlvr = client(ServerKind::RlvrServe);
        assert!(rlvr.check_update(0, &json!({"success": true})).is_err());
        assert_eq!(
            rlvr.check_update(0, &json!({"success": true, "weights_version": 4}))
                .unwrap(),
            4
        );
        assert!(rlvr.with_version(json!({}), 0)["weights_version"].is_null());
    }

    #[test]
    fn the_request_body_asks_for_ids_and_logprobs() {
        let cfg = GenerationConfig {
            max_new_tokens: 6,
            temperature: 0.5,
            top_k: Some(3),
            top_p: None,
            stop_token_ids: vec![0],
            pad_token_id: 0,
        };
        let b = completion_body(&[4, 5], &cfg, &[], 9);
        assert_eq!(b["prompt"], json!([4, 5]));
        assert_eq!(
            (b["n"].as_u64(), b["max_tokens"].as_u64()),
            (Some(1), Some(6))
        );
        assert_eq!(
            (b["top_k"].as_u64(), b["top_p"].as_f64()),
            (Some(3), Some(1.0))
        );
        assert_eq!(
            (b["seed"].as_u64(), b["logprobs"].as_u64()),
            (Some(9), Some(0))
        );
        assert_eq!(b["return_token_ids"], json!(true));
        assert_eq!(b["temperature"].as_f64(), Some(0.5));
        assert!(
            b.get("stop").is_none(),
            "no stop key for one-turn responses"
        );
        let with_stop = completion_body(&[4], &cfg, &["</tool_call>".to_string()], 9);
        assert_eq!(with_stop["stop"], json!(["</tool_call>"]));
    }
}
