//! The code verifier: runs the response's Python program against tests in the [`crate::sandbox`].

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::sandbox::{KILL_GRACE, Sandbox, SandboxConfig};
use crate::sandbox_fusion::SandboxFusionClient;
use crate::{CodeReference, Outcome, Reference, Verdict, Verifier};

/// Where programs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeBackend {
    /// The local [`crate::sandbox`] (two processes, OS isolation).
    #[default]
    Local,
    /// A SandboxFusion-compatible server at `sandbox_url` ([`crate::sandbox_fusion`]).
    SandboxFusion,
}

/// How passed tests become a reward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewardMode {
    /// Fraction of tests passed (CodeRL-style partial credit).
    #[default]
    Fraction,
    /// 1 only when every test passes (pass@1 as a reward).
    AllOrNothing,
}

/// Knobs of [`CodeVerifier`] (`[verifier] kind = "code"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeConfig {
    /// Wall-clock limit per program run, seconds (default 20: MBPP task 123 needs ~4 s of CPU on a
    /// loaded 2-core machine) **\[PROPOSED\]**. A reference's `timeout_s` may only shorten it.
    /// This is the one time limit: a batch's per-item limit is this plus
    /// [`crate::sandbox::KILL_GRACE`] ([`CodeConfig::item_time_limit`]).
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Reward mapping (default `fraction`).
    #[serde(default)]
    pub reward: RewardMode,
    /// Sandbox limits (local backend).
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// Where programs run (default `local`).
    #[serde(default)]
    pub backend: CodeBackend,
    /// Base URL of the SandboxFusion-compatible server (`http://host:port`), required by
    /// `backend = "sandbox_fusion"`.
    #[serde(default)]
    pub sandbox_url: Option<String>,
    /// Limit of one request to the server, seconds (default `timeout_s` + 10: the run, the
    /// server's kill and the transfer).
    #[serde(default)]
    pub request_timeout_s: Option<f64>,
    /// The execution-aware dense code reward (`[verifier.dense]`, [`crate::dense`]): syntax,
    /// tests, style, security and execution components with per-line penalties. Off when
    /// absent. Local backend only, with `reward = "fraction"`.
    #[serde(default)]
    pub dense: Option<crate::dense::DenseConfig>,
}

/// Largest accepted wall-clock limit of one run, seconds.
const MAX_TIMEOUT_S: f64 = 3600.0;

fn default_timeout() -> f64 {
    20.0
}

impl Default for CodeConfig {
    fn default() -> Self {
        CodeConfig {
            timeout_s: default_timeout(),
            reward: RewardMode::default(),
            sandbox: SandboxConfig::default(),
            backend: CodeBackend::default(),
            sandbox_url: None,
            request_timeout_s: None,
            dense: None,
        }
    }
}

impl CodeConfig {
    /// The per-item limit for [`crate::verify_batch`]: the run's wall-clock limit plus the time
    /// the sandbox may need to kill and reap ([`KILL_GRACE`]), so a batch never abandons a
    /// worker whose sandbox is still within its own limit.
    ///
    /// With `backend = "sandbox_fusion"` it is the request limit plus one second, so the batch
    /// never abandons a request the client is still waiting for.
    pub fn item_time_limit(&self) -> Duration {
        match self.backend {
            CodeBackend::Local => {
                Duration::from_secs_f64(self.timeout_s.clamp(0.0, MAX_TIMEOUT_S)) + KILL_GRACE
            }
            CodeBackend::SandboxFusion => self.request_timeout() + Duration::from_secs(1),
        }
    }

    /// The limit of one request to the remote server ([`CodeConfig::request_timeout_s`]).
    pub fn request_timeout(&self) -> Duration {
        let t = self
            .request_timeout_s
            .unwrap_or(self.timeout_s + 10.0)
            .clamp(0.0, 2.0 * MAX_TIMEOUT_S);
        Duration::from_secs_f64(t)
    }

