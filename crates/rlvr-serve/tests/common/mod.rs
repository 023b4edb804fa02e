//! Test harness: a server on 127.0.0.1 port 0 in this process, over a tiny random model in a
//! temporary directory, and small HTTP helpers (ureq).

#![allow(dead_code)] // each test binary uses a different part

pub mod fixture;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use burn::module::Module;
use burn::tensor::Device;
use rlvr_models::{CausalLm, Tokenizer, load_pretrained};
use rlvr_serve::{BackgroundServer, Server, ServerConfig};
use serde_json::Value;

/// The served model name in tests.
pub const MODEL_NAME: &str = "tiny";

/// A running server over a tiny model in a temporary directory; stops when dropped.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The server (for `stats()`).
    pub server: Server,
    /// The model directory.
    pub dir: PathBuf,
    _running: BackgroundServer,
    _tmp: tempfile::TempDir,
}

impl TestServer {
    /// Starts a server over a fresh tiny model (RNG seed `seed`), with `tweak` applied to the
    /// default settings.
    pub fn start(seed: u64, tweak: impl FnOnce(&mut ServerConfig)) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("model");
        fixture::write_tiny_model(&dir, seed);
        let mut config = ServerConfig::new(MODEL_NAME);
        tweak(&mut config);
        let server = Server::from_dir(&dir, config, &Device::flex()).unwrap();
        let running =
            BackgroundServer::start(server.clone(), "127.0.0.1:0".parse().unwrap(), 4).unwrap();
        Self {
            base: running.base_url().to_string(),
            server,
            dir,
            _running: running,
            _tmp: tmp,
        }
    }

    /// The served model, loaded again from its directory (for reference computations).
    pub fn model(&self) -> CausalLm {
        load_pretrained(&self.dir, &Device::flex())
            .unwrap()
            .0
            .valid()
    }

    /// The served tokenizer.
    pub fn tokenizer(&self) -> Tokenizer {
        Tokenizer::from_dir(&self.dir).unwrap()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// POSTs JSON; returns (status, x-weights-version header, body text).
    pub fn post(&self, path: &str, body: &Value) -> (u16, Option<u64>, String) {
        self.post_raw(path, body.to_string().into_bytes())
    }

    /// POSTs raw bytes as JSON.
    pub fn post_raw(&self, path: &str, body: Vec<u8>) -> (u16, Option<u64>, String) {
        let response = agent()
            .post(&self.url(path))
            .header("content-type", "application/json")
            .send(&body[..])
            .unwrap();
        read(response)
    }

    /// GETs a path; returns (status, version header, body text).
    pub fn get(&self, path: &str) -> (u16, Option<u64>, String) {
        read(agent().get(&self.url(path)).call().unwrap())
    }

    /// POSTs and expects 200 with a JSON body.
    pub fn post_ok(&self, path: &str, body: &Value) -> Value {
        let (status, _, text) = self.post(path, body);
        assert_eq!(status, 200, "{path}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// Sends a streaming completions request over a raw connection, reads `chunks` SSE
    /// `data:` lines and returns the open connection (shutting it down disconnects the client
    /// mid-stream).
    pub fn open_stream(&self, body: &Value, chunks: usize) -> TcpStream {
        let address = self.base.trim_start_matches("http://");
        let body = body.to_string();
        let mut stream = TcpStream::connect(address).unwrap();
        write!(
            stream,
            "POST /v1/completions HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        let mut seen = 0;
        while seen < chunks {
            line.clear();
            assert!(
                reader.read_line(&mut line).unwrap() > 0,
                "stream closed early"
            );
            seen += usize::from(line.starts_with("data:"));
        }
        stream
    }

    /// Waits until the engine's row count is `rows` (panics after `timeout`).
    pub fn wait_for_active_rows(&self, rows: usize, timeout: Duration) {
        let start = Instant::now();
        while self.server.stats().active_rows != rows {
            assert!(
                start.elapsed() < timeout,
                "active rows stayed at {} (waiting for {rows})",
                self.server.stats().active_rows
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

fn read(mut response: ureq::http::Response<ureq::Body>) -> (u16, Option<u64>, String) {
    let status = response.status().as_u16();
    let version = response
        .headers()
        .get("x-weights-version")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let text = response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .unwrap();
    (status, version, text)
}

/// The `data:` payloads of an SSE body, in order.
pub fn sse_data(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
        .map(str::to_owned)
        .collect()
}

/// Token ids of a choice (`return_token_ids`).
pub fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// Writes a second random model into `dir` (for weight updates).
pub fn write_other_model(dir: &Path, seed: u64) {
    fixture::write_tiny_model(dir, seed);
}
