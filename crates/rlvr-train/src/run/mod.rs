//! A whole training run: set up (or resume), evaluate the base policy, loop over RL steps with
//! progress, metrics, evaluations and checkpoints, then evaluate, report and save.

pub mod compare;
pub mod completions;
pub mod load;
pub mod report;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use burn::module::Module;
use indicatif::ProgressBar;
use rlvr_models::lora::load_adapter;

use crate::checkpoint;
use crate::config::RunConfig;
use crate::env::groups::{EpisodeStats, evaluate_episodes};
use crate::error::{Error, Result};
use crate::eval::{EvalBatches, EvalSummary, PromptEval, evaluate, summarize};
use crate::metrics::{Metrics, MetricsLog, read_metrics};
use crate::model::bundled::{base_policy, load_dir};
use crate::model::device;
use crate::progress;
use crate::rollout_engine::RemoteEngine;
use crate::step::rl_step_with_batch;
use crate::step::rollout::{generation_config, step_seed};
use crate::tensorboard::EventWriter;
use crate::trainer::{ADAPTER_DIR, Trainer};
use report::write_report;

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Held-out accuracy of the base policy.
    pub base_accuracy: f64,
    /// Held-out accuracy at the end (or at the interruption).
    pub final_accuracy: f64,
    /// Steps completed.
    pub steps: usize,
    /// Whether a signal stopped the run early.
    pub interrupted: bool,
    /// Wall time of the run, seconds.
    pub seconds: f64,
}

/// Options of `rlvr train` beyond the config.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Continue the run in this directory from its latest checkpoint.
    pub resume: Option<PathBuf>,
    /// Stop after this many steps of this invocation (tests use it to simulate a kill).
    pub stop_after: Option<usize>,
    /// No progress bar (tests, logs).
    pub quiet: bool,
}

