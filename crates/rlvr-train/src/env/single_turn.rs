//! The one-turn environment: the prompt is the only observation and the policy's first turn
//! is the answer the verifier scores, exactly the plain rollout of `step/rollout.rs` (the
//! multi-turn path with this environment gives the same ids, log-probs and rewards: tested).

use crate::data::Example;
use crate::env::{Environment, Turn};
use crate::error::Result;

/// Prompt → answer → verifier.
#[derive(Debug, Clone, Copy, Default)]
pub struct SingleTurn;

impl Environment for SingleTurn {
    fn reset(&mut self, _example: &Example) -> Result<()> {
        Ok(())
    }

    fn step(&mut self, _action: &str) -> Turn {
        Turn::finish()
    }
}
