//! Checkpoints: written atomically, found again on resume, pruned to the newest few.
//!
//! A checkpoint is a directory `checkpoints/step-NNNNNN/` holding the policy as a HuggingFace
//! model directory (`config.json`, `model.safetensors`, `tokenizer.json`, ...), the optimizer
//! state (`optimizer.bin`), the trainer state (`trainer_state.json`) and, when the run keeps a
//! reference model, that model in `reference/`. It is assembled in a
//! temporary sibling directory and renamed into place, and `checkpoints/latest` (a one-line file
//! naming the newest checkpoint) is replaced the same way, so a run killed at any instant leaves
//! either the previous checkpoint or the new one, never a half-written one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What the trainer needs, besides weights and optimizer state, to continue exactly.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TrainerState {
    /// Completed RL steps.
    pub step: usize,
    /// Position in the (seeded, per-epoch shuffled) training prompt stream.
    pub data_cursor: usize,
    /// Optimizer steps applied so far (OWPO's ratchet counts them).
    #[serde(default)]
    pub optimizer_steps: usize,
    /// Updates skipped because the loss or a gradient was not finite.
    pub skipped_updates: usize,
    /// Held-out accuracy before training, once measured.
    pub base_accuracy: Option<f64>,
    /// (step, held-out accuracy) of every evaluation so far.
    pub evals: Vec<(usize, f64)>,
    /// The base evaluation's episode metrics (`eval/env/*` under `[env]`: turns, tool calls,
    /// failed calls), empty for single-turn runs; `report.md` lists them beside the final ones.
    #[serde(default)]
    pub base_eval: crate::metrics::Metrics,
    /// State of the advantage-shaping stages (CurveRL pool, ACR average, DGG window).
    #[serde(default)]
    pub shaping: rlvr_objectives::ShapingState,
    /// SCRL's curriculum: each prompt's recent pass rates and whether its subproblems are
    /// dropped (`[stages.scrl]`).
    #[serde(default)]
    pub scrl: rlvr_objectives::shaping::ScrlCurriculum,
}

/// The directory of checkpoints inside a run directory.
pub fn checkpoints_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("checkpoints")
}

/// Writes a checkpoint for `step` through `write` (which fills the directory it is given), then
/// points `latest` at it and removes all but the newest `keep` checkpoints.
pub fn save(
    run_dir: &Path,
    step: usize,
    keep: usize,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let dir = checkpoints_dir(run_dir);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let name = format!("step-{step:06}");
    let final_path = dir.join(&name);
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    write(&tmp)?;
    sync_dir_files(&tmp)?;
    if final_path.exists() {
        std::fs::remove_dir_all(&final_path).map_err(|e| Error::io(&final_path, e))?;
    }
    std::fs::rename(&tmp, &final_path).map_err(|e| Error::io(&final_path, e))?;
    write_atomic(&dir.join("latest"), format!("{name}\n").as_bytes())?;
    prune(&dir, keep)?;
    Ok(final_path)
}

/// The newest complete checkpoint of a run, if any.
pub fn latest(run_dir: &Path) -> Result<Option<PathBuf>> {
    let dir = checkpoints_dir(run_dir);
    let pointer = dir.join("latest");
    if !pointer.exists() {
        return Ok(None);
    }
    let name = std::fs::read_to_string(&pointer).map_err(|e| Error::io(&pointer, e))?;
    let path = dir.join(name.trim());
    if !path.is_dir() {
        return Err(Error::Checkpoint(format!(
            "{} names {}, which does not exist",
            pointer.display(),
            path.display()
        )));
    }
    Ok(Some(path))
}

/// Writes `bytes` to `path` atomically (temporary file in the same directory, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_file_name(format!(
        ".{}.tmp-{}",
        path.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        std::process::id()
    ));
    let mut f = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
    f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Reads `trainer_state.json` of a checkpoint.
pub fn read_state(checkpoint: &Path) -> Result<TrainerState> {
    let path = checkpoint.join("trainer_state.json");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::Checkpoint(format!("{}: {e}", path.display())))
}

/// Writes `trainer_state.json` into a checkpoint directory being assembled.
pub fn write_state(dir: &Path, state: &TrainerState) -> Result<()> {
    let path = dir.join("trainer_state.json");
    let text = serde_json::to_string_pretty(state).expect("trainer state serializes");
    std::fs::write(&path, text).map_err(|e| Error::io(&path, e))
}

fn sync_dir_files(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_file() {
            let f = std::fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
            f.sync_all().map_err(|e| Error::io(&path, e))?;
        }
    }
    Ok(())
}

fn prune(dir: &Path, keep: usize) -> Result<()> {
    let mut steps: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("step-"))
        })
        .collect();
    steps.sort();
    let excess = steps.len().saturating_sub(keep.max(1));
    for old in &steps[..excess] {
        std::fs::remove_dir_all(old).map_err(|e| Error::io(old, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_points_latest_and_prunes() {
        let run = tempfile::tempdir().unwrap();
        for step in [10, 20, 30] {
            save(run.path(), step, 2, |dir| {
                write_state(
                    dir,
                    &TrainerState {
                        step,
                        ..Default::default()
                    },
                )
            })
            .unwrap();
        }
        let latest = latest(run.path()).unwrap().unwrap();
        assert!(latest.ends_with("step-000030"));
        assert_eq!(read_state(&latest).unwrap().step, 30);
        let left: Vec<_> = std::fs::read_dir(checkpoints_dir(run.path()))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("step-"))
            .collect();
        assert_eq!(left.len(), 2);
    }

    #[test]
    fn a_failed_write_leaves_the_previous_checkpoint() {
        let run = tempfile::tempdir().unwrap();
        save(run.path(), 1, 3, |dir| {
            write_state(dir, &TrainerState::default())
        })
        .unwrap();
        let err = save(run.path(), 2, 3, |_| {
            Err(Error::Checkpoint("disk full".into()))
        });
        assert!(err.is_err());
        assert!(
            latest(run.path())
                .unwrap()
                .unwrap()
                .ends_with("step-000001")
        );
    }
}
