//! Timeline extraction: a run's `metrics.jsonl` as per-step phase durations (PlexRL, arXiv
//! 2605.20863, methods-extra §22: the measured input of the multiplexing simulator).
//!
//! The trainer logs per step (`crates/rlvr-train/src/step/`, `run/mod.rs`): `time/rollout_s`
//! (sampling, and rescoring where it happens), `time/verify_s` (reward programs, CPU only),
//! `time/update_s` (every optimizer pass), `time/step_s` (the whole step), and where they happen
//! `time/token_credit_s` (CEPO / OPPO's extra no-grad scoring passes) and `time/weight_sync_s`
//! (pushing the weights to a remote engine). Everything of the step the phases do not cover is
//! host overhead (`rest_s`). Evaluation and checkpoints happen outside `time/step_s` and are not
//! in the timeline.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// One training step's measured phase durations, in seconds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StepTimes {
    /// `time/rollout_s`: generation (GPU: the generation service).
    pub(crate) rollout_s: f64,
    /// `time/verify_s`: reward programs (CPU only: the GPU idles).
    pub(crate) verify_s: f64,
    /// `time/token_credit_s`: extra no-grad log-prob passes of the policy (GPU), 0 if absent.
    pub(crate) logprob_s: f64,
    /// `time/weight_sync_s`: the weight push to a remote engine (GPU: the engine reloads), 0 if
    /// absent.
    pub(crate) sync_s: f64,
    /// `time/update_s`: the policy update (GPU: the train service).
    pub(crate) update_s: f64,
    /// `time/step_s` minus every phase above: host overhead (the GPU idles).
    pub(crate) rest_s: f64,
    /// `response/length_mean`, when logged: mean response length in tokens.
    pub(crate) length_mean: Option<f64>,
    /// `response/truncated_frac`, when logged: the share of responses cut at `max_new_tokens`.
    pub(crate) truncated_frac: Option<f64>,
}

impl StepTimes {
    /// Seconds of the step that hold the GPU (rollout, log-prob passes, weight sync, update).
    pub(crate) fn gpu_s(&self) -> f64 {
        self.rollout_s + self.logprob_s + self.sync_s + self.update_s
    }

    /// The whole step, `time/step_s`.
    pub(crate) fn step_s(&self) -> f64 {
        self.gpu_s() + self.verify_s + self.rest_s
    }
}

/// A run's measured timeline: its steps in order, and its generation cap.
#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    /// The run's name (its directory's name).
    pub(crate) name: String,
    /// One entry per logged step.
    pub(crate) steps: Vec<StepTimes>,
    /// `rollout.max_new_tokens` of the run's `config.toml`, when that file is beside the metrics.
    pub(crate) max_new_tokens: Option<usize>,
}

/// Why a timeline could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TimelineError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A line is not a metrics record with the step's timings.
    #[error("{path}:{line}: {message}")]
    Malformed {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// The file holds no step.
    #[error("{path}: no step with timings (an empty metrics.jsonl)")]
    Empty { path: PathBuf },
    /// `config.toml` beside the metrics is not valid TOML.
    #[error("{path}: {message}")]
    Config { path: PathBuf, message: String },
}

/// The keys every step must carry.
const REQUIRED: [&str; 4] = [
    "time/rollout_s",
    "time/verify_s",
    "time/update_s",
    "time/step_s",
];

/// Reads a timeline from a run directory (its `metrics.jsonl` and `config.toml`) or from a
/// `metrics.jsonl` path (a `config.toml` beside it is read when present).
pub(crate) fn read(path: &Path) -> Result<Timeline, TimelineError> {
    let metrics = if path.is_dir() {
        path.join("metrics.jsonl")
    } else {
        path.to_path_buf()
    };
    let dir = metrics.parent().unwrap_or(Path::new("."));
    let name = dir
        .file_name()
        .map_or_else(|| "run".to_string(), |n| n.to_string_lossy().into_owned());
    let text = std::fs::read_to_string(&metrics).map_err(|source| TimelineError::Io {
        path: metrics.clone(),
        source,
    })?;
    let steps = parse(&metrics, &text)?;
    let config = dir.join("config.toml");
    let max_new_tokens = if config.is_file() {
        read_max_new_tokens(&config)?
    } else {
        None
    };
    Ok(Timeline {
        name,
        steps,
        max_new_tokens,
    })
}