    /// Checks `[verifier.dense]` when it is set: its knobs ([`crate::DenseConfig::validate`]),
    /// the local backend (the analyzer and the traceback lines run in the local sandbox) and
    /// `reward = "fraction"` (r_func is the fraction of tests passed).
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] naming the key.
    pub fn check_dense(&self) -> crate::Result<()> {
        let Some(dense) = &self.dense else {
            return Ok(());
        };
        dense.validate()?;
        let refuse = |reason: &str| crate::Error::InvalidConfig {
            field: "verifier.dense".into(),
            reason: reason.into(),
        };
        if self.backend != CodeBackend::Local {
            return Err(refuse(
                "the dense code reward needs backend = \"local\" (its analyzer and the \
                 traceback lines run in the local sandbox)",
            ));
        }
        if self.reward != RewardMode::Fraction {
            return Err(refuse(
                "the dense code reward's r_func is the fraction of tests passed; \
                 reward = \"all_or_nothing\" would be ignored",
            ));
        }
        Ok(())
    }

    /// Validates the knobs, finds the interpreter and probes the isolation.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] for a non-positive timeout or a zero limit;
    /// [`crate::Error::Sandbox`] when no interpreter starts, or when the isolation the host
    /// offers lacks a layer of `sandbox.require` and `sandbox.allow_weak_sandbox` is off.
    /// With `backend = "sandbox_fusion"` no local interpreter is needed; instead the server
    /// must run a probe program, else [`crate::Error::InvalidConfig`] names
    /// `verifier.sandbox_url`.
    pub fn init(&self) -> crate::Result<CodeVerifier> {
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= MAX_TIMEOUT_S)
        {
            return Err(crate::Error::InvalidConfig {
                field: "code.timeout_s".into(),
                reason: format!("{} must be in (0, 3600]", self.timeout_s),
            });
        }
        self.check_dense()?;
        if self.backend == CodeBackend::Local {
            return Ok(CodeVerifier {
                config: self.clone(),
                sandbox: Some(Sandbox::new(&self.sandbox)?),
                remote: None,
            });
        }
        let bad_url = |reason: String| crate::Error::InvalidConfig {
            field: "verifier.sandbox_url".into(),
            reason,
        };
        let url = match self.sandbox_url.as_deref().map(str::trim) {
            None | Some("") => {
                return Err(bad_url(
                    "backend = \"sandbox_fusion\" needs the server's base URL".into(),
                ));
            }
            Some(u) if !(u.starts_with("http://") || u.starts_with("https://")) => {
                return Err(bad_url(format!("`{u}` is not an http:// or https:// URL")));
            }
            Some(u) => u,
        };
        if let Some(t) = self.request_timeout_s
            && !(t.is_finite() && t > 0.0 && t <= 2.0 * MAX_TIMEOUT_S)
        {
            return Err(crate::Error::InvalidConfig {
                field: "verifier.request_timeout_s".into(),
                reason: format!("{t} must be in (0, 7200]"),
            });
        }
        let client = SandboxFusionClient::new(url, self.request_timeout());
        client
            .probe()
            .map_err(|e| bad_url(format!("the server does not run code: {e}")))?;
        Ok(CodeVerifier {
            config: self.clone(),
            sandbox: None,
            remote: Some(client),
        })
    }
}

/// Runs a response's program against MBPP asserts, a HumanEval `check`, or stdin/stdout cases.
///
/// The program is the last fenced code block of the response (```` ```python ```` preferred), or
/// the whole response; a reference's `prefix` (HumanEval `prompt`) is prepended. The program
/// loads in the sandboxed runner ([`crate::sandbox::RUNNER`]); the setup code, the tests and
/// `check` run in the separate trusted checker ([`crate::sandbox::CHECKER`]), which calls the
/// program's functions across the process boundary and gets plain values back. The verdict is
/// built only from the checker's report; any protocol violation (wrong nonce, a duplicate or
/// missing test, output after `done`, a load error, a malformed reply) scores 0.
#[derive(Debug, Clone)]
pub struct CodeVerifier {
    config: CodeConfig,
    sandbox: Option<Sandbox>,
    remote: Option<SandboxFusionClient>,
}

impl CodeVerifier {
    /// The local sandbox this verifier runs programs in (to report its isolation); `None` with
    /// `backend = "sandbox_fusion"`.
    pub fn sandbox(&self) -> Option<&Sandbox> {
        self.sandbox.as_ref()
    }

    /// The remote server's client with `backend = "sandbox_fusion"`.
    pub fn remote(&self) -> Option<&SandboxFusionClient> {
        self.remote.as_ref()
    }

    /// The per-item limit for [`crate::verify_batch`] ([`CodeConfig::item_time_limit`]).
    pub fn item_time_limit(&self) -> Duration {
        self.config.item_time_limit()
    }
}

