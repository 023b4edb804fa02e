//! `rlvr-verify serve`: the verifiers as an HTTP service for other frameworks (feature `serve`).
//!
//! Endpoints (one file each): `GET /health` (`health.rs`), `POST /verify` (`verify.rs`: rlvr-verify
//! input lines in, output lines out) and `POST /run_code` (`run_code.rs`: SandboxFusion's request
//! and reply, run in the local [`crate::sandbox`]). A synchronous `tiny_http` server with a fixed
//! pool of worker threads; bodies over the cap get 413, malformed JSON or missing fields 400
//! naming the field, unknown paths 404, other methods 405. Every reply is JSON; a handler that
//! panics answers 500 and its worker keeps serving.

mod health;
mod run_code;
mod verify;

use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::sandbox::Sandbox;
use crate::{CodeConfig, Error, Kind, Result, Verifier, VerifierConfig};

/// Kinds served by `POST /verify` without a config (each with its default knobs).
const DEFAULT_KINDS: [Kind; 3] = [Kind::Math, Kind::Code, Kind::Rubric];

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Address to listen on (default `127.0.0.1`).
    pub host: String,
    /// Port (0 picks a free one; [`Server::local_addr`] tells which).
    pub port: u16,
    /// Worker threads answering requests (0 = two per CPU).
    pub workers: usize,
    /// Largest accepted request body, bytes.
    pub max_body_bytes: usize,
    /// A verifier config that replaces the default of its kind (`--config`); its `code` knobs
    /// (timeout, sandbox limits) also bound `/run_code`.
    pub verifier: Option<VerifierConfig>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            host: "127.0.0.1".into(),
            port: 8080,
            workers: 0,
            max_body_bytes: 16 << 20,
            verifier: None,
        }
    }
}

/// One kind served by `/verify`.
pub(crate) struct Served {
    verifier: Arc<dyn Verifier>,
    /// The CLI's per-item limit for this kind.
    item_limit: Duration,
}

/// What the handlers share.
pub(crate) struct State {
    kinds: BTreeMap<&'static str, (Kind, Served)>,
    sandbox: Sandbox,
    /// The most a `/run_code` run may take (the code config's `timeout_s`).
    max_run: Duration,
    max_body: usize,
}

/// A bound, not yet running server.
pub struct Server {
    http: Arc<tiny_http::Server>,
    state: Arc<State>,
    workers: usize,
}

/// The CLI's per-item limit (`rlvr-verify --item-timeout-s` default): the code timeout + 10 s
/// for code, the verifier's own limit for the others.
fn item_limit(config: &VerifierConfig) -> Duration {
    match config {
        VerifierConfig::Code(c) => Duration::from_secs_f64(c.timeout_s + 10.0),
        other => other.item_time_limit(),
    }
}