/// Trains according to `config`.
pub fn train(config: RunConfig, opts: &RunOptions) -> Result<RunOutcome> {
    let start = Instant::now();
    let run_dir = opts
        .resume
        .clone()
        .unwrap_or_else(|| default_run_dir(&config));
    std::fs::create_dir_all(&run_dir).map_err(|e| Error::io(&run_dir, e))?;
    let dev = device::training_device(config.train.gradient_checkpointing);
    let (train_set, eval_set) = load::load_data(&config)?;

    let resume_from = match &opts.resume {
        Some(dir) => Some(checkpoint::latest(dir)?.ok_or_else(|| {
            Error::Checkpoint(format!(
                "{} has no checkpoint to resume from",
                dir.display()
            ))
        })?),
        None => None,
    };
    // A code verifier probes its sandbox here, before the warm start: a host that lacks a
    // required isolation layer stops the run now, and the log says which layers it got.
    if let Some(isolation) = config.verifier.isolation()? {
        tracing::info!("verifier: code sandbox isolation: {isolation}");
    }
    // The environment is built here too (the search task reads and indexes its corpus): a bad
    // corpus line is named by file and line before the warm start.
    if let Some(env) = &config.env {
        crate::env::new_environment(env)?;
    }
    let base = match (&resume_from, &config.lora) {
        // LoRA: the frozen base as the config names it, the trained adapters from the checkpoint
        // (whose own weights are the merged model).
        (Some(ckpt), Some(_)) => {
            let mut base = base_policy(&config, &train_set, &eval_set, &dev)?;
            base.model = load_adapter(base.model, &ckpt.join(ADAPTER_DIR))?.0;
            base
        }
        (Some(ckpt), None) => load_dir(ckpt, &dev)?,
        (None, _) => base_policy(&config, &train_set, &eval_set, &dev)?,
    };
    checkpoint::write_atomic(&run_dir.join("config.toml"), config.to_toml().as_bytes())?;
    let mut tr = Trainer::new(
        config,
        dev,
        base.model,
        base.config,
        base.tokenizer,
        train_set,
        eval_set,
    )?;
    tr.remote = RemoteEngine::from_config(&tr.config.rollout, &run_dir);
    if let Some(ckpt) = &resume_from {
        tr.restore(ckpt)?;
        tracing::info!("resumed {} at step {}", run_dir.display(), tr.state.step);
    }
    let mut log = MetricsLog::open(
        &run_dir.join("metrics.jsonl"),
        resume_from.as_ref().map(|_| tr.state.step),
    )?;
    // A resumed run starts a new events file that restarts at its first step.
    let mut tb = if tr.config.log.tensorboard {
        let restart = resume_from.as_ref().map(|_| tr.state.step + 1);
        Some(EventWriter::create(&run_dir.join("tb"), restart)?)
    } else {
        None
    };
    let completions_dir = run_dir.join("completions");

    let base_accuracy = match tr.state.base_accuracy {
        Some(a) => a,
        None => {
            let (a, episodes) = greedy_eval(&tr, &run_dir.join("eval-base.jsonl"))?;
            tracing::info!(
                "base policy: held-out accuracy {:.1}% ({} prompts){}",
                100.0 * a,
                tr.eval_set.len(),
                episode_summary(&episodes)
            );
            if let Some(tb) = &mut tb {
                let mut m = episodes.clone();
                m.insert("eval/accuracy".to_string(), a);
                tb.write_scalars(0, &m)?;
            }
            tr.state.base_accuracy = Some(a);
            tr.state.base_eval = episodes;
            a
        }
    };

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| Error::io(Path::new("signal"), e))?;
    }
    let total = tr.config.train.steps;
    let bar = progress_bar(total, tr.state.step, opts.quiet);
    let mut interrupted = false;
    let first = tr.state.step;
    while tr.state.step < total {
        let step = tr.state.step;
        let step_start = Instant::now();
        let (mut m, batch) = rl_step_with_batch(&mut tr, step)?;
        m.insert("time/step_s".into(), step_start.elapsed().as_secs_f64());
        if let Some(mb) = crate::memory::peak_rss_mb() {
            m.insert("memory/peak_rss_mb".into(), mb);
        }
        tr.state.step += 1;
        if completions::due(tr.config.log.completions_every, tr.state.step) {
            let rows = completions::rows(&tr, &batch)?;
            completions::write(&completions_dir, tr.state.step, &rows)?;
        }
        drop(batch);
        let every = tr.config.eval.every;
        if (every > 0 && tr.state.step % every == 0) || tr.state.step == total {
            let (acc, eval_metrics) = greedy_eval(
                &tr,
                &run_dir.join(format!("eval-step-{:06}.jsonl", tr.state.step)),
            )?;
            m.extend(eval_metrics);
            tr.state.evals.push((tr.state.step, acc));
            m.insert("eval/accuracy".into(), acc);
            let mut line = format!(
                "step {:>5}: held-out accuracy {:.1}% (base {:.1}%)",
                tr.state.step,
                100.0 * acc,
                100.0 * base_accuracy
            );
            let k = tr.config.eval.k;
            if k > 1 {
                let s = sampled_pass_at_k(&tr, tr.state.step)?;
                m.insert("eval/pass@k".into(), s.pass_at_k);
                m.insert("eval/sampled_pass@1".into(), s.pass_at_1);
                line += &format!(", pass@{k} {:.1}%", 100.0 * s.pass_at_k);
            }
            // --quiet: no progress output unless RLVR_LOG asks for debug.
            if opts.quiet {
                tracing::debug!("{line}");
            } else {
                tracing::info!("{line}");
            }
        }
        log.log(tr.state.step, &m)?;
        if let Some(tb) = &mut tb {
            tb.write_scalars(tr.state.step, &m)?;
        }
        update_bar(&bar, &m);
        if bar.is_hidden() && !opts.quiet && (tr.state.step % 10 == 0 || tr.state.step == total) {
            // Not a terminal (a log file, CI): a plain line every 10 steps instead of the bar.
            tracing::info!("step {}/{total}: {}", tr.state.step, bar.message());
        }
        let ck = tr.config.checkpoint.every;
        let stopping = stop.load(Ordering::Relaxed)
            || opts.stop_after.is_some_and(|n| tr.state.step - first >= n);
        if (ck > 0 && tr.state.step % ck == 0) || tr.state.step == total || stopping {
            tr.save_checkpoint(&run_dir)?;
        }
        if stopping && tr.state.step < total {
            interrupted = true;
            tracing::info!(
                "stopping at step {}: checkpoint saved; resume with --resume {}",
                tr.state.step,
                run_dir.display()
            );
            break;
        }
    }
    progress::finish(&bar);
    let final_accuracy = tr.state.evals.last().map_or(base_accuracy, |&(_, a)| a);
    write_report(
        &run_dir,
        &read_metrics(&run_dir.join("metrics.jsonl"))?,
        &tr.state,
    )?;
    let outcome = RunOutcome {
        run_dir,
        base_accuracy,
        final_accuracy,
        steps: tr.state.step,
        interrupted,
        seconds: start.elapsed().as_secs_f64(),
    };
    Ok(outcome)
}

