//! `kind = "command"`: a reward program in any language, kept running and fed JSON Lines.
//!
//! Protocol (the `rlvr-verify` line format): for each item the program reads one line on stdin,
//! the dataset record's fields plus `"response"` (`{"id": .., "prompt": "51-2=", "answer": "49",
//! "response": "49"}`), and writes one line on stdout, `{"reward": x}` with optional `"passed"`
//! (bool), `"outcome"` (`correct`, `partial`, `wrong`, `unparseable`, ...), `"extracted"`
//! (string) and `"details"` (any JSON). Replies come in request order; the program must flush
//! after each one and write nothing else on stdout (debugging goes to stderr).
//!
//! A small pool of long-lived processes serves the requests, one request in flight per process.
//! A reply that does not arrive within `timeout_s`, a process that exits, a reply that is not
//! JSON or whose reward is not a number in `[0, 1]` is that item's verdict (reward 0, outcome
//! `timeout`, `crashed` or `error`, the reason with the tail of the program's stderr), and the
//! process is killed and replaced by a fresh one on the next request.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{checked_reward, clip, outcome_of};
use crate::{Error, Outcome, Reference, Result, Verdict, Verifier};

/// Longest reply line read (bytes); a longer one is an error verdict.
const MAX_REPLY: u64 = 1 << 20;
/// Bytes of the program's stderr kept for failure messages.
const STDERR_TAIL: usize = 2048;
/// Characters of stderr quoted in a verdict's reason.
const STDERR_QUOTED: usize = 600;
/// How long a program is watched after it starts at build time: one that exits within this
/// window (a missing script, a syntax error) is a config error.
const START_PROBE: Duration = Duration::from_secs(1);
/// Extra time a fresh process gets for its first reply (its start-up: an interpreter, imports),
/// so that a busy machine does not turn start-up into timeouts.
const FIRST_REPLY_GRACE: Duration = Duration::from_secs(5);
/// Time beyond `timeout_s` that [`CommandConfig::item_time_limit`] allows for killing and
/// reaping a process that overran, so the batch never abandons a worker still inside its limit.
const REAP_GRACE: Duration = Duration::from_secs(5);

/// Knobs of [`CommandVerifier`] (`[verifier] kind = "command"`).
///
/// ```toml
/// [verifier]
/// kind = "command"
/// command = ["python3", "examples/rewards/exact_answer.py"]
/// timeout_s = 10
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    /// The program and its arguments (no shell). Relative paths resolve against the working
    /// directory of the process that scores (the trainer's), a bare name through `PATH`.
    #[serde(deserialize_with = "argv")]
    pub command: Vec<String>,
    /// Per-item limit in seconds, from writing the request to reading the reply (default 10). A
    /// fresh process gets 5 s more for its first reply (its start-up).
    #[serde(default = "default_timeout_s")]
    pub timeout_s: f64,
    /// Processes kept alive between items (default 0: two per logical CPU, the number of items
    /// [`crate::verify_batch`] scores at once).
    #[serde(default)]
    pub processes: usize,
}

fn default_timeout_s() -> f64 {
    10.0
}

/// `command` as a list of strings, with an error that names the field (serde's own message
/// loses the name inside a tagged enum).
fn argv<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    Vec::<String>::deserialize(d).map_err(|e| {
        serde::de::Error::custom(format!(
            "`command` must be a list of strings (the program and its arguments, e.g. \
             [\"python3\", \"reward.py\"]): {e}"
        ))
    })
}