/// The program in a response: the last ```` ```python ```` / ```` ```py ```` block, else the last
/// fenced block, else the whole text.
pub fn extract_program(response: &str) -> String {
    extract_program_at(response).1
}

/// [`extract_program`] and the byte offset in `response` where the program starts (0 for the
/// whole text): line `k` of the program is line `k` of `response[offset..]`, which is how the
/// dense code reward maps a program line back to characters of the response.
pub fn extract_program_at(response: &str) -> (usize, String) {
    let mut blocks: Vec<(String, usize, String)> = Vec::new();
    let mut rest = response;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let (lang, body) = after.split_once('\n').unwrap_or((after, ""));
        let at = response.len() - body.len();
        match body.find("```") {
            Some(end) => {
                blocks.push((
                    lang.trim().to_ascii_lowercase(),
                    at,
                    body[..end].to_string(),
                ));
                rest = &body[end + 3..];
            }
            None => {
                // An unclosed block (a truncated generation) still holds the program.
                blocks.push((lang.trim().to_ascii_lowercase(), at, body.to_string()));
                break;
            }
        }
    }
    let python = blocks
        .iter()
        .rev()
        .find(|(l, ..)| l == "python" || l == "py" || l == "python3");
    match python.or(blocks.last()) {
        Some((_, at, body)) => (*at, body.clone()),
        None => (0, response.to_string()),
    }
}

/// 128 random bits in hex: the verdict channel's secret of one run.
pub(crate) fn nonce() -> String {
    let mut bytes = [0u8; 16];
    // SAFETY: getrandom fills the buffer it is given.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != 16 {
        // No kernel randomness: fall back to time and address entropy (still unknown to the
        // program, which is started after this value is fixed).
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mix = t.as_nanos() ^ (&bytes as *const _ as u128).rotate_left(64);
        bytes = mix.to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the checker's report channel said, parsed strictly.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Per test: passed, result name, message.
    pub(crate) results: Vec<Option<(bool, String, String)>>,
    /// The runner's view of seccomp and `NO_NEW_PRIVS` (from `/proc/self/status`).
    pub(crate) hello: Option<(i64, i64)>,
    /// The report ended with `done` (or `violation`).
    pub(crate) done: bool,
    /// The first protocol violation, if any (reward 0).
    pub(crate) violation: Option<String>,
    /// Traceback lines the checker reported (`tb <index|load> <line>`, local backend): the test
    /// (`None` for the load) that failed on an exception of the program, and the line of the
    /// program it was raised at as the runner reported it (0 = unknown). The runner is the
    /// program's process, so the line is a hint that the dense reward range-checks.
    pub(crate) tracebacks: Vec<(Option<usize>, usize)>,
}

/// The last 1,500 characters of a program's output, for a verdict's details (both backends).
pub(crate) fn stderr_tail(s: &str) -> &str {
    let start = s.char_indices().rev().nth(1500).map_or(0, |(k, _)| k);
    &s[start..]
}

impl Report {
    /// An empty report for `n` tests.
    pub(crate) fn new(n: usize) -> Self {
        Self {
            results: vec![None; n],
            ..Self::default()
        }
    }

    /// The per-test part of a verdict's details (both backends).
    pub(crate) fn tests_json(&self) -> Vec<serde_json::Value> {
        self.results
            .iter()
            .map(|t| match t {
                Some((ok, name, msg)) => {
                    serde_json::json!({ "passed": ok, "result": name, "message": msg })
                }
                None => serde_json::json!({ "passed": false, "result": "not_run" }),
            })
            .collect()
    }

    /// Records a protocol violation; the first one is kept.
    pub(crate) fn fail(&mut self, why: String) {
        if self.violation.is_none() {
            self.violation = Some(why);
        }
    }

    /// Records the fields after `test` of a report line, `<i> <0|1> <name> [<msg>]` (both
    /// harnesses write this form): each test once, its index in range.
    pub(crate) fn record_test<'a>(&mut self, mut fields: impl Iterator<Item = &'a str>) {
        let idx = fields.next().and_then(|v| v.parse::<usize>().ok());
        let (Some(i), Some(ok @ ("0" | "1")), Some(name)) = (idx, fields.next(), fields.next())
        else {
            self.fail("malformed test line".into());
            return;
        };
        let msg = fields.next().unwrap_or_default().to_string();
        if i >= self.results.len() {
            self.fail(format!("test index {i} out of range"));
        } else if self.results[i].is_some() {
            self.fail(format!("duplicate report for test {i}"));
        } else {
            self.results[i] = Some((ok == "1", name.to_string(), msg));
        }
    }
}

