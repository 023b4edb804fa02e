//! `bench_worker`: the rlvr-rs side of `cargo xtask bench-compare`; runs one workload and prints
//! one JSON line with its measurement (warm-up excluded).
//!
//! Every subcommand mirrors a script in `benches/compare/` that does the same work in PyTorch or
//! math-verify; the harness runs the two alternately and compares the JSON lines.

mod model;
mod optim;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use serde_json::Value;

/// One rlvr-rs workload of the side-by-side benchmark.
#[derive(Debug, Parser)]
#[command(name = "bench_worker")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Prints the HF `config.json` of a named shape: `bundled`, `d256l4`, `d512l8` or `smollm2`.
    PrintConfig {
        /// The shape's name.
        name: String,
    },
    /// Forward + backward + AdamW on a randomly initialised model; tokens/s and FLOP/s.
    TrainStep {
        /// HF `config.json` of the model shape.
        #[arg(long)]
        config: PathBuf,
        /// Sequences per step.
        #[arg(long, default_value_t = 8)]
        batch: usize,
        /// Tokens per sequence.
        #[arg(long, default_value_t = 128)]
        seq: usize,
        /// Untimed steps first.
        #[arg(long, default_value_t = 1)]
        warmup: usize,
        /// Timed steps.
        #[arg(long, default_value_t = 3)]
        iters: usize,
        /// `flex` (burn's pure-Rust CPU backend) or `tch` (libtorch's CPU kernels; needs a build
        /// with `--features tch`).
        #[arg(long, default_value = "flex")]
        backend: String,
    },
    /// Batched sampling (T = 1, no top-k/p, no stop tokens) with a KV cache; new tokens/s.
    Generate {
        /// A HF model directory (weights loaded), or else `--config`.
        #[arg(long)]
        model: Option<PathBuf>,
        /// HF `config.json` of a randomly initialised model.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Prompts per batch.
        #[arg(long, default_value_t = 16)]
        batch: usize,
        /// Tokens per prompt (all prompts the same length).
        #[arg(long, default_value_t = 32)]
        prompt_len: usize,
        /// New tokens per prompt (exactly: no stop tokens).
        #[arg(long, default_value_t = 128)]
        new_tokens: usize,
        /// Timed runs (one untimed 8-token run comes first).
        #[arg(long, default_value_t = 1)]
        iters: usize,
    },
    /// One Muon or Pion step on a `[rows, cols]` matrix with warm momentum; ms per step.
    Optim {
        /// `muon` or `pion`.
        #[arg(long)]
        kind: String,
        /// Rows of the stored weight.
        #[arg(long)]
        rows: usize,
        /// Columns of the stored weight.
        #[arg(long)]
        cols: usize,
        /// Untimed steps first.
        #[arg(long, default_value_t = 2)]
        warmup: usize,
        /// Timed steps.
        #[arg(long, default_value_t = 5)]
        iters: usize,
    },
    /// GSM8K and MATH-500 gold-vs-solution pairs (and perturbed golds); items/s and verdicts.
    Math {
        /// Directory holding `gsm8k_test.jsonl`, `gsm8k_train.jsonl`, `math500_test.jsonl`.
        #[arg(long)]
        data: PathBuf,
        /// Use only the first N records of each dataset (0 = all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
    },
    /// Writes the math pairs (warm-up, GSM8K, MATH-500) as JSON lines for the reference side.
    MathPairs {
        /// Directory holding the datasets.
        #[arg(long)]
        data: PathBuf,
        /// Use only the first N records of each dataset (0 = all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
        /// Output JSONL file.
        #[arg(long)]
        out: PathBuf,
    },
    /// The canonical MBPP solutions through the sandboxed code verifier; seconds.
    Mbpp {
        /// Directory holding `mbpp.jsonl`.
        #[arg(long)]
        data: PathBuf,
        /// Use only the first N records (0 = all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
    },
}

fn main() -> ExitCode {
    // The same process setting as the `rlvr` and `rlvr-model` binaries.
    rlvr_models::retain_freed_memory();
    match run() {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench_worker: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<Value> {
    let threads = rayon_threads();
    let mut out = match Args::parse().command {
        Command::PrintConfig { name } => model::named_config(&name)?,
        Command::TrainStep {
            config,
            batch,
            seq,
            warmup,
            iters,
            backend,
        } => model::train_step(&config, batch, seq, warmup, iters, &backend)?,
        Command::Generate {
            model,
            config,
            batch,
            prompt_len,
            new_tokens,
            iters,
        } => model::generate(
            model.as_deref(),
            config.as_deref(),
            batch,
            prompt_len,
            new_tokens,
            iters,
        )?,
        Command::Optim {
            kind,
            rows,
            cols,
            warmup,
            iters,
        } => optim::step(&kind, rows, cols, warmup, iters)?,
        Command::Math { data, limit } => verify::math(&data, limit)?,
        Command::MathPairs { data, limit, out } => verify::write_pairs(&data, limit, &out)?,
        Command::Mbpp { data, limit } => verify::mbpp(&data, limit)?,
    };
    if let Value::Object(map) = &mut out
        && map.contains_key("value")
        && !map.contains_key("threads")
    {
        map.insert("threads".into(), threads.into());
    }
    Ok(out)
}

/// The rayon pool size burn's CPU backend uses (`RAYON_NUM_THREADS` or all cores).
fn rayon_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Median of a non-empty sample (mean of the two middle values for an even count).
pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}
