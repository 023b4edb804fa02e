//! `rlvr compare`: the same task under several configurations and seeds, one after another,
//! summarized as a table (final held-out accuracy mean ± std, wall time, sampled tokens) and
//! overlaid curves.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::report::plot_series;
use super::{RunOptions, train};
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::metrics::read_metrics;

/// One configuration's results over its seeds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ArmResult {
    /// Name (the config file's stem).
    pub name: String,
    /// Base accuracy per seed.
    pub base: Vec<f64>,
    /// Final accuracy per seed.
    pub accuracy: Vec<f64>,
    /// Wall seconds per seed.
    pub seconds: Vec<f64>,
    /// Response tokens sampled per seed (the sum of the runs' `rollout/sampled_tokens`).
    pub sampled_tokens: Vec<f64>,
    /// Run directories.
    pub runs: Vec<PathBuf>,
}

/// Runs every (config, seed) pair and writes `results.md`, `results.json` and plots into `out`.
/// Only the run seed changes between seeds: the bundled model's warm start follows `sft.seed`,
/// so all seeds of a configuration share one cached warm start.
pub fn compare(
    configs: &[PathBuf],
    overrides: &[String],
    seeds: usize,
    out: &Path,
) -> Result<Vec<ArmResult>> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let mut arms = Vec::new();
    for path in configs {
        let name = path
            .file_stem()
            .map_or_else(|| "config".into(), |s| s.to_string_lossy().into_owned());
        let mut arm = ArmResult {
            name: name.clone(),
            base: vec![],
            accuracy: vec![],
            seconds: vec![],
            sampled_tokens: vec![],
            runs: vec![],
        };
        for seed in 0..seeds {
            let mut sets = overrides.to_vec();
            sets.push(format!("seed={seed}"));
            sets.push(format!(
                "run_dir=\"{}\"",
                out.join(format!("{name}-seed{seed}")).display()
            ));
            let config = RunConfig::load(Some(path), &sets)?;
            tracing::info!("compare: {name}, seed {seed}");
            let o = train(config, &RunOptions::default())?;
            tracing::info!(
                "compare: {name}, seed {seed}: {:.1}% -> {:.1}% in {:.0} s",
                100.0 * o.base_accuracy,
                100.0 * o.final_accuracy,
                o.seconds
            );
            arm.base.push(o.base_accuracy);
            arm.accuracy.push(o.final_accuracy);
            arm.seconds.push(o.seconds);
            arm.sampled_tokens.push(metric_sum(
                &o.run_dir.join("metrics.jsonl"),
                "rollout/sampled_tokens",
            ));
            arm.runs.push(o.run_dir);
        }
        arms.push(arm);
    }
    write_results(&arms, out)?;
    Ok(arms)
}

/// The sum of `key` over a run's metrics lines (0 when the file or key is missing).
fn metric_sum(path: &Path, key: &str) -> f64 {
    read_metrics(path)
        .map(|h| h.iter().filter_map(|(_, m)| m.get(key)).sum())
        .unwrap_or(0.0)
}

/// Mean and sample standard deviation.
pub fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}

fn write_results(arms: &[ArmResult], out: &Path) -> Result<()> {
    let mut md = String::from(
        "| config | seeds | base accuracy | final accuracy (mean ± std) | wall time (s, mean) | sampled tokens (mean) |\n|---|---|---|---|---|---|\n",
    );
    for a in arms {
        let (b, _) = mean_std(&a.base);
        let (m, s) = mean_std(&a.accuracy);
        let (t, _) = mean_std(&a.seconds);
        let (tokens, _) = mean_std(&a.sampled_tokens);
        let _ = writeln!(
            md,
            "| {} | {} | {:.1}% | {:.1}% ± {:.1} | {:.0} | {:.0} |",
            a.name,
            a.accuracy.len(),
            100.0 * b,
            100.0 * m,
            100.0 * s,
            t,
            tokens
        );
    }
    for (key, title) in [
        ("eval/accuracy", "held-out accuracy"),
        ("reward/mean", "mean reward"),
    ] {
        let mut series = Vec::new();
        for a in arms {
            // Average the curve over seeds at the steps all seeds logged.
            let histories: Vec<Vec<(usize, f64)>> = a
                .runs
                .iter()
                .map(|r| {
                    read_metrics(&r.join("metrics.jsonl"))
                        .map(|h| {
                            h.into_iter()
                                .filter_map(|(s, m)| m.get(key).map(|v| (s, *v)))
                                .collect()
                        })
                        .unwrap_or_default()
                })
                .collect();
            let Some(first) = histories.first() else {
                continue;
            };
            let pts: Vec<(f64, f64)> = first
                .iter()
                .filter_map(|&(step, _)| {
                    let vals: Vec<f64> = histories
                        .iter()
                        .filter_map(|h| h.iter().find(|p| p.0 == step).map(|p| p.1))
                        .collect();
                    (vals.len() == histories.len())
                        .then(|| (step as f64, vals.iter().sum::<f64>() / vals.len() as f64))
                })
                .collect();
            series.push((a.name.as_str(), pts));
        }
        let file = format!("{}.svg", key.replace('/', "_"));
        plot_series(&out.join(&file), title, &series)?;
        let _ = writeln!(md, "\n![{title}]({file})");
    }
    let p = out.join("results.md");
    std::fs::write(&p, &md).map_err(|e| Error::io(&p, e))?;
    let p = out.join("results.json");
    std::fs::write(&p, serde_json::to_string_pretty(arms).expect("serializes"))
        .map_err(|e| Error::io(&p, e))?;
    println!("{md}");
    Ok(())
}
