//! The `sandbox_fusion` backend of the code verifier: programs and tests run on a
//! SandboxFusion-compatible server (`POST {sandbox_url}/run_code`), such as bytedance's
//! SandboxFusion or `rlvr-verify serve`.
//!
//! The request's `code` is always the fixed [`HARNESS`]; the program, the tests and a per-call
//! random nonce travel on the run's stdin. The harness reports each test on a private copy of
//! stdout as `<nonce> test <i> <0|1> <name> <msg>` and ends with `<nonce> done`; the verdict is
//! built only from those lines (see the harness's header for how the program is kept from the
//! nonce and from the comparisons).
//!
//! What this backend cannot rule out, unlike the local sandbox: the program and the tests share
//! one interpreter, so a program that corrupts CPython's memory could read the nonce; and the
//! remote server's isolation (network, filesystem, other tenants) is the server's business.

mod protocol;

use std::time::{Duration, Instant};

use serde_json::json;

pub use protocol::{
    CommandRunResult, CommandRunStatus, RunCodeRequest, RunCodeResponse, RunStatus,
};

use crate::code::{Report, score, stderr_tail};
use crate::{CodeReference, Outcome, RewardMode, Verdict};

/// The harness sent as the `code` of every request (see its header comment).
pub const HARNESS: &str = include_str!("harness.py");

/// Largest reply read from the server.
const MAX_REPLY: u64 = 64 << 20;

/// A client of one SandboxFusion-compatible server.
#[derive(Debug, Clone)]
pub struct SandboxFusionClient {
    endpoint: String,
    timeout: Duration,
    agent: ureq::Agent,
}

impl SandboxFusionClient {
    /// A client of the server at `base_url` (`http://host:port`, no path), each request limited
    /// to `timeout` (connect, run and reply together).
    pub fn new(base_url: &str, timeout: Duration) -> Self {
        let base = base_url.trim_end_matches('/');
        let mut config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent("rlvr-verifiers");
        if crate::rubric::is_loopback_http(base) {
            // A local server is never reached through an environment proxy.
            config = config.proxy(None);
        }
        SandboxFusionClient {
            endpoint: format!("{base}/run_code"),
            timeout,
            agent: config.build().into(),
        }
    }

    /// The `/run_code` URL this client posts to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Posts one request and decodes the reply.
    ///
    /// # Errors
    /// A message naming the URL for a transport failure, a non-2xx status or a reply that is not
    /// a `RunCodeResponse`.
    pub fn run_code(&self, request: &RunCodeRequest) -> Result<RunCodeResponse, String> {
        let started = Instant::now();
        let body = serde_json::to_string(request).map_err(|e| e.to_string())?;
        let mut reply = self
            .agent
            .post(&self.endpoint)
            .header("Content-Type", "application/json")
            .send(&body)
            .map_err(|e| {
                format!(
                    "POST {}: {e} (after {:.2} s, limit {:.1} s)",
                    self.endpoint,
                    started.elapsed().as_secs_f64(),
                    self.timeout.as_secs_f64()
                )
            })?;
        let status = reply.status().as_u16();
        let text = reply
            .body_mut()
            .with_config()
            .limit(MAX_REPLY)
            .read_to_string()
            .map_err(|e| format!("POST {}: reading the reply: {e}", self.endpoint))?;
        if !(200..300).contains(&status) {
            let head: String = text.chars().take(300).collect();
            return Err(format!("POST {}: HTTP {status}: {head}", self.endpoint));
        }
        serde_json::from_str(&text)
            .map_err(|e| format!("POST {}: not a run_code reply: {e}", self.endpoint))
    }

    /// Checks that the server runs Python: `print(6 * 7)` must print `42`.
    ///
    /// # Errors
    /// Why not (transport, status, or what the run printed instead).
    pub fn probe(&self) -> Result<(), String> {
        let reply = self.run_code(&RunCodeRequest {
            code: "print(6 * 7)".into(),
            language: "python".into(),
            run_timeout: self.timeout.as_secs_f64().min(30.0),
            compile_timeout: 10.0,
            memory_limit_mb: -1,
            stdin: None,
            files: Default::default(),
            fetch_files: Vec::new(),
        })?;
        let out = reply.run_result.as_ref().and_then(|r| r.stdout.as_deref());
        if reply.status == RunStatus::Success && out.map(str::trim) == Some("42") {
            Ok(())
        } else {
            Err(format!(
                "probe `print(6 * 7)` gave status {:?}, message {:?}, stdout {:?}",
                reply.status, reply.message, out
            ))
        }
    }

