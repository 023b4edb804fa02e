//! Multi-turn environments: the policy acts, the environment answers, over several turns, and
//! only the policy's tokens are trained on.
//!
//! An [`Environment`] is reset on a dataset example (whose rendered prompt is the first
//! observation) and then stepped with the text of each policy turn; it answers with an
//! observation (a tool's response, a game's feedback) or ends the episode with
//! [`Reply::Final`], after which the run's verifier scores that last turn against the example's
//! reference. Each turn may also carry a reward of its own (summed with the verifier's).
//!
//! - `episode.rs`: the batched rollout of episodes, token-in/token-out: a trajectory is the
//!   prompt's ids, then each turn's sampled ids (loss mask 1) and each observation's ids
//!   (encoded once, on its own; loss mask 0), never re-tokenized from text, so the trainer
//!   scores exactly the ids that were sampled;
//! - `tool_call.rs`: `<tool_call>{json}</tool_call>` parsing and JSON-Schema checks;
//! - `expr.rs`, `calculator.rs`: the calculator tool and its environment;
//! - `single_turn.rs`: prompt → answer → verifier, the one-turn environment;
//! - `groups.rs`: episodes as a step's rollout groups and as held-out evaluation;
//! - `oracle.rs`: a scripted policy that solves the bundled environments (their tests).
//!
//! The `[env]` section ([`crate::config::EnvSection`]) selects one; without it a run samples
//! one turn per prompt on the plain path (`step/rollout.rs`), which is what
//! `kind = "single_turn"` computes too (tested: same ids, log-probs and rewards).

pub mod calculator;
pub mod episode;
pub mod expr;
pub mod groups;
pub mod oracle;
pub mod single_turn;
pub mod tool_call;

pub use episode::{EpisodeSettings, Trajectory, run_episodes};
pub use tool_call::{Tool, ToolCall};

use crate::config::{EnvKind, EnvSection};
use crate::data::Example;

/// What the environment says after a policy turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The episode goes on: this text (rendered by `env.observation_template`, then encoded)
    /// follows the policy's turn in the context.
    Observation(String),
    /// The episode is over; the turn just taken is the answer the verifier scores.
    Final,
}

/// One environment turn: its reply, its own reward, and what happened to tool calls in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The observation, or the end of the episode.
    pub reply: Reply,
    /// This turn's reward (added to the trajectory's; 0 for the bundled environments).
    pub reward: f32,
    /// Tool calls the policy wrote in the turn.
    pub tool_calls: usize,
    /// Of those, the ones not executed (malformed, unknown tool, schema violation) or that
    /// failed (e.g. division by zero).
    pub tool_errors: usize,
}

impl Turn {
    /// The end of the episode, no turn reward, no tool calls.
    pub fn finish() -> Self {
        Self {
            reply: Reply::Final,
            reward: 0.0,
            tool_calls: 0,
            tool_errors: 0,
        }
    }
}

/// A multi-turn environment (one episode at a time; the rollout keeps one per row).
pub trait Environment: Send {
    /// The tools the policy may call (rendered into the prompt through the chat template's
    /// `tools` variable when `data.chat_template` is on).
    fn tools(&self) -> &[Tool] {
        &[]
    }

    /// Starts an episode on `example`; its rendered prompt is the first observation.
    fn reset(&mut self, example: &Example);

    /// Answers the policy's turn `action` (its decoded text, special tokens removed).
    fn step(&mut self, action: &str) -> Turn;
}

/// A fresh environment of the configured kind.
pub fn new_environment(section: &EnvSection) -> Box<dyn Environment> {
    match section.kind {
        EnvKind::SingleTurn => Box::new(single_turn::SingleTurn),
        EnvKind::Calculator => Box::new(calculator::Calculator::new()),
    }
}

/// The `tools` entries of the configured environment (empty for tool-less kinds).
pub fn tool_specs(section: &EnvSection) -> Vec<serde_json::Value> {
    new_environment(section)
        .tools()
        .iter()
        .map(Tool::spec)
        .collect()
}