impl CommandConfig {
    /// The per-item limit for [`crate::verify_batch`]: `timeout_s` plus a fresh process's
    /// start-up grace (5 s) plus a grace for killing a process that overran (5 s); the verifier
    /// enforces `timeout_s` itself.
    pub fn item_time_limit(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_s.clamp(0.0, 86_400.0))
            + FIRST_REPLY_GRACE
            + REAP_GRACE
    }

    /// Validates the knobs, starts the first process and builds the verifier.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `verifier.command` when the argv is empty, the program
    /// cannot be started, or it exits right after starting (its stderr quoted);
    /// `verifier.timeout_s` outside `(0, 86400]`.
    pub fn init(&self) -> Result<CommandVerifier> {
        let bad = |field: &str, reason: String| Error::InvalidConfig {
            field: format!("verifier.{field}"),
            reason,
        };
        if self.command.is_empty() || self.command[0].is_empty() {
            return Err(bad(
                "command",
                "is empty: give the program and its arguments, e.g. [\"python3\", \"reward.py\"]"
                    .into(),
            ));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= 86_400.0) {
            return Err(bad(
                "timeout_s",
                format!("{} must be in (0, 86400]", self.timeout_s),
            ));
        }
        let argv = format!("{:?}", self.command);
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| "?".into());
        let mut first = Process::spawn(&self.command).map_err(|e| {
            bad(
                "command",
                format!("cannot start {argv}: {e} (working directory {cwd})"),
            )
        })?;
        let started = Instant::now();
        while started.elapsed() < START_PROBE {
            if let Ok(Some(status)) = first.child.try_wait() {
                return Err(bad(
                    "command",
                    format!(
                        "{argv} exited at start ({status}) before any request (working \
                         directory {cwd}); stderr: {}",
                        first.stderr_tail()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let processes = if self.processes == 0 {
            2 * std::thread::available_parallelism().map_or(2, |p| p.get())
        } else {
            self.processes
        };
        Ok(CommandVerifier {
            config: self.clone(),
            processes,
            idle: Mutex::new(vec![first]),
        })
    }
}

/// Scores responses with a user program that reads JSONL requests on stdin and writes one JSONL
/// verdict per line on stdout (see the module documentation for the protocol and failure
/// rules).
pub struct CommandVerifier {
    config: CommandConfig,
    /// Most idle processes kept.
    processes: usize,
    idle: Mutex<Vec<Process>>,
}

impl std::fmt::Debug for CommandVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandVerifier")
            .field("config", &self.config)
            .field("processes", &self.processes)
            .finish_non_exhaustive()
    }
}

impl CommandVerifier {
    /// Number of idle processes in the pool (for tests and diagnostics).
    pub fn idle_processes(&self) -> usize {
        self.idle.lock().map_or(0, |v| v.len())
    }

    fn take(&self) -> std::io::Result<Process> {
        if let Some(p) = self.idle.lock().ok().and_then(|mut v| v.pop()) {
            return Ok(p);
        }
        Process::spawn(&self.config.command)
    }

    fn give_back(&self, p: Process) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < self.processes
        {
            idle.push(p);
        }
    }

    /// One request/reply exchange; `Err` means the process must be replaced.
    fn exchange(&self, p: &mut Process, request: &str) -> std::result::Result<Verdict, Verdict> {
        let mut timeout = Duration::from_secs_f64(self.config.timeout_s);
        if !p.replied {
            timeout += FIRST_REPLY_GRACE;
        }
        if p.requests.send(format!("{request}\n")).is_err() {
            return Err(p.crashed("stopped reading its stdin"));
        }
        match p.replies.recv_timeout(timeout) {
            Ok(reply) => {
                p.replied = true;
                reply.and_then(|line| parse_reply(&line)).map_err(|reason| {
                    p.kill();
                    let tail = p.stderr_tail();
                    fail(
                        Outcome::Error,
                        format!("{reason} (process replaced); stderr tail: {tail}"),
                        tail,
                    )
                })
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                p.kill();
                let tail = p.stderr_tail();
                Err(fail(
                    Outcome::Timeout,
                    format!(
                        "reward program gave no reply within {} s (killed and replaced); \
                         stderr tail: {tail}",
                        timeout.as_secs_f64()
                    ),
                    tail,
                ))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(p.crashed("closed its stdout before replying"))
            }
        }
    }
}

