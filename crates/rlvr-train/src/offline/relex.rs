//! `rlvr relex`: RELEX checkpoint extrapolation of a run (arXiv 2605.21468; methods-core §8).
//!
//! Loads the run's checkpoints (`checkpoints/step-*`) and its starting policy θ_0, fits every
//! parameter tensor's trajectory with rlvr-objectives' [`relex_fit`] (rank r, a line over the
//! trailing `window` checkpoints), and writes the prediction at each target step as a loadable
//! HuggingFace directory `OUT/step-NNNNNN` (with the tokenizer). The fit works in checkpoint
//! positions, so the checkpoints must be evenly spaced; a target step maps to position
//! (W − 1) + (target − last)/cadence.

use std::path::{Path, PathBuf};

use rlvr_models::save_pretrained;
use rlvr_objectives::shaping::{RelexConfig, relex_fit};
use serde::Serialize;

use super::params::{flatten, replace};
use crate::checkpoint::checkpoints_dir;
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::model::bundled::{base_dir, load_dir};

/// The fewest checkpoints RELEX extrapolates from: two points fit every line exactly, so a
/// third is the first that the fit can miss.
pub const MIN_CHECKPOINTS: usize = 3;

/// What was written.
#[derive(Debug, Clone, Serialize)]
pub struct RelexOutcome {
    /// Steps of the checkpoints fitted on.
    pub history: Vec<usize>,
    /// The extrapolated model directories, one per target step.
    pub written: Vec<PathBuf>,
    /// Explained variance of the kept components, averaged over tensors that moved.
    pub explained_variance_mean: f64,
}

/// The run's checkpoints as (step, directory), oldest first.
pub fn run_checkpoints(run_dir: &Path) -> Result<Vec<(usize, PathBuf)>> {
    let dir = checkpoints_dir(run_dir);
    let mut out: Vec<(usize, PathBuf)> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter_map(|p| {
            let step = p
                .file_name()?
                .to_str()?
                .strip_prefix("step-")?
                .parse()
                .ok()?;
            Some((step, p))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Extrapolates the checkpoints of `run_dir` to `targets` (absolute steps, each past the last
/// checkpoint). `base`: θ_0's directory; `None` = the run's starting policy (from its
/// `config.toml`: `model.base` or the cached warm start).
pub fn relex(
    run_dir: &Path,
    base: Option<&Path>,
    cfg: &RelexConfig,
    targets: &[usize],
    out: &Path,
) -> Result<RelexOutcome> {
    let ckpts = run_checkpoints(run_dir)?;
    if ckpts.len() < MIN_CHECKPOINTS {
        return Err(Error::Checkpoint(format!(
            "{}: RELEX fits a line per component through the checkpoints and needs at least \
             {MIN_CHECKPOINTS}, found {} (two points fit any line exactly; raise checkpoint.keep)",
            run_dir.display(),
            ckpts.len()
        )));
    }
    let cadence = ckpts[1].0 - ckpts[0].0;
    if cadence == 0 || ckpts.windows(2).any(|w| w[1].0 - w[0].0 != cadence) {
        return Err(Error::Checkpoint(format!(
            "{}: checkpoints {:?} are not evenly spaced",
            run_dir.display(),
            ckpts.iter().map(|c| c.0).collect::<Vec<_>>()
        )));
    }
    let last = ckpts.last().expect("two or more").0;
    if let Some(t) = targets
        .iter()
        .find(|&&t| t <= last || (t - last) % cadence != 0)
    {
        return Err(Error::Config(format!(
            "--steps {t}: targets must lie past the last checkpoint (step {last}) on its \
             cadence of {cadence} steps"
        )));
    }
    let base_path = match base {
        Some(p) => p.to_path_buf(),
        None => {
            let cfg_path = run_dir.join("config.toml");
            let config = RunConfig::load(Some(&cfg_path), &[])?;
            let dir = base_dir(&config)?;
            if !dir.join("model.safetensors").exists() {
                return Err(Error::Checkpoint(format!(
                    "the run's starting policy {} is not there; pass --base DIR",
                    dir.display()
                )));
            }
            dir
        }
    };
    let device = crate::model::device::default_device();
    let theta0 = load_dir(&base_path, &device)?;
    let base_params = flatten(&theta0.model);
    let history: Vec<Vec<Vec<f32>>> = ckpts
        .iter()
        .map(|(_, dir)| {
            let m = load_dir(dir, &device)?;
            let p = flatten(&m.model);
            let same = p.len() == base_params.len()
                && p.iter().zip(&base_params).all(|(a, b)| a.shape == b.shape);
            if !same {
                return Err(Error::Checkpoint(format!(
                    "{}: its parameters do not match the base {}",
                    dir.display(),
                    base_path.display()
                )));
            }
            Ok(p.into_iter().map(|f| f.values).collect())
        })
        .collect::<Result<_>>()?;
    let t = history.len();
    let last_pos = (t - 1) as f64;
    let mut predicted: Vec<Vec<Vec<f32>>> = vec![Vec::new(); targets.len()];
    let (mut explained, mut moved) = (0.0, 0usize);
    for (k, bp) in base_params.iter().enumerate() {
        let traj: Vec<Vec<f32>> = history.iter().map(|h| h[k].clone()).collect();
        let fit = relex_fit(&bp.values, &traj, cfg)?;
        if !fit.components.is_empty() {
            explained += fit.explained_variance;
            moved += 1;
        }
        for (ti, &target) in targets.iter().enumerate() {
            let pos = last_pos + ((target - last) / cadence) as f64;
            predicted[ti].push(fit.predict(&bp.values, last_pos, pos));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let mut written = Vec::new();
    for (values, &target) in predicted.into_iter().zip(targets) {
        let dir = out.join(format!("step-{target:06}"));
        let model = replace(theta0.model.clone(), values);
        save_pretrained(&model, &theta0.config, &dir)?;
        theta0.tokenizer.save_to_dir(&dir)?;
        written.push(dir);
    }
    let outcome = RelexOutcome {
        history: ckpts.iter().map(|c| c.0).collect(),
        written,
        explained_variance_mean: if moved > 0 {
            explained / moved as f64
        } else {
            1.0
        },
    };
    let p = out.join("relex.json");
    std::fs::write(
        &p,
        serde_json::to_string_pretty(&outcome).expect("serializes"),
    )
    .map_err(|e| Error::io(&p, e))?;
    Ok(outcome)
}