/// Outcome, reward and number of passed tests of a parsed report (both backends): a timeout
/// keeps the partial credit of the tests reported before it; a violation, a missing test or a
/// missing `done` is a crash worth 0.
pub(crate) fn score(
    report: &Report,
    timed_out: bool,
    n: usize,
    mode: RewardMode,
) -> (Outcome, f32, usize) {
    let passed = report
        .results
        .iter()
        .filter(|t| matches!(t, Some((true, _, _))))
        .count();
    let all_reported = report.results.iter().all(Option::is_some);
    let outcome = if timed_out {
        Outcome::Timeout
    } else if report.violation.is_some() || !report.done || !all_reported {
        Outcome::Crashed
    } else if passed == n {
        Outcome::Correct
    } else if passed > 0 {
        Outcome::Partial
    } else {
        Outcome::Wrong
    };
    let reward = match (outcome, mode) {
        (Outcome::Correct, _) => 1.0,
        (Outcome::Partial | Outcome::Timeout, RewardMode::Fraction)
            if report.violation.is_none() =>
        {
            passed as f32 / n as f32
        }
        _ => 0.0,
    };
    (outcome, reward, passed)
}

/// Parses the checker's lines: `hello` first, one `test` line per index, then `done` (or
/// `violation`), all with the run's nonce; anything else is a violation.
fn parse_report(channel: &[u8], nonce: &str, n: usize) -> Report {
    let mut r = Report::new(n);
    let Ok(text) = std::str::from_utf8(channel) else {
        r.fail("report is not UTF-8".into());
        return r;
    };
    if !text.is_empty() && !text.ends_with('\n') {
        r.fail("report ends mid-line".into());
    }
    for (k, line) in text.lines().enumerate() {
        let mut f = line.splitn(6, ' ');
        if f.next() != Some(nonce) {
            r.fail(format!("line {} has a wrong nonce", k + 1));
            continue;
        }
        if r.done {
            r.fail("output after done".into());
            continue;
        }
        match f.next() {
            Some("hello") if k == 0 => {
                let a = f.next().and_then(|v| v.parse::<i64>().ok());
                let b = f.next().and_then(|v| v.parse::<i64>().ok());
                match (a, b, f.next()) {
                    (Some(a), Some(b), None) => r.hello = Some((a, b)),
                    _ => r.fail("malformed hello".into()),
                }
            }
            Some("test") if r.hello.is_some() => r.record_test(f),
            Some("tb") if r.hello.is_some() => {
                let test = match f.next() {
                    Some("load") => Some(None),
                    Some(i) => i.parse::<usize>().ok().filter(|&i| i < n).map(Some),
                    None => None,
                };
                match (
                    test,
                    f.next().and_then(|v| v.parse::<usize>().ok()),
                    f.next(),
                ) {
                    (Some(test), Some(line), None) => r.tracebacks.push((test, line)),
                    _ => r.fail("malformed tb line".into()),
                }
            }
            Some("done") if r.hello.is_some() && f.next().is_none() => r.done = true,
            Some("violation") => {
                r.fail(f.collect::<Vec<_>>().join(" "));
                r.done = true;
            }
            _ => r.fail(format!("unexpected line {}", k + 1)),
        }
    }
    r
}

impl CodeVerifier {
    /// The wall-clock limit of one run of `reference`: the reference's own `timeout_s` when it
    /// is shorter, else the config's (the config is the upper bound).
    pub fn run_limit(&self, reference: &CodeReference) -> Duration {
        let t = reference
            .timeout_s
            .filter(|t| t.is_finite() && *t > 0.0)
            .map_or(self.config.timeout_s, |t| t.min(self.config.timeout_s));
        Duration::from_secs_f64(t)
    }

