//! The code verifier: runs the response's Python program against tests in the [`crate::sandbox`].

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::sandbox::{KILL_GRACE, Sandbox, SandboxConfig};
use crate::{CodeReference, Outcome, Reference, Verdict, Verifier};

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
    /// Sandbox limits.
    #[serde(default)]
    pub sandbox: SandboxConfig,
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
        }
    }
}

impl CodeConfig {
    /// The per-item limit for [`crate::verify_batch`]: the run's wall-clock limit plus the time
    /// the sandbox may need to kill and reap ([`KILL_GRACE`]), so a batch never abandons a
    /// worker whose sandbox is still within its own limit.
    pub fn item_time_limit(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_s.clamp(0.0, MAX_TIMEOUT_S)) + KILL_GRACE
    }

    /// Validates the knobs, finds the interpreter and probes the isolation.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] for a non-positive timeout or a zero limit;
    /// [`crate::Error::Sandbox`] when no interpreter starts, or when the isolation the host
    /// offers lacks a layer of `sandbox.require` and `sandbox.allow_weak_sandbox` is off.
    pub fn init(&self) -> crate::Result<CodeVerifier> {
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= MAX_TIMEOUT_S)
        {
            return Err(crate::Error::InvalidConfig {
                field: "code.timeout_s".into(),
                reason: format!("{} must be in (0, 3600]", self.timeout_s),
            });
        }
        Ok(CodeVerifier {
            config: self.clone(),
            sandbox: Sandbox::new(&self.sandbox)?,
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
    sandbox: Sandbox,
}

impl CodeVerifier {
    /// The sandbox this verifier runs programs in (to report its isolation).
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The per-item limit for [`crate::verify_batch`] ([`CodeConfig::item_time_limit`]).
    pub fn item_time_limit(&self) -> Duration {
        self.config.item_time_limit()
    }
}

/// The program in a response: the last ```` ```python ```` / ```` ```py ```` block, else the last
/// fenced block, else the whole text.
pub fn extract_program(response: &str) -> String {
    let mut blocks: Vec<(String, String)> = Vec::new();
    let mut rest = response;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let (lang, body) = after.split_once('\n').unwrap_or((after, ""));
        match body.find("```") {
            Some(end) => {
                blocks.push((lang.trim().to_ascii_lowercase(), body[..end].to_string()));
                rest = &body[end + 3..];
            }
            None => {
                // An unclosed block (a truncated generation) still holds the program.
                blocks.push((lang.trim().to_ascii_lowercase(), body.to_string()));
                break;
            }
        }
    }
    let python = blocks
        .iter()
        .rev()
        .find(|(l, _)| l == "python" || l == "py" || l == "python3");
    match python.or(blocks.last()) {
        Some((_, body)) => body.clone(),
        None => response.to_string(),
    }
}

