//! The weight sync of a remote rollout engine: every `rollout.sync_every` optimizer steps (and
//! before the first rollout) the policy is written as a HuggingFace directory to
//! `<run_dir>/sync/policy` (atomically, by `rlvr_models::save_pretrained`), every endpoint loads
//! it (`POST /update_weights_from_disk`), and the versions they report become the ones the
//! rollouts' replies must carry.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rlvr_models::{CausalLm, ModelConfig, Tokenizer, save_pretrained};

use super::openai::OpenAiClient;
use crate::error::{Error, Result};

/// Where a run's synced policy is written, under its run directory.
pub const SYNC_DIR: &str = "sync/policy";

/// When the servers last got the policy.
#[derive(Debug, Clone)]
pub struct WeightSync {
    dir: PathBuf,
    every: usize,
    /// Optimizer steps done when the last sync happened (`None`: never in this process).
    last: Option<usize>,
    /// (endpoint, weights version) → the RL step whose weights that version holds.
    policy_of: HashMap<(usize, u64), usize>,
}

impl WeightSync {
    /// A sync through `<run_dir>/sync/policy` every `every` optimizer steps.
    pub fn new(run_dir: &Path, every: usize) -> Self {
        Self {
            dir: run_dir.join(SYNC_DIR),
            every: every.max(1),
            last: None,
            policy_of: HashMap::new(),
        }
    }

    /// The directory the policy is written to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether a rollout after `optimizer_steps` optimizer steps must sync first: always before
    /// the first one, then once `every` steps have passed since the last sync (a skipped update
    /// does not count: the weights did not change).
    pub fn due(&self, optimizer_steps: usize) -> bool {
        self.last
            .is_none_or(|last| optimizer_steps >= last + self.every)
    }

    /// The RL step whose weights `endpoint` serves as `weights_version` (a version one of this
    /// process's syncs reported), e.g. to tell how stale a response is.
    pub fn policy_version(&self, endpoint: usize, weights_version: u64) -> Option<usize> {
        self.policy_of.get(&(endpoint, weights_version)).copied()
    }

    /// Writes the policy of RL step `policy_version` (and, once, its tokenizer) and has every
    /// endpoint load it; returns the seconds it took.
    ///
    /// # Errors
    /// The write's error, or [`Error::Engine`] naming an endpoint that did not load the weights.
    pub fn sync(
        &mut self,
        client: &mut OpenAiClient,
        policy: &CausalLm,
        config: &ModelConfig,
        tokenizer: &Tokenizer,
        optimizer_steps: usize,
        policy_version: usize,
    ) -> Result<f64> {
        let start = Instant::now();
        if let Some(parent) = self.dir.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        save_pretrained(policy, config, &self.dir)?;
        if !self.dir.join("tokenizer.json").exists() {
            tokenizer.save_to_dir(&self.dir)?;
        }
        let path = std::path::absolute(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let versions = client.update_weights(&path)?;
        tracing::debug!(
            "weight sync after {optimizer_steps} optimizer steps: {} now at versions {versions:?}",
            path.display()
        );
        self.last = Some(optimizer_steps);
        for (endpoint, &version) in versions.iter().enumerate() {
            self.policy_of.insert((endpoint, version), policy_version);
        }
        Ok(start.elapsed().as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_is_due_first_and_then_every_k_optimizer_steps() {
        let mut s = WeightSync::new(Path::new("/tmp/run"), 3);
        assert_eq!(s.dir(), Path::new("/tmp/run/sync/policy"));
        assert!(s.due(0) && s.due(5));
        s.last = Some(2);
        assert!(!s.due(2) && !s.due(4));
        assert!(s.due(5) && s.due(9));
    }
}
