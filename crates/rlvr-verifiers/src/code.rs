//! The code verifier: runs the response's Python program against tests in the [`crate::sandbox`].

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::sandbox::{HARNESS, Sandbox, SandboxConfig};
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
    /// loaded 2-core machine) **\[PROPOSED\]**. A reference's `timeout_s` overrides it.
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
    /// Validates the knobs, finds the interpreter and probes the isolation.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] for a non-positive timeout or a zero limit;
    /// [`crate::Error::Sandbox`] when no interpreter starts.
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
/// the whole response; a reference's `prefix` (HumanEval `prompt`) is prepended. The program,
/// then `setup_code`, then each test run in one sandboxed interpreter under the
/// [`crate::sandbox::HARNESS`], which reports each test on a private channel; the verdict is
/// built only from those reports.
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

impl CodeVerifier {
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
        // A reference's own limit is data, not configuration: bound it like the config's.
        let timeout = r
            .timeout_s
            .filter(|t| t.is_finite() && *t > 0.0)
            .map_or(self.config.timeout_s, |t| t.min(MAX_TIMEOUT_S));
        let out = match self.sandbox.run(
            &["-c", HARNESS],
            spec.to_string().as_bytes(),
            Duration::from_secs_f64(timeout),
        ) {
            Ok(out) => out,
            Err(e) => return Verdict::zero(Outcome::Error, e.to_string()),
        };
        let mut results: Vec<Option<(bool, String)>> = vec![None; n];
        let (mut done, mut load_error, mut forged) = (false, None, 0usize);
        for line in String::from_utf8_lossy(&out.channel).lines() {
            let mut f = line.splitn(5, ' ');
            let (Some(tag), Some(idx), Some(ok), Some(name)) =
                (f.next(), f.next(), f.next(), f.next())
            else {
                forged += 1;
                continue;
            };
            if tag != nonce {
                forged += 1;
                continue;
            }
            if idx == "done" {
                done = true;
            } else if idx == "-1" {
                load_error = Some(
                    format!("{name} {}", f.next().unwrap_or_default())
                        .trim()
                        .to_string(),
                );
            } else if let Ok(i) = idx.parse::<usize>()
                && i < n
                && results[i].is_none()
            {
                results[i] = Some((ok == "1", name.to_string()));
            }
        }
        let passed = results
            .iter()
            .filter(|r| matches!(r, Some((true, _))))
            .count();
        let outcome = if passed == n && done {
            Outcome::Correct
        } else if out.timed_out {
            Outcome::Timeout
        } else if load_error.is_some() || !done {
            if passed > 0 {
                Outcome::Partial
            } else {
                Outcome::Crashed
            }
        } else if passed > 0 {
            Outcome::Partial
        } else {
            Outcome::Wrong
        };
        let reward = match self.config.reward {
            _ if outcome == Outcome::Correct => 1.0,
            RewardMode::Fraction => passed as f32 / n as f32,
            RewardMode::AllOrNothing => 0.0,
        };
        let tail = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            let start = s.char_indices().rev().nth(1500).map_or(0, |(k, _)| k);
            s[start..].to_string()
        };
        let details = json!({
            "passed": passed,
            "total": n,
            "tests": results.iter().map(|r| match r {
                Some((ok, name)) => json!({ "passed": ok, "result": name }),
                None => json!({ "passed": false, "result": "not_run" }),
            }).collect::<Vec<_>>(),
            "load_error": load_error,
            "finished": done,
            "timed_out": out.timed_out,
            "exit_code": out.code,
            "signal": out.signal,
            "wall_s": out.wall.as_secs_f64(),
            "forged_reports": forged,
            "output_truncated": out.truncated,
            "stderr_tail": tail(&out.stderr),
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
