//! `rlvr`: the command line of a training run (`cargo xtask train|sft|eval|compare|g2d-collect|
//! dpo|diagnose|relex` call it).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use burn::module::Module;
use clap::{Parser, Subcommand};
use rlvr_train::eval::{evaluate, summarize};
use rlvr_train::model::bundled::{base_policy, load_dir};
use rlvr_train::model::device::default_device;
use rlvr_train::offline::{diagnose, g2d, relex};
use rlvr_train::prompt::render_prompt;
use rlvr_train::run::compare;
use rlvr_train::run::load::{load_data, load_split};
use rlvr_train::step::rollout::generation_config;
use rlvr_train::{RunConfig, RunOptions, train};

#[derive(Parser)]
#[command(
    name = "rlvr",
    about = "RLVR post-training of language models",
    version
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct ConfigArgs {
    /// Run configuration (TOML). Without it: the bundled default task.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override a config field, e.g. `--set train.lr=1e-4` (repeatable; applied in order).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Train with RL (GRPO-family objectives, verifiable rewards).
    Train {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// Print the effective configuration and exit.
        #[arg(long)]
        print_config: bool,
        /// Continue the run in this directory from its latest checkpoint (its config.toml is used,
        /// then any --set overrides).
        #[arg(long, value_name = "RUN_DIR")]
        resume: Option<PathBuf>,
        /// Hide the progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Supervised warm start only: build (or reuse) the bundled model and print its directory.
    Sft {
        #[command(flatten)]
        cfg: ConfigArgs,
    },
    /// Evaluate a model directory on a dataset: pass@1, unbiased pass@k, maj@k.
    Eval {
        /// HuggingFace model directory.
        #[arg(long)]
        model: PathBuf,
        /// JSONL dataset.
        #[arg(long)]
        data: PathBuf,
        /// Samples per prompt (k = 1: greedy).
        #[arg(long, default_value_t = 1)]
        k: usize,
        /// Evaluate only the first N prompts (0 = all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
        /// Longest response, tokens.
        #[arg(long, default_value_t = 512)]
        max_new_tokens: usize,
        /// Sampling temperature when k > 1.
        #[arg(long, default_value_t = 1.0)]
        temperature: f32,
        /// Render prompts with the chat template.
        #[arg(long)]
        chat: bool,
        #[command(flatten)]
        cfg: ConfigArgs,
    },
    /// Run several configurations over seeds and write a comparison table and plots.
    Compare {
        /// Configurations to compare (repeat).
        #[arg(long = "config", required = true)]
        configs: Vec<PathBuf>,
        /// Override applied to every configuration (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Seeds per configuration (0..N).
        #[arg(long, default_value_t = 1)]
        seeds: usize,
        /// Output directory.
        #[arg(long, default_value = "runs/compare")]
        out: PathBuf,
    },
    /// G2D: sample groups from a policy on the training prompts and write a preference set.
    G2dCollect {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// Policy directory (default: the config's base policy).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Output JSONL of (chosen, rejected) pairs.
        #[arg(long, default_value = "runs/g2d/pairs.jsonl")]
        out: PathBuf,
        /// Use only the first N training prompts (0 = all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
    },
    /// G2D: offline DPO on a preference set, against the frozen starting policy.
    Dpo {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// Preference set written by g2d-collect.
        #[arg(long)]
        pairs: PathBuf,
        /// Starting policy directory (default: the config's base policy).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Output directory (trained model in OUT/model).
        #[arg(long, default_value = "runs/dpo")]
        out: PathBuf,
    },
    /// Unlearnability diagnostic: per-prompt gradient cosine similarity report.
    Diagnose {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// Model directory.
        #[arg(long)]
        model: PathBuf,
        /// JSONL prompts.
        #[arg(long)]
        data: PathBuf,
        /// Use only the first N prompts (0 = all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
        /// Flag prompts at or below this quantile of mean similarity.
        #[arg(long, default_value_t = 0.1)]
        quantile: f64,
        /// Output directory (diagnose.md, diagnose.json).
        #[arg(long, default_value = "runs/diagnose")]
        out: PathBuf,
    },
    /// Fold a LoRA adapter (PEFT layout, e.g. a checkpoint's `adapter/`) into its base model and
    /// write the full model as a HuggingFace directory.
    MergeLora {
        /// The base model directory the adapter was trained on.
        #[arg(long)]
        base: PathBuf,
        /// The adapter directory (`adapter_config.json` + `adapter_model.safetensors`).
        #[arg(long)]
        adapter: PathBuf,
        /// Output directory (written atomically; the base's tokenizer files are copied).
        #[arg(long)]
        out: PathBuf,
    },
    /// RELEX: extrapolate a run's checkpoints along their rank-r trajectory.
    Relex {
        /// Run directory with checkpoints/step-*.
        #[arg(long)]
        run: PathBuf,
        /// Trailing checkpoints the lines are fitted on (0 = all).
        #[arg(long, default_value_t = 0)]
        window: usize,
        /// Target steps (comma-separated), past the last checkpoint on its cadence.
        #[arg(long, value_delimiter = ',', required = true)]
        steps: Vec<usize>,
        /// Components (rank).
        #[arg(long, default_value_t = 1)]
        rank: usize,
        /// θ_0's directory (default: the run's starting policy).
        #[arg(long)]
        base: Option<PathBuf>,
        /// Output directory (OUT/step-NNNNNN model directories).
        #[arg(long)]
        out: PathBuf,
    },
}

/// Logs go to stderr through `tracing` (stdout keeps the results: the closing accuracy line,
/// printed paths and JSON). `RLVR_LOG` filters them: a level (`error`, `warn`, `info`, `debug`,
/// `trace`, `off`) and/or `target=level` pairs, e.g. `RLVR_LOG=debug` or
/// `RLVR_LOG=warn,rlvr_train=debug`; the default is `info`.
fn init_logging() -> Result<()> {
    use std::io::IsTerminal;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = match std::env::var("RLVR_LOG") {
        Ok(spec) if !spec.trim().is_empty() => {
            spec.trim().parse::<Targets>().with_context(|| {
                format!(
                    "RLVR_LOG=`{spec}`: expected a level (error, warn, info, debug, trace, off) \
                 and/or target=level pairs, comma-separated"
                )
            })?
        }
        _ => Targets::new().with_default(LevelFilter::INFO),
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(|| rlvr_train::progress::LogWriter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    tracing_subscriber::registry()
        .with(fmt)
        .with(filter)
        .try_init()
        .context("installing the log subscriber")
}

fn main() -> Result<()> {
    rlvr_models::retain_freed_memory();
    init_logging()?;
    match Cli::parse().command {
        Command::Train {
            cfg,
            print_config,
            resume,
            quiet,
        } => {
            let config_path = match (&resume, &cfg.config) {
                (Some(dir), None) => Some(dir.join("config.toml")),
                (_, path) => path.clone(),
            };
            let mut config = RunConfig::load(config_path.as_deref(), &cfg.sets)?;
            if let Some(dir) = &resume {
                config.run_dir = dir.clone();
            }
            if print_config {
                print!("{}", config.to_toml());
                return Ok(());
            }
            let out = train(
                config,
                &RunOptions {
                    resume,
                    quiet,
                    ..Default::default()
                },
            )?;
            println!(
                "held-out accuracy: base {:.1}% -> trained {:.1}% ({} steps, {:.0} s{}); run: {}",
                100.0 * out.base_accuracy,
                100.0 * out.final_accuracy,
                out.steps,
                out.seconds,
                if out.interrupted { ", interrupted" } else { "" },
                out.run_dir.display()
            );
        }
        Command::MergeLora { base, adapter, out } => {
            let device = default_device();
            let policy = load_dir(&base, &device)?;
            let (model, lora) = rlvr_models::lora::load_adapter(policy.model, &adapter)?;
            rlvr_models::save_pretrained(&model.merge_lora(), &policy.config, &out)?;
            policy.tokenizer.save_to_dir(&out)?;
            println!(
                "merged rank-{} adapter ({}) into {}",
                lora.rank,
                lora.target_modules.join(", "),
                out.display()
            );
        }
        Command::Sft { cfg } => {
            let config = RunConfig::load(cfg.config.as_deref(), &cfg.sets)?;
            let (train_set, held_out) = load_data(&config)?;
            let base = base_policy(&config, &train_set, &held_out, &default_device())?;
            println!("{}", base.dir.display());
        }
        Command::Eval {
            model,
            data,
            k,
            limit,
            max_new_tokens,
            temperature,
            chat,
            cfg,
        } => {
            if k == 0 {
                bail!("--k must be at least 1");
            }
            let config = RunConfig::load(cfg.config.as_deref(), &cfg.sets)?;
            let device = default_device();
            let base = load_dir(&model, &device)
                .with_context(|| format!("loading {}", model.display()))?;
            let examples = load_split(&config, &data, &config.data.eval_split, limit)?;
            let prompt_ids = examples
                .iter()
                .map(|e| {
                    Ok(base
                        .tokenizer
                        .encode(&render_prompt(&base.tokenizer, e, chat)?)?)
                })
                .collect::<rlvr_train::Result<Vec<_>>>()?;
            let mut rollout = config.rollout.clone();
            rollout.max_new_tokens = max_new_tokens;
            rollout.temperature = temperature;
            let gen_cfg = generation_config(&rollout, &base.tokenizer, k == 1);
            let verifier: std::sync::Arc<dyn rlvr_verifiers::Verifier> =
                config.verifier.build()?.into();
            let policy = base.model.valid();
            let results = evaluate(
                &policy,
                &base.tokenizer,
                &verifier,
                &config.verifier,
                &examples,
                &prompt_ids,
                &gen_cfg,
                k,
                config.eval.batch_size,
                config.seed,
            )?;
            let s = summarize(&results);
            println!("{}", serde_json::to_string_pretty(&s)?);
        }
        Command::Compare {
            configs,
            sets,
            seeds,
            out,
        } => {
            compare::compare(&configs, &sets, seeds, &out)?;
        }
        Command::G2dCollect {
            cfg,
            model,
            out,
            limit,
        } => {
            let config = RunConfig::load(cfg.config.as_deref(), &cfg.sets)?;
            let s = g2d::collect(&config, model.as_deref(), &out, limit)?;
            println!(
                "{} prompts, {} mixed, {} pairs -> {}",
                s.prompts,
                s.mixed_prompts,
                s.pairs,
                out.display()
            );
        }
        Command::Dpo {
            cfg,
            pairs,
            model,
            out,
        } => {
            let config = RunConfig::load(cfg.config.as_deref(), &cfg.sets)?;
            let o = g2d::dpo(&config, &pairs, model.as_deref(), &out)?;
            println!(
                "held-out accuracy: start {:.1}% -> DPO {:.1}% ({} updates); model: {}",
                100.0 * o.base_accuracy,
                100.0 * o.final_accuracy,
                o.updates,
                o.model_dir.display()
            );
        }
        Command::Diagnose {
            cfg,
            model,
            data,
            limit,
            quantile,
            out,
        } => {
            let config = RunConfig::load(cfg.config.as_deref(), &cfg.sets)?;
            let r = diagnose::diagnose(&config, &model, &data, limit, quantile, &out)?;
            println!(
                "{} prompts analysed, {} flagged, {} skipped; report: {}",
                r.prompts.len(),
                r.prompts.iter().filter(|p| p.likely_unlearnable).count(),
                r.skipped.len(),
                out.join("diagnose.md").display()
            );
        }
        Command::Relex {
            run,
            window,
            steps,
            rank,
            base,
            out,
        } => {
            let cfg = rlvr_objectives::shaping::RelexConfig { rank, window };
            let o = relex::relex(&run, base.as_deref(), &cfg, &steps, &out)?;
            for dir in &o.written {
                println!("{}", dir.display());
            }
        }
    }
    Ok(())
}