/// `, 0.45 tool calls per episode, 1.38 turns` for a log line, from an evaluation's
/// `eval/env/*` metrics (empty when there are none: a single-turn run).
fn episode_summary(m: &Metrics) -> String {
    [
        ("eval/env/tool_calls_mean", "tool calls per episode"),
        ("eval/env/turns_mean", "turns"),
    ]
    .iter()
    .filter_map(|(key, what)| m.get(*key).map(|v| format!(", {v:.2} {what}")))
    .collect()
}

/// Greedy held-out accuracy of the current policy; per-prompt results go to `out` (JSONL).
pub fn greedy_accuracy(tr: &Trainer, out: &Path) -> Result<f64> {
    greedy_eval(tr, out).map(|(accuracy, _)| accuracy)
}

/// [`greedy_accuracy`], and the evaluation's episode metrics (`eval/env/*`) under `[env]`.
pub fn greedy_eval(tr: &Trainer, out: &Path) -> Result<(f64, Metrics)> {
    let mut m = Metrics::new();
    let results = held_out(tr, true, 1, tr.config.seed, &mut m)?;
    let lines: String = results
        .iter()
        .map(|r| {
            serde_json::json!({"id": r.id, "response": r.texts[0], "passed": r.verdicts[0].passed,
                               "reward": r.verdicts[0].reward})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(out, lines).map_err(|e| Error::io(out, e))?;
    Ok((summarize(&results).pass_at_1, m))
}

/// The unbiased pass@k of the current policy on the held-out prompts (`eval.k` samples per
/// prompt at the rollout temperature, top-p and top-k), at run step `step` (1-based; it seeds
/// the sampling).
pub fn sampled_pass_at_k(tr: &Trainer, step: usize) -> Result<EvalSummary> {
    // Apart from the rollout seeds of the step (rounds count from 0).
    let seed = step_seed(tr.config.seed, step, usize::MAX);
    let mut unused = Metrics::new();
    Ok(summarize(&held_out(
        tr,
        false,
        tr.config.eval.k,
        seed,
        &mut unused,
    )?))
}

/// `k` responses of the current policy to every held-out prompt (greedy, or sampled as the
/// rollouts are), verified; under `[env]` each response is an episode, whose counts go to `m`
/// as `eval/env/*`.
fn held_out(
    tr: &Trainer,
    greedy: bool,
    k: usize,
    seed: u64,
    m: &mut Metrics,
) -> Result<Vec<PromptEval>> {
    let policy = tr.model().valid();
    let mut gen_cfg = generation_config(&tr.config.rollout, &tr.tokenizer, greedy);
    gen_cfg.max_new_tokens = tr.config.eval.max_new_tokens;
    let prompt_ids = tr
        .eval_set
        .iter()
        .map(|e| tr.encode_example(e))
        .collect::<Result<Vec<_>>>()?;
    if let Some(section) = &tr.config.env {
        let mut stats = EpisodeStats::default();
        let results = evaluate_episodes(
            &policy,
            &tr.tokenizer,
            section,
            &tr.verifier,
            &tr.config.verifier,
            &tr.eval_set,
            &prompt_ids,
            &gen_cfg,
            EvalBatches {
                k,
                batch_size: tr.config.eval.batch_size,
                seed,
            },
            &mut stats,
        )?;
        stats.insert_into(m, "eval/");
        return Ok(results);
    }
    evaluate(
        &policy,
        &tr.tokenizer,
        &tr.verifier,
        &tr.config.verifier,
        &tr.eval_set,
        &prompt_ids,
        &gen_cfg,
        k,
        tr.config.eval.batch_size,
        seed,
    )
}

fn default_run_dir(config: &RunConfig) -> PathBuf {
    if config.run_dir.as_os_str().is_empty() {
        PathBuf::from(format!(
            "runs/run-{}-seed{}",
            chrono_free_stamp(),
            config.seed
        ))
    } else {
        config.run_dir.clone()
    }
}

/// Seconds since the epoch: a unique, sortable run-directory suffix without a date library.
fn chrono_free_stamp() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn progress_bar(total: usize, done: usize, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = progress::bar(
        total as u64,
        "rl {bar:30} {pos}/{len} {msg} [{elapsed_precise}<{eta_precise}]",
    );
    bar.set_position(done as u64);
    bar
}

fn update_bar(bar: &ProgressBar, m: &Metrics) {
    let get = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
    let tps = get("throughput/update_tokens_per_s");
    bar.set_message(format!(
        "reward {:.3} pass {:.0}% len {:.1} tok/s {:.0}",
        get("reward/mean"),
        100.0 * get("reward/pass_rate"),
        get("response/length_mean"),
        tps
    ));
    bar.inc(1);
}