impl Verifier for CommandVerifier {
    fn verify(&self, response: &str, reference: &Reference) -> Verdict {
        let Reference::Record { record } = reference else {
            return Verdict::zero(Outcome::Error, "command verifier needs a record reference");
        };
        let mut request = record.as_object().cloned().unwrap_or_default();
        request.insert("response".into(), Value::String(response.to_string()));
        let request = Value::Object(request).to_string();
        let mut p = match self.take() {
            Ok(p) => p,
            Err(e) => {
                return Verdict::zero(
                    Outcome::Error,
                    format!("cannot start reward program {:?}: {e}", self.config.command),
                );
            }
        };
        match self.exchange(&mut p, &request) {
            Ok(v) => {
                self.give_back(p);
                v
            }
            // Dropping the process kills it; the next request starts a fresh one.
            Err(v) => v,
        }
    }

    fn name(&self) -> &'static str {
        "command"
    }
}

/// A failure verdict: reward 0, the reason and the stderr tail in the details.
fn fail(outcome: Outcome, reason: String, stderr: String) -> Verdict {
    Verdict::new(
        0.0,
        outcome,
        None,
        json!({ "reason": reason, "stderr": stderr }),
    )
}

/// The verdict of one reply line, or why it is not a valid reply.
fn parse_reply(line: &str) -> std::result::Result<Verdict, String> {
    let shown = || clip(line.trim_end(), 200);
    let v: Value = serde_json::from_str(line)
        .map_err(|e| format!("reward program reply is not JSON ({e}): {:?}", shown()))?;
    let Value::Object(obj) = v else {
        return Err(format!(
            "reward program reply is not a JSON object: {:?}",
            shown()
        ));
    };
    let reward = match obj.get("reward") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(other) => {
            return Err(format!(
                "reward program reply has a non-numeric `reward` {other}: {:?}",
                shown()
            ));
        }
        None => {
            return Err(format!(
                "reward program reply has no `reward`: {:?}",
                shown()
            ));
        }
    };
    let reward = checked_reward(reward).map_err(|e| format!("reward program reply: {e}"))?;
    let passed = match obj.get("passed") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            return Err(format!(
                "reward program reply: `passed` {other} is not a bool"
            ));
        }
    };
    let outcome = match obj.get("outcome") {
        None | Some(Value::Null) => match passed {
            Some(true) => Outcome::Correct,
            Some(false) if reward >= 1.0 => Outcome::Partial,
            _ => outcome_of(reward),
        },
        Some(o) => serde_json::from_value::<Outcome>(o.clone()).map_err(|_| {
            format!(
                "reward program reply: `outcome` {o} is not one of correct, partial, wrong, \
                 unparseable, timeout, crashed, error"
            )
        })?,
    };
    let extracted = match obj.get("extracted") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    let mut verdict = Verdict::new(
        reward,
        outcome,
        extracted,
        obj.get("details").cloned().unwrap_or(Value::Null),
    );
    if let Some(p) = passed {
        verdict.passed = p;
    }
    Ok(verdict)
}

/// What the stderr reader keeps.
#[derive(Default)]
struct Tail {
    bytes: VecDeque<u8>,
    closed: bool,
}

/// One running reward program.
struct Process {
    child: Child,
    /// Request lines for the stdin writer thread (a write never blocks the scoring thread,
    /// even when the program stops reading).
    requests: mpsc::Sender<String>,
    /// Reply lines from the stdout reader thread (`Err` for an over-long line); closed at EOF.
    replies: mpsc::Receiver<std::result::Result<String, String>>,
    stderr: Arc<Mutex<Tail>>,
    /// Whether it has answered a request (a fresh process gets [`FIRST_REPLY_GRACE`]).
    replied: bool,
}