    fn run(&self, response: &str, r: &CodeReference) -> Verdict {
        let n = r.num_tests();
        if n == 0 {
            return Verdict::zero(Outcome::Error, "reference has no tests");
        }
        let (at, body) = extract_program_at(response);
        if let (Some(dense), Some(sandbox)) = (&self.config.dense, &self.sandbox) {
            return crate::dense::verify_dense(self, sandbox, dense, response, at, &body, r);
        }
        let program = format!("{}{}", r.prefix, body);
        let nonce = nonce();
        let sandbox = match (&self.sandbox, &self.remote) {
            (Some(s), _) => s,
            (None, Some(remote)) => {
                return remote.verify(program, r, self.run_limit(r), self.config.reward, &nonce);
            }
            (None, None) => return Verdict::zero(Outcome::Error, "code verifier has no backend"),
        };
        self.run_local(sandbox, program, r, &nonce).0
    }

    /// One run of `program` against `r`'s tests in the local sandbox: the verdict and the
    /// checker's parsed report.
    pub(crate) fn run_local(
        &self,
        sandbox: &Sandbox,
        program: String,
        r: &CodeReference,
        nonce: &str,
    ) -> (Verdict, Report) {
        let n = r.num_tests();
        let spec = json!({
            "nonce": nonce,
            "program": program,
            "setup": r.setup_code,
            "tests": r.tests,
            "check": r.check,
            "entry_point": r.entry_point,
            "io_cases": r.io_cases,
        });
        let out = match sandbox.check(spec.to_string().as_bytes(), self.run_limit(r)) {
            Ok(out) => out,
            Err(e) => return (Verdict::zero(Outcome::Error, e.to_string()), Report::new(n)),
        };
        let report = parse_report(&out.channel, nonce, n);
        let iso = sandbox.isolation();
        // The runner confirms the kernel's view before the program exists; a run whose filter
        // is not in force is the verifier's failure, not the program's.
        let layers_ok = match report.hello {
            Some((seccomp, nnp)) => {
                (!iso.seccomp || seccomp == 2) && (!iso.no_new_privs || nnp == 1)
            }
            None => true,
        };
        let (mut outcome, mut reward, passed) =
            score(&report, out.timed_out, n, self.config.reward);
        if !layers_ok {
            (outcome, reward) = (Outcome::Error, 0.0);
        } else if !out.timed_out && report.hello.is_none() {
            (outcome, reward) = (Outcome::Crashed, 0.0);
        }
        let tail = |b: &[u8]| stderr_tail(&String::from_utf8_lossy(b)).to_string();
        let details = json!({
            "passed": passed,
            "total": n,
            "tests": report.tests_json(),
            "protocol_violation": report.violation,
            "layers_confirmed": layers_ok,
            "finished": report.done,
            "timed_out": out.timed_out,
            "exit_code": out.program.code,
            "signal": out.program.signal,
            "wall_s": out.wall.as_secs_f64(),
            "output_truncated": out.program.truncated,
            "stderr_tail": tail(&out.program.stderr),
            "checker_stderr_tail": tail(&out.checker.stderr),
        });
        let verdict = Verdict::new(reward, outcome, Some(program), details);
        (verdict, report)
    }
}

impl Verifier for CodeVerifier {
    fn verify(&self, response: &str, reference: &Reference) -> Verdict {
        match reference {
            Reference::Code(r) => self.run(response, r),
            _ => Verdict::zero(Outcome::Error, "code verifier needs a code reference"),
        }
    }

    fn name(&self) -> &'static str {
        "code"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_extraction() {
        assert_eq!(extract_program("x = 1"), "x = 1");
        assert_eq!(
            extract_program("Here:\n```python\ndef f():\n    return 1\n```\nDone"),
            "def f():\n    return 1\n"
        );
        assert_eq!(extract_program("```\na\n```\n```py\nb\n```"), "b\n");
        assert_eq!(
            extract_program("```python\nb\n```\n```text\nout\n```"),
            "b\n"
        );
        assert_eq!(extract_program("```python\ndef f(): pass"), "def f(): pass");
    }

    #[test]
    fn program_offset_points_at_the_block_body() {
        let r = "Sure:\n```python\nx = 1\n```\n";
        let (at, p) = extract_program_at(r);
        assert_eq!((at, p.as_str()), (16, "x = 1\n"));
        assert!(r[at..].starts_with(&p));
        assert_eq!(extract_program_at("x = 1"), (0, "x = 1".to_string()));
        let (at, p) = extract_program_at("```\na\n```\n```py\nb\n```");
        assert_eq!((at, p.as_str()), (16, "b\n"));
    }
}
