//! Multi-turn episodes on inference servers: each turn of the rows still playing is one
//! completions request per row, its prompt the row's token ids so far (prompt, earlier turns
//! and observations) and its reply the turn's token ids and log-probs. Nothing is re-tokenized
//! on either side, so the trajectory the trainer scores is the ids the server read and wrote.
//! With the seeds local sampling gives each row, rlvr-serve writes the tokens the local policy
//! would (`tests/remote_rollouts.rs`).

use rlvr_models::{Generation, GenerationConfig};

use crate::env::TurnSampler;
use crate::error::Result;
use crate::rollout_engine::OpenAiClient;

/// A [`TurnSampler`] on `rollout.endpoints`, remembering which server and weights version
/// wrote each row's first turn.
pub struct RemoteTurns<'a> {
    client: &'a OpenAiClient,
    first_turn: Vec<Option<(usize, u64)>>,
}

impl<'a> RemoteTurns<'a> {
    /// A sampler for an episode batch of `rows` rows.
    pub fn new(client: &'a OpenAiClient, rows: usize) -> Self {
        Self {
            client,
            first_turn: vec![None; rows],
        }
    }

    /// Per row, the (endpoint, weights version) of its first turn: the version the step's
    /// samples are mapped by (every turn of a step comes from the weights synced before it,
    /// since episodes are not sampled ahead: `[env]` needs `rollout.max_staleness = 0`).
    ///
    /// # Panics
    /// When a row never played a turn (every row plays turn 0).
    pub fn into_served(self) -> Vec<(usize, u64)> {
        self.first_turn
            .into_iter()
            .map(|s| s.expect("every row plays its first turn"))
            .collect()
    }
}

impl TurnSampler for RemoteTurns<'_> {
    fn sample(
        &mut self,
        rows: &[usize],
        contexts: &[Vec<u32>],
        cfg: &GenerationConfig,
        stops: &[String],
        seed: u64,
    ) -> Result<Vec<Generation>> {
        let served = self.client.generate_until(contexts, cfg, stops, seed)?;
        for (&row, s) in rows.iter().zip(&served) {
            self.first_turn[row].get_or_insert((s.endpoint, s.weights_version));
        }
        Ok(served.into_iter().map(|s| s.generation).collect())
    }
}