impl Server {
    /// Builds the verifiers (probing the sandbox) and binds the address.
    ///
    /// # Errors
    /// A verifier's build error ([`Error::Sandbox`] when Python cannot start), or
    /// [`Error::InvalidConfig`] naming `serve.address` when the address cannot be bound.
    pub fn bind(config: &ServeConfig) -> Result<Server> {
        let mut configs: Vec<VerifierConfig> = DEFAULT_KINDS
            .iter()
            .map(|k| VerifierConfig::default_for(*k))
            .collect();
        if let Some(c) = &config.verifier {
            let name = kind_name(c);
            configs.retain(|d| kind_name(d) != name);
            configs.push(c.clone());
        }
        let mut kinds = BTreeMap::new();
        let mut code = CodeConfig::default();
        for c in configs {
            let name = kind_name(&c);
            let Ok(kind) = serde_json::from_value::<Kind>(json!(name)) else {
                continue;
            };
            if let VerifierConfig::Code(cc) = &c {
                code = cc.clone();
            }
            let served = Served {
                verifier: Arc::from(c.build()?),
                item_limit: item_limit(&c),
            };
            kinds.insert(kind.name(), (kind, served));
        }
        let sandbox = Sandbox::new(&code.sandbox)?;
        let addr = format!("{}:{}", config.host, config.port);
        let http = tiny_http::Server::http(&addr).map_err(|e| Error::InvalidConfig {
            field: "serve.address".into(),
            reason: format!("cannot listen on {addr}: {e}"),
        })?;
        let workers = if config.workers == 0 {
            2 * std::thread::available_parallelism().map_or(2, |p| p.get())
        } else {
            config.workers
        };
        Ok(Server {
            http: Arc::new(http),
            state: Arc::new(State {
                kinds,
                sandbox,
                max_run: Duration::from_secs_f64(code.timeout_s),
                max_body: config.max_body_bytes,
            }),
            workers,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.http.server_addr().to_ip()
    }

    /// The sandbox `/run_code` runs in (to report its isolation).
    pub fn sandbox(&self) -> &Sandbox {
        &self.state.sandbox
    }

    /// Serves until the process ends: the worker threads take requests one at a time each.
    pub fn run(self) {
        let handles: Vec<_> = (0..self.workers)
            .map(|_| {
                let (http, state) = (Arc::clone(&self.http), Arc::clone(&self.state));
                std::thread::spawn(move || {
                    while let Ok(request) = http.recv() {
                        handle(&state, request);
                    }
                })
            })
            .collect();
        for h in handles {
            let _ = h.join();
        }
    }
}

/// The `kind` tag a config serializes with (also for kinds added later).
fn kind_name(c: &VerifierConfig) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default()
}

/// A reply: status and JSON body.
pub(crate) type Reply = (u16, Value);

/// A 4xx/5xx reply `{"error": message}`.
pub(crate) fn error(status: u16, message: impl Into<String>) -> Reply {
    (status, json!({ "error": message.into() }))
}

fn handle(state: &State, mut request: tiny_http::Request) {
    let reply =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| route(state, &mut request)))
            .unwrap_or_else(|_| error(500, "internal error while handling the request"));
    let (status, body) = reply;
    let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..])
        .expect("a valid static header");
    let response = tiny_http::Response::from_string(body.to_string())
        .with_status_code(status)
        .with_header(header);
    // A client that went away is not the server's problem.
    let _ = request.respond(response);
}

fn route(state: &State, request: &mut tiny_http::Request) -> Reply {
    use tiny_http::Method;
    let path = request
        .url()
        .split('?')
        .next()
        .unwrap_or_default()
        .to_string();
    let method = request.method().clone();
    match (path.as_str(), method) {
        ("/health", Method::Get) => health::handle(state),
        ("/verify", Method::Post) => match body(state, request) {
            Ok(v) => verify::handle(state, &v),
            Err(r) => r,
        },
        ("/run_code", Method::Post) => match body(state, request) {
            Ok(v) => run_code::handle(state, &v),
            Err(r) => r,
        },
        ("/health" | "/verify" | "/run_code", m) => {
            error(405, format!("{m} is not allowed on {path}"))
        }
        _ => error(
            404,
            format!("no endpoint {path} (try GET /health, POST /verify, POST /run_code)"),
        ),
    }
}

/// Reads and parses a JSON object body, refusing more than the cap.
fn body(state: &State, request: &mut tiny_http::Request) -> std::result::Result<Value, Reply> {
    let cap = state.max_body;
    let too_large = || error(413, format!("request body is larger than {cap} bytes"));
    if request.body_length().is_some_and(|n| n > cap) {
        return Err(too_large());
    }
    let mut raw = Vec::new();
    request
        .as_reader()
        .take(cap as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(|e| error(400, format!("reading the body: {e}")))?;
    if raw.len() > cap {
        return Err(too_large());
    }
    let value: Value = serde_json::from_slice(&raw)
        .map_err(|e| error(400, format!("body is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(error(400, "body must be a JSON object"));
    }
    Ok(value)
}
