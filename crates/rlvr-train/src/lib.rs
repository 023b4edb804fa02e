//! The RLVR training loop: composes `rlvr-models` (policy, sampling, log-probs),
//! `rlvr-verifiers` (rewards), `rlvr-objectives` (advantages and loss) and `rlvr-optim`
//! (updates) into a run.
//!
//! The module tree follows the data flow, bottom to top (a module imports only from the rows
//! above it, so there is no import cycle):
//!
//! - `config/` (the run configuration: a leaf; `defaults.rs` holds every default value),
//!   `error`;
//! - the parts: `data/` (examples from JSON lines or parquet, in files or Hub-layout
//!   directories, with a field mapping), `prompt` (rendering, padding), `batch` (a sample and
//!   the packed `[B, T]` tensors), `logprobs` (the temperature-scaled policy and the truncated
//!   sampler), `verify`, `eval`, `metrics`, `checkpoint`, `schedule`, `grad_norm`,
//!   `tensorboard` (event files of the metrics), `progress` (bars that share stderr with logs);
//! - `env/` (multi-turn environments: tool calls, the calculator, episodes sampled
//!   token-in/token-out with the observations masked out of the loss);
//! - `sft` (the supervised warm start) and `model/` (the bundled model, its tokenizer, the
//!   device, stable parameter ids);
//! - `trainer` (the state a run carries from step to step);
//! - `step/` (one RL step, one file per phase: rollout and verify → advantage → update);
//! - `run/` (the loop around steps: evaluation, checkpoints, resume, report; `compare`);
//! - `offline/` (the modes that work on a policy, a dataset or a run: G2D + DPO, diagnose,
//!   RELEX).
//!
//! A run is a [`RunConfig`] (TOML, every field defaulted, `--set`-style overrides) given to
//! [`train`]. The example trains a tiny bundled model for two steps on the bundled arithmetic
//! task (the warm start and both steps take a few seconds):
//!
//! ```
//! use rlvr_train::{RunConfig, RunOptions, train};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/arith");
//! let overrides: Vec<String> = [
//!     format!("run_dir=\"{}\"", dir.path().join("run").display()),
//!     format!("sft.cache_dir=\"{}\"", dir.path().join("cache").display()),
//!     format!("data.train=\"{data}/train.jsonl\""),
//!     format!("data.eval=\"{data}/test.jsonl\""),
//!     "data.eval_limit=8".into(),
//!     "model.hidden_size=32".into(), "model.num_layers=1".into(),
//!     "model.num_heads=2".into(), "model.num_kv_heads=1".into(),
//!     "model.intermediate_size=64".into(),
//!     "sft.steps=10".into(), "sft.batch_size=8".into(), "sft.eval_every=0".into(),
//!     "rollout.prompts_per_step=2".into(), "rollout.group_size=4".into(),
//!     "train.steps=2".into(), "eval.every=0".into(),
//! ]
//! .into();
//! let config = RunConfig::load(None, &overrides).unwrap();
//! assert_eq!(config.objective.name(), "dapo"); // the default objective
//! let outcome = train(config, &RunOptions { quiet: true, ..Default::default() }).unwrap();
//! assert_eq!(outcome.steps, 2);
//! assert!(outcome.run_dir.join("metrics.jsonl").exists());
//! ```
#![warn(missing_docs)]

pub mod batch;
pub mod checkpoint;
pub mod config;
pub mod data;
pub mod env;
pub mod error;
pub mod eval;
pub mod grad_norm;
pub mod logprobs;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod offline;
pub mod progress;
pub mod prompt;
pub mod rollout_engine;
pub mod run;
pub mod schedule;
pub mod sft;
pub mod step;
pub mod tensorboard;
pub mod trainer;
pub mod verify;

pub use config::RunConfig;
pub use error::{Error, Result};
pub use run::{RunOptions, RunOutcome, train};