/// Parses `metrics.jsonl` text (blank lines skipped); `path` only names the file in errors.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Vec<StepTimes>, TimelineError> {
    let mut steps = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| TimelineError::Malformed {
            path: path.to_path_buf(),
            line: i + 1,
            message,
        };
        let value: Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not a JSON line: {e}")))?;
        let Value::Object(record) = value else {
            return Err(bad("not a JSON object".into()));
        };
        steps.push(step_times(&record).map_err(bad)?);
    }
    if steps.is_empty() {
        return Err(TimelineError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(steps)
}

/// One record's phases; the message names the offending key.
fn step_times(record: &Map<String, Value>) -> Result<StepTimes, String> {
    let number = |key: &str| -> Result<Option<f64>, String> {
        match record.get(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                _ => Err(format!("`{key}` is {v}, not a finite number >= 0")),
            },
        }
    };
    for key in REQUIRED {
        if !record.contains_key(key) {
            return Err(format!(
                "`{key}` missing (each step needs {})",
                REQUIRED.join(", ")
            ));
        }
    }
    let req = |key: &str| number(key).map(|x| x.unwrap_or(0.0));
    let (rollout_s, verify_s, update_s, step_s) = (
        req("time/rollout_s")?,
        req("time/verify_s")?,
        req("time/update_s")?,
        req("time/step_s")?,
    );
    let logprob_s = req("time/token_credit_s")?;
    let sync_s = req("time/weight_sync_s")?;
    let phases = rollout_s + verify_s + update_s + logprob_s + sync_s;
    // The phases are timed separately inside the step: their sum can pass `time/step_s` only by
    // timer rounding.
    if phases > step_s * 1.001 + 1e-3 {
        return Err(format!(
            "the phases sum to {phases:.6} s, more than `time/step_s` = {step_s:.6} s"
        ));
    }
    Ok(StepTimes {
        rollout_s,
        verify_s,
        logprob_s,
        sync_s,
        update_s,
        rest_s: (step_s - phases).max(0.0),
        length_mean: number("response/length_mean")?,
        truncated_frac: number("response/truncated_frac")?,
    })
}

/// `rollout.max_new_tokens` of a run's `config.toml`, if set.
fn read_max_new_tokens(path: &Path) -> Result<Option<usize>, TimelineError> {
    let text = std::fs::read_to_string(path).map_err(|source| TimelineError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |message: String| TimelineError::Config {
        path: path.to_path_buf(),
        message,
    };
    let table: toml::Table = text.parse().map_err(|e| bad(format!("{e}")))?;
    match table.get("rollout").and_then(|r| r.get("max_new_tokens")) {
        None => Ok(None),
        Some(v) => match v.as_integer() {
            Some(n) if n > 0 => Ok(Some(n as usize)),
            _ => Err(bad(format!(
                "rollout.max_new_tokens is {v}, not a positive integer"
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/plexrl/{name}"))
    }

    #[test]
    fn plexrl_timeline_splits_a_step_into_phases() {
        let line = r#"{"step":1,"time/step_s":10,"time/rollout_s":3,"time/verify_s":1,"time/update_s":4,"time/token_credit_s":0.5,"time/weight_sync_s":0.25,"response/length_mean":2.5}"#;
        let steps = parse(Path::new("m.jsonl"), &format!("{line}\n\n")).unwrap();
        assert_eq!(steps.len(), 1);
        let s = &steps[0];
        assert_eq!(
            (s.rollout_s, s.verify_s, s.update_s, s.logprob_s, s.sync_s),
            (3.0, 1.0, 4.0, 0.5, 0.25)
        );
        assert_eq!(s.rest_s, 1.25);
        assert_eq!(s.gpu_s(), 7.75);
        assert_eq!(s.length_mean, Some(2.5));
        assert_eq!(s.truncated_frac, None);
    }

    #[test]
    fn plexrl_timeline_malformed_line_names_file_and_line() {
        let err = read(&fixture("malformed")).unwrap_err().to_string();
        assert!(
            err.contains("malformed/metrics.jsonl:2: not a JSON line"),
            "{err}"
        );
    }

    #[test]
    fn plexrl_timeline_missing_key_and_bad_sum_are_refused() {
        let path = Path::new("run/metrics.jsonl");
        let ok = r#"{"time/step_s":1,"time/rollout_s":0.5,"time/verify_s":0,"time/update_s":0.5}"#;
        let missing = r#"{"time/step_s":1,"time/rollout_s":0.5,"time/verify_s":0}"#;
        let err = parse(path, &format!("{ok}\n{missing}\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("run/metrics.jsonl:2: `time/update_s` missing"),
            "{err}"
        );
        let over =
            r#"{"time/step_s":1,"time/rollout_s":0.9,"time/verify_s":0,"time/update_s":0.9}"#;
        let err = parse(path, over).unwrap_err().to_string();
        assert!(err.contains(":1: the phases sum to 1.8"), "{err}");
        let negative =
            r#"{"time/step_s":1,"time/rollout_s":-1,"time/verify_s":0,"time/update_s":0}"#;
        let err = parse(path, negative).unwrap_err().to_string();
        assert!(err.contains("`time/rollout_s` is -1"), "{err}");
        assert!(matches!(
            parse(path, "\n"),
            Err(TimelineError::Empty { .. })
        ));
    }

    #[test]
    fn plexrl_timeline_reads_a_committed_run_and_its_generation_cap() {
        let t = read(&fixture("default-arith")).unwrap();
        assert_eq!(t.name, "default-arith");
        assert_eq!(t.steps.len(), 100);
        assert_eq!(t.max_new_tokens, Some(8));
        // The first step as logged (xtask/fixtures/plexrl/default-arith/metrics.jsonl, line 1).
        let s = &t.steps[0];
        assert_eq!(s.rollout_s, 0.150970039);
        assert!((s.rest_s - (0.776688474 - 0.150970039 - 0.616912051 - 0.008380865)).abs() < 1e-12);
        assert_eq!(s.truncated_frac, Some(0.328125));
    }
}
