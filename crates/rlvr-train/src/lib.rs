//! The RLVR training loop: composes `rlvr-models` (policy, sampling, log-probs),
//! `rlvr-verifiers` (rewards), `rlvr-objectives` (advantages and loss) and `rlvr-optim`
//! (updates) into a run.
//!
//! The module tree follows the data flow, bottom to top (a module imports only from the rows
//! above it, so there is no import cycle):
//!
//! - `config/` (the run configuration: a leaf; `defaults.rs` holds every default value),
//!   `error`;
//! - the parts: `data` (JSONL examples), `prompt` (rendering, padding), `batch` (a sample and
//!   the packed `[B, T]` tensors), `logprobs` (the temperature-scaled policy and the truncated
//!   sampler), `verify`, `eval`, `metrics`, `checkpoint`, `schedule`, `grad_norm`;
//! - `sft` (the supervised warm start) and `model/` (the bundled model, its tokenizer, the
//!   device, stable parameter ids);
//! - `trainer` (the state a run carries from step to step);
//! - `step/` (one RL step, one file per phase: rollout and verify → advantage → update);
//! - `run/` (the loop around steps: evaluation, checkpoints, resume, report; `compare`);
//! - `offline/` (the modes that work on a policy, a dataset or a run: G2D + DPO, diagnose,
//!   RELEX).
#![warn(missing_docs)]

pub mod batch;
pub mod checkpoint;
pub mod config;
pub mod data;
pub mod error;
pub mod eval;
pub mod grad_norm;
pub mod logprobs;
pub mod metrics;
pub mod model;
pub mod offline;
pub mod prompt;
pub mod run;
pub mod schedule;
pub mod sft;
pub mod step;
pub mod trainer;
pub mod verify;

pub use config::RunConfig;
pub use error::{Error, Result};
pub use run::{RunOptions, RunOutcome, train};