fn nonce() -> String {
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
struct Report {
    /// Per test: passed, result name, message.
    results: Vec<Option<(bool, String, String)>>,
    /// The runner's view of seccomp and `NO_NEW_PRIVS` (from `/proc/self/status`).
    hello: Option<(i64, i64)>,
    done: bool,
    /// The first protocol violation, if any (reward 0).
    violation: Option<String>,
}

/// Parses the checker's lines: `hello` first, one `test` line per index, then `done` (or
/// `violation`), all with the run's nonce; anything else is a violation.
fn parse_report(channel: &[u8], nonce: &str, n: usize) -> Report {
    let mut r = Report {
        results: vec![None; n],
        ..Report::default()
    };
    let text = match std::str::from_utf8(channel) {
        Ok(t) => t,
        Err(_) => {
            r.violation = Some("report is not UTF-8".into());
            return r;
        }
    };
    let fail = |r: &mut Report, why: String| {
        if r.violation.is_none() {
            r.violation = Some(why);
        }
    };
    if !text.is_empty() && !text.ends_with('\n') {
        fail(&mut r, "report ends mid-line".into());
    }
    for (k, line) in text.lines().enumerate() {
        let mut f = line.splitn(6, ' ');
        if f.next() != Some(nonce) {
            fail(&mut r, format!("line {} has a wrong nonce", k + 1));
            continue;
        }
        if r.done {
            fail(&mut r, "output after done".into());
            continue;
        }
        match f.next() {
            Some("hello") if k == 0 => {
                let a = f.next().and_then(|v| v.parse::<i64>().ok());
                let b = f.next().and_then(|v| v.parse::<i64>().ok());
                match (a, b, f.next()) {
                    (Some(a), Some(b), None) => r.hello = Some((a, b)),
                    _ => fail(&mut r, "malformed hello".into()),
                }
            }
            Some("test") if r.hello.is_some() => {
                let idx = f.next().and_then(|v| v.parse::<usize>().ok());
                let ok = f.next();
                let (Some(i), Some(ok @ ("0" | "1")), Some(name)) = (idx, ok, f.next()) else {
                    fail(&mut r, format!("malformed test line {}", k + 1));
                    continue;
                };
                let msg = f.next().unwrap_or_default().to_string();
                if i >= n {
                    fail(&mut r, format!("test index {i} out of range"));
                } else if r.results[i].is_some() {
                    fail(&mut r, format!("duplicate report for test {i}"));
                } else {
                    r.results[i] = Some((ok == "1", name.to_string(), msg));
                }
            }
            Some("done") if r.hello.is_some() && f.next().is_none() => r.done = true,
            Some("violation") => {
                fail(&mut r, f.collect::<Vec<_>>().join(" "));
                r.done = true;
            }
            _ => fail(&mut r, format!("unexpected line {}", k + 1)),
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
        let program = format!("{}{}", r.prefix, extract_program(response));
        let nonce = nonce();
        let spec = json!({
            "nonce": nonce,
            "program": program,
            "setup": r.setup_code,
            "tests": r.tests,
            "check": r.check,
            "entry_point": r.entry_point,
            "io_cases": r.io_cases,
        });
        let out = match self
            .sandbox
            .check(spec.to_string().as_bytes(), self.run_limit(r))
        {
            Ok(out) => out,
            Err(e) => return Verdict::zero(Outcome::Error, e.to_string()),
        };
        let report = parse_report(&out.channel, &nonce, n);
        let iso = self.sandbox.isolation();
        // The runner confirms the kernel's view before the program exists; a run whose filter
        // is not in force is the verifier's failure, not the program's.
        let layers_ok = match report.hello {
            Some((seccomp, nnp)) => {
                (!iso.seccomp || seccomp == 2) && (!iso.no_new_privs || nnp == 1)
            }
            None => true,
        };
        let passed = report
            .results
            .iter()
            .filter(|t| matches!(t, Some((true, _, _))))
            .count();
        let all_reported = report.results.iter().all(Option::is_some);
        let outcome = if !layers_ok {
            Outcome::Error
        } else if out.timed_out {
            Outcome::Timeout
        } else if report.violation.is_some()
            || report.hello.is_none()
            || !report.done
            || !all_reported
        {
            Outcome::Crashed
        } else if passed == n {
            Outcome::Correct
        } else if passed > 0 {
            Outcome::Partial
        } else {
            Outcome::Wrong
        };
        let reward = match (outcome, self.config.reward) {
            (Outcome::Correct, _) => 1.0,
            (Outcome::Partial | Outcome::Timeout, RewardMode::Fraction)
                if report.violation.is_none() =>
            {
                passed as f32 / n as f32
            }
            _ => 0.0,
        };
        let tail = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            let start = s.char_indices().rev().nth(1500).map_or(0, |(k, _)| k);
            s[start..].to_string()
        };
        let details = json!({
            "passed": passed,
            "total": n,
            "tests": report.results.iter().map(|t| match t {
                Some((ok, name, msg)) => json!({ "passed": ok, "result": name, "message": msg }),
                None => json!({ "passed": false, "result": "not_run" }),
            }).collect::<Vec<_>>(),
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
        Verdict::new(reward, outcome, Some(program), details)
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
}
