//! `kind = "http"`: batches posted in OpenRLHF's remote-RM shape to a real local service, the
//! Python peer `tests/peers/rm_server.py` (standard library `http.server`).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rlvr_verifiers::{HttpConfig, Kind, Outcome, Reference, Verdict, Verifier, verify_batch};
use serde_json::{Value, json};

/// The peer service, killed when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start() -> Server {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/rm_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line.trim().parse().expect("the server prints its port");
        Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn config(&self, path: &str, batch_size: usize) -> HttpConfig {
        HttpConfig {
            batch_size,
            timeout_s: 1.0,
            retries: 2,
            backoff_s: 0.05,
            ..HttpConfig::new(format!("{}{path}", self.base))
        }
    }

    fn get(&self, path: &str) -> Value {
        let port = self.base.rsplit(':').next().unwrap();
        let mut s = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
        use std::io::Write;
        write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap()
    }

    fn count(&self, path: &str) -> u64 {
        self.get(&format!("/count?{path}")).as_u64().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Item `i`: prompt `"{i}+1="`, label `i + 1`; the response is right for even `i`.
fn items(n: usize) -> Vec<(String, Reference)> {
    (0..n)
        .map(|i| {
            let record =
                json!({"id": i, "prompt": format!("{i}+1="), "answer": (i + 1).to_string()});
            let response = if i.is_multiple_of(2) { i + 1 } else { i + 7 };
            (
                response.to_string(),
                Reference::from_record(Kind::Http, &record).unwrap(),
            )
        })
        .collect()
}

fn score(config: &HttpConfig, n: usize) -> Vec<Verdict> {
    let verifier: Arc<dyn Verifier> = Arc::new(config.init().unwrap());
    verify_batch(verifier, &items(n), config.item_time_limit())
}

fn reason(v: &Verdict) -> &str {
    v.details["reason"].as_str().unwrap_or_default()
}

#[test]
fn batches_in_openrlhf_shape_score_in_order() {
    let server = Server::start();
    let verdicts = score(&server.config("/ok", 3), 7);
    for (i, v) in verdicts.iter().enumerate() {
        let want = if i.is_multiple_of(2) { 1.0 } else { 0.0 };
        assert_eq!(v.reward, want, "item {i}: {v:?}");
        assert_eq!(v.passed, i.is_multiple_of(2));
    }
    // 7 items in batches of 3: three requests, not seven.
    assert_eq!(server.count("/ok"), 3);
    let last = server.get("/last");
    let n = last["query"].as_array().unwrap().len();
    assert!(n == 3 || n == 1, "{last}");
    let k = last["prompts"][0].as_str().unwrap().trim_end_matches("+1=");
    let k: usize = k.parse().unwrap();
    assert_eq!(last["labels"][0], json!((k + 1).to_string()));
    assert_eq!(
        last["query"][0],
        json!(format!(
            "{k}+1={}",
            if k.is_multiple_of(2) { k + 1 } else { k + 7 }
        ))
    );
    // A fractional reward is partial.
    let half = score(&server.config("/half", 4), 2);
    assert!(
        half.iter()
            .all(|v| v.reward == 0.5 && v.outcome == Outcome::Partial)
    );
}

#[test]
fn server_errors_are_retried_then_every_item_of_the_batch_is_an_error() {
    let server = Server::start();
    // Two 500s, then success: within retries = 2.
    let flaky = score(&server.config("/flaky", 8), 4);
    assert_eq!(flaky[0].reward, 1.0, "{:?}", flaky[0]);
    assert_eq!(server.count("/flaky"), 3);
    let failed = score(&server.config("/500", 8), 4);
    assert_eq!(server.count("/500"), 3, "one attempt and two retries");
    for v in &failed {
        assert_eq!((v.reward, v.outcome), (0.0, Outcome::Error));
        assert!(
            reason(v).contains("HTTP 500") && reason(v).contains("attempt 3 of 3"),
            "{v:?}"
        );
        assert!(reason(v).contains("model crashed"), "{v:?}");
    }
}

#[test]
fn malformed_replies_say_exactly_what_was_wrong() {
    let server = Server::start();
    for (path, needle) in [
        ("/wronglen", "reply has 3 rewards for 4 queries"),
        ("/notjson", "reply is not JSON"),
        ("/nonnumber", "`rewards[1]` is not a number: \"high\""),
    ] {
        let verdicts = score(&server.config(path, 4), 4);
        for v in &verdicts {
            assert_eq!((v.reward, v.outcome), (0.0, Outcome::Error), "{path}");
            assert!(
                reason(v).contains(needle) && reason(v).contains("batch of 4"),
                "{path}: {v:?}"
            );
        }
        // Bad replies are not retried.
        assert_eq!(server.count(path), 1, "{path}");
    }
    let range = score(&server.config("/range", 4), 2);
    for v in &range {
        assert_eq!(v.outcome, Outcome::Error);
        assert!(reason(v).contains("reward 3 is outside [0, 1]"), "{v:?}");
    }
}

#[test]
fn a_hanging_service_hits_the_timeout_on_every_attempt() {
    let server = Server::start();
    let started = Instant::now();
    let verdicts = score(&server.config("/hang", 4), 2);
    let took = started.elapsed();
    // Three attempts of 1 s plus backoffs 0.05 + 0.1: well under the 3 s the server sleeps
    // per request times three.
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(8),
        "{took:?}"
    );
    for v in &verdicts {
        assert_eq!((v.reward, v.outcome), (0.0, Outcome::Error));
        assert!(
            reason(v).contains("attempt 3 of 3") && reason(v).to_lowercase().contains("timeout"),
            "{v:?}"
        );
    }
    assert_eq!(server.count("/hang"), 3);
}

#[test]
fn an_item_without_a_prompt_is_an_error_alone() {
    let server = Server::start();
    let verifier = server.config("/ok", 8).init().unwrap();
    let no_prompt = Reference::from_record(Kind::Http, &json!({"answer": "1"})).unwrap();
    let mut batch = items(2);
    batch.insert(1, ("1".into(), no_prompt));
    let verdicts = verifier.verify_chunk(&batch);
    assert_eq!(verdicts[0].reward, 1.0);
    assert_eq!(verdicts[1].outcome, Outcome::Error);
    assert!(reason(&verdicts[1]).contains("no prompt field `prompt`"));
    assert_eq!(verdicts[2].reward, 0.0);
    assert_eq!(verdicts[2].outcome, Outcome::Wrong);
    assert_eq!(
        server.get("/last")["query"].as_array().unwrap().len(),
        2,
        "the bad item is not sent"
    );
}
