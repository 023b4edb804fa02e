//! The RLVR training loop: composes `rlvr-models` (policy, sampling, log-probs),
//! `rlvr-verifiers` (rewards), `rlvr-objectives` (advantages and loss) and `rlvr-optim`
//! (updates) into a run.
//!
//! One step, in data-flow order (see `step.rs`): prompts → rollout (G samples per prompt on the
//! no-grad policy, sampler log-probs kept) → verify (in parallel, per-item time limit) →
//! group advantages → PPO-style update (mini-batches × epochs, global gradient clipping,
//! non-finite updates skipped) → metrics. `run.rs` wraps steps with evaluation, checkpoints,
//! resume and signals; `bundled.rs` provides the default warm-started model.
#![warn(missing_docs)]

pub mod batch;
pub mod bundled;
pub mod char_tokenizer;
pub mod checkpoint;
pub mod compare;
pub mod config;
pub mod data;
pub mod device;
pub mod diagnose;
pub mod error;
pub mod eval;
pub mod g2d;
pub mod grad_norm;
pub mod metrics;
pub mod param_ids;
pub mod params;
pub mod relex;
pub mod report;
pub mod rollout;
pub mod run;
pub mod schedule;
pub mod sft;
pub mod srar_judge;
pub mod step;
pub mod trainer;
pub mod verify;

pub use config::RunConfig;
pub use error::{Error, Result};
pub use run::{RunOptions, RunOutcome, train};