    /// Runs `program` against `reference` remotely and scores it like the local backend.
    ///
    /// `run_limit` becomes the request's `run_timeout`; `nonce` must be fresh and random per
    /// call. Transport failures, server errors and malformed replies are [`Outcome::Error`]
    /// verdicts (reward 0) with the reason in the details.
    pub fn verify(
        &self,
        program: String,
        reference: &CodeReference,
        run_limit: Duration,
        reward: RewardMode,
        nonce: &str,
    ) -> Verdict {
        let n = reference.num_tests();
        let job = json!({
            "nonce": nonce,
            "program": program,
            "setup": reference.setup_code,
            "tests": reference.tests,
            "check": reference.check,
            "entry_point": reference.entry_point,
            "io_cases": reference.io_cases,
        });
        let request = RunCodeRequest {
            code: HARNESS.to_string(),
            language: "python".into(),
            run_timeout: run_limit.as_secs_f64(),
            compile_timeout: 10.0,
            memory_limit_mb: -1,
            stdin: Some(job.to_string()),
            files: Default::default(),
            fetch_files: Vec::new(),
        };
        let started = Instant::now();
        let error = |reason: String| {
            Verdict::new(
                0.0,
                Outcome::Error,
                Some(program.clone()),
                json!({ "reason": reason, "backend": "sandbox_fusion" }),
            )
        };
        let reply = match self.run_code(&request) {
            Ok(r) => r,
            Err(e) => return error(e),
        };
        if reply.status == RunStatus::SandboxError {
            return error(format!(
                "{}: SandboxError: {}",
                self.endpoint, reply.message
            ));
        }
        let Some(run) = reply.run_result.as_ref() else {
            return error(format!("{}: reply has no run_result", self.endpoint));
        };
        if run.status == CommandRunStatus::Error {
            return error(format!(
                "{}: run status Error: {}",
                self.endpoint,
                run.stderr.as_deref().unwrap_or_default()
            ));
        }
        let timed_out = run.status == CommandRunStatus::TimeLimitExceeded;
        let report = parse_remote(run.stdout.as_deref().unwrap_or_default(), nonce, n);
        let (outcome, score_reward, passed) = score(&report, timed_out, n, reward);
        let stderr = run.stderr.as_deref().unwrap_or_default();
        let details = json!({
            "backend": "sandbox_fusion",
            "passed": passed,
            "total": n,
            "tests": report.tests_json(),
            "protocol_violation": report.violation,
            "finished": report.done,
            "timed_out": timed_out,
            "exit_code": run.return_code,
            "execution_time": run.execution_time,
            "wall_s": started.elapsed().as_secs_f64(),
            "stderr_tail": stderr_tail(stderr),
        });
        Verdict::new(score_reward, outcome, Some(program), details)
    }
}

/// Parses the harness's lines out of the run's stdout: lines that do not start with the nonce
/// are ignored (the harness begins each report on a fresh line); every line that does must be
/// `test <i> <0|1> <name> [<msg>]`, `done` or `violation <reason>`, each test once, nothing
/// after the end.
fn parse_remote(stdout: &str, nonce: &str, n: usize) -> Report {
    let mut r = Report::new(n);
    for line in stdout.lines() {
        let mut f = line.splitn(6, ' ');
        if f.next() != Some(nonce) {
            continue;
        }
        if r.done {
            r.fail("output after done".into());
            continue;
        }
        match f.next() {
            Some("test") => r.record_test(f),
            Some("done") if f.next().is_none() => r.done = true,
            Some("violation") => {
                r.fail(f.collect::<Vec<_>>().join(" "));
                r.done = true;
            }
            _ => r.fail("unexpected report line".into()),
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_nonce_lines_count_and_each_test_once() {
        let out = "noise\nN test 0 1 ok -\nprogram output N test 1 1 ok\nX test 1 1 ok -\n\nN test 1 0 AssertionError -\nN done\n";
        let r = parse_remote(out, "N", 2);
        assert!(r.done && r.violation.is_none());
        assert!(r.results[0].as_ref().unwrap().0);
        assert!(!r.results[1].as_ref().unwrap().0);
        let dup = parse_remote("N test 0 1 ok -\nN test 0 1 ok -\nN done\n", "N", 1);
        assert!(dup.violation.unwrap().contains("duplicate"));
        let late = parse_remote("N done\nN test 0 1 ok -\n", "N", 1);
        assert_eq!(late.violation.as_deref(), Some("output after done"));
        let range = parse_remote("N test 3 1 ok -\nN done\n", "N", 1);
        assert!(range.violation.unwrap().contains("out of range"));
        let v = parse_remote("N violation load:SyntaxError\n", "N", 1);
        assert!(v.done && v.violation.as_deref() == Some("load:SyntaxError"));
    }
}