impl Process {
    fn spawn(argv: &[String]) -> std::io::Result<Process> {
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a kill reaches what a wrapper script started.
            .process_group(0)
            .spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("child pipes missing"));
        };
        let (requests, pending) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            let mut stdin = stdin;
            for line in pending {
                if stdin
                    .write_all(line.as_bytes())
                    .and_then(|()| stdin.flush())
                    .is_err()
                {
                    return;
                }
            }
        });
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match (&mut reader).take(MAX_REPLY).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if line.last() != Some(&b'\n') && line.len() as u64 >= MAX_REPLY {
                    let _ = tx.send(Err(format!(
                        "reward program reply is longer than {MAX_REPLY} bytes"
                    )));
                    return;
                }
                let text = String::from_utf8_lossy(&line).into_owned();
                if tx.send(Ok(text)).is_err() {
                    return;
                }
            }
        });
        let tail = Arc::new(Mutex::new(Tail::default()));
        let sink = Arc::clone(&tail);
        std::thread::spawn(move || {
            let mut stderr = stderr;
            let mut buf = [0u8; 4096];
            loop {
                let n = stderr.read(&mut buf).unwrap_or(0);
                let Ok(mut t) = sink.lock() else { return };
                if n == 0 {
                    t.closed = true;
                    return;
                }
                t.bytes.extend(&buf[..n]);
                let excess = t.bytes.len().saturating_sub(STDERR_TAIL);
                t.bytes.drain(..excess);
            }
        });
        Ok(Process {
            child,
            requests,
            replies,
            stderr: tail,
            replied: false,
        })
    }

    /// The last lines of the program's stderr (waits briefly for it to close when the program
    /// has ended, so its dying words are included).
    fn stderr_tail(&self) -> String {
        let deadline = Instant::now() + Duration::from_millis(300);
        loop {
            let closed = self.stderr.lock().map_or(true, |t| t.closed);
            if closed || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let bytes: Vec<u8> = self
            .stderr
            .lock()
            .map(|t| t.bytes.iter().copied().collect())
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        let skip = text.chars().count().saturating_sub(STDERR_QUOTED);
        let tail: String = text.chars().skip(skip).collect();
        if tail.is_empty() {
            "(empty)".into()
        } else if skip > 0 {
            format!("…{tail}")
        } else {
            tail
        }
    }

    /// The crash verdict of a process that stopped answering: its exit status (waited for
    /// briefly) and stderr tail.
    fn crashed(&mut self, what: &str) -> Verdict {
        let deadline = Instant::now() + Duration::from_secs(1);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s.to_string(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Ok(None) => break "still running".into(),
                Err(e) => break format!("status unknown: {e}"),
            }
        };
        self.kill();
        let tail = self.stderr_tail();
        fail(
            Outcome::Crashed,
            format!("reward program {what} ({status}); replaced; stderr tail: {tail}"),
            tail,
        )
    }

    /// Kills the process group (idempotent).
    fn kill(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: killpg takes plain integers. The child is not reaped yet, so its pid (the
            // group's id) cannot have been reused.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_lines_become_verdicts_or_reasons() {
        let v = parse_reply("{\"reward\": 1}\n").unwrap();
        assert!(v.passed && v.outcome == Outcome::Correct && v.reward == 1.0);
        let v = parse_reply(r#"{"reward": 0.25, "details": {"k": 1}}"#).unwrap();
        assert!(!v.passed && v.outcome == Outcome::Partial && v.details["k"] == 1);
        let v = parse_reply(r#"{"reward": 0, "outcome": "unparseable"}"#).unwrap();
        assert_eq!(v.outcome, Outcome::Unparseable);
        // `passed` wins over the outcome it would be derived from.
        let v = parse_reply(r#"{"reward": 1, "passed": false}"#).unwrap();
        assert!(!v.passed && v.outcome == Outcome::Partial);
        let v = parse_reply(r#"{"reward": 0.5, "passed": true}"#).unwrap();
        assert!(v.passed && v.outcome == Outcome::Correct && v.reward == 0.5);
        for (bad, needle) in [
            ("oops", "not JSON"),
            ("[1]", "not a JSON object"),
            (r#"{"score": 1}"#, "no `reward`"),
            (r#"{"reward": "1"}"#, "non-numeric"),
            (r#"{"reward": 1.5}"#, "outside [0, 1]"),
            (r#"{"reward": -0.1}"#, "outside [0, 1]"),
            (r#"{"reward": NaN}"#, "not JSON"),
            (r#"{"reward": 1, "passed": "yes"}"#, "not a bool"),
            (r#"{"reward": 1, "outcome": "great"}"#, "not one of"),
        ] {
            let e = parse_reply(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }
}
