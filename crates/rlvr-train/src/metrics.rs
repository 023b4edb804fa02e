//! `metrics.jsonl`: one JSON object per step with flat, namespaced keys.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Flat metrics of one step, e.g. `reward/mean`, `objective/clip_frac_high`, `time/rollout_s`.
pub type Metrics = BTreeMap<String, f64>;

/// The mean of `values` (0 when there are none), for metrics.
pub fn mean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    sum / n.max(1) as f64
}

/// An append-only metrics file.
pub struct MetricsLog {
    path: PathBuf,
    file: File,
}

impl MetricsLog {
    /// Opens `path` for appending. With `keep_until = Some(step)` (a resumed run), lines of later
    /// steps, written after the checkpoint the run resumes from, are dropped first, so the file
    /// reads as if the run had never stopped.
    pub fn open(path: &Path, keep_until: Option<usize>) -> Result<Self> {
        if let Some(last) = keep_until
            && path.exists()
        {
            let kept: Vec<String> = read_lines(path)?
                .into_iter()
                .filter(|(step, _)| *step <= last)
                .map(|(_, line)| line)
                .collect();
            let tmp = path.with_extension("jsonl.tmp");
            std::fs::write(
                &tmp,
                kept.iter().map(|l| format!("{l}\n")).collect::<String>(),
            )
            .map_err(|e| Error::io(&tmp, e))?;
            std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends one step's metrics (and flushes, so a killed run loses nothing already logged).
    pub fn log(&mut self, step: usize, metrics: &Metrics) -> Result<()> {
        let mut obj = serde_json::Map::new();
        obj.insert("step".into(), step.into());
        for (k, v) in metrics {
            // JSON has no NaN/inf: those are written as null.
            obj.insert(
                k.clone(),
                serde_json::Number::from_f64(*v).map_or(serde_json::Value::Null, Into::into),
            );
        }
        let line = serde_json::Value::Object(obj).to_string();
        writeln!(self.file, "{line}").map_err(|e| Error::io(&self.path, e))?;
        self.file.flush().map_err(|e| Error::io(&self.path, e))
    }
}

/// Reads a metrics file back as (step, metrics) pairs.
pub fn read_metrics(path: &Path) -> Result<Vec<(usize, Metrics)>> {
    let mut out = Vec::new();
    for (step, line) in read_lines(path)? {
        let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&line)
            .map_err(|e| Error::Checkpoint(format!("{}: {e}", path.display())))?;
        let metrics = obj
            .into_iter()
            .filter(|(k, _)| k != "step")
            .map(|(k, v)| (k, v.as_f64().unwrap_or(f64::NAN)))
            .collect();
        out.push((step, metrics));
    }
    Ok(out)
}

fn read_lines(path: &Path) -> Result<Vec<(usize, String)>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut out = Vec::new();
    for line in BufReader::new(file).lines() {
        let line = line.map_err(|e| Error::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let step = serde_json::from_str::<serde_json::Value>(&line)
            .ok()
            .and_then(|v| v.get("step").and_then(serde_json::Value::as_u64))
            .ok_or_else(|| {
                Error::Checkpoint(format!("{}: a line without `step`", path.display()))
            })?;
        out.push((step as usize, line));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_drops_lines_after_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.jsonl");
        let mut log = MetricsLog::open(&path, None).unwrap();
        for step in 1..=5 {
            log.log(step, &Metrics::from([("reward/mean".into(), step as f64)]))
                .unwrap();
        }
        drop(log);
        let mut log = MetricsLog::open(&path, Some(3)).unwrap();
        log.log(4, &Metrics::from([("reward/mean".into(), 40.0)]))
            .unwrap();
        let back = read_metrics(&path).unwrap();
        assert_eq!(
            back.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            vec![1, 2, 3, 4]
        );
        assert_eq!(back[3].1["reward/mean"], 40.0);
    }
}
