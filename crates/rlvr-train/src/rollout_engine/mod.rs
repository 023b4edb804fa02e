//! Rollouts on OpenAI-compatible inference servers (`rollout.engine = "openai"`), such as
//! `rlvr-serve`: the client that samples the responses ([`openai`]), the weight sync that keeps
//! the servers on the policy being trained ([`sync`]), and the statistics of the gap between the
//! servers' log-probs and the trainer's ([`mismatch`]), and multi-turn episodes' turns
//! ([`turns`]).
//!
//! A step with a remote engine first syncs the weights when [`sync::WeightSync::due`], then
//! asks the servers for the responses (one request per response, seeded so that a server gives
//! the tokens local generation would), and from there on follows the local path: the trainer
//! rescores the responses itself and trains on its own log-probs.

pub mod mismatch;
pub mod openai;
pub mod sync;
pub mod turns;

use std::path::Path;

use crate::config::{RolloutEngine, RolloutSection};

pub use mismatch::LogpMismatch;
pub use openai::{OpenAiClient, request_seed};
pub use sync::WeightSync;
pub use turns::RemoteTurns;

/// The remote rollout engine of a run: the client and the weight sync state.
pub struct RemoteEngine {
    /// The HTTP client over `rollout.endpoints`.
    pub client: OpenAiClient,
    /// When the policy was last written and loaded by the servers.
    pub sync: WeightSync,
}

impl RemoteEngine {
    /// The engine of `rollout`, syncing through `<run_dir>/sync/policy`.
    pub fn new(rollout: &RolloutSection, run_dir: &Path) -> Self {
        Self {
            client: OpenAiClient::new(rollout),
            sync: WeightSync::new(run_dir, rollout.sync_every),
        }
    }

    /// [`RemoteEngine::new`] when `rollout.engine = "openai"`, `None` for the local engine.
    pub fn from_config(rollout: &RolloutSection, run_dir: &Path) -> Option<Self> {
        (rollout.engine == RolloutEngine::Openai).then(|| Self::new(rollout, run_dir))
    }
}
