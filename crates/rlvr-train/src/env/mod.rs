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
//! - `bm25.rs`, `search.rs`: a `search` tool over a local corpus (BM25) and its environment;
//! - `guess_number.rs`: a hidden number found by probes, the partially observable game whose
//!   turns state a belief (ReBel);
//! - `single_turn.rs`: prompt → answer → verifier, the one-turn environment;
//! - `groups.rs`: episodes as a step's rollout groups and as held-out evaluation;
//! - `tier.rs`: TIER, a reward built from each tool call's checks (`[env] reward = "tier"`);
//! - `oracle.rs`: a scripted policy that solves the bundled environments (their tests);
//! - `transcript.rs`: a teacher's transcript split into policy turns and observations by
//!   replaying it (the warm start's loss mask, `sft.mask_observations`).
//!
//! The `[env]` section ([`crate::config::EnvSection`]) selects one; without it a run samples
//! one turn per prompt on the plain path (`step/rollout.rs`), which is what
//! `kind = "single_turn"` computes too (tested: same ids, log-probs and rewards).

pub mod bm25;
pub mod calculator;
pub mod episode;
pub mod expr;
pub mod groups;
pub mod guess_number;
pub mod oracle;
pub mod search;
pub mod single_turn;
pub mod tier;
pub mod tool_call;
pub mod transcript;

pub use episode::{EpisodeSettings, LocalTurns, Trajectory, TurnSampler, run_episodes};
pub use tool_call::{CallCheck, Tool, ToolCall};

use crate::config::{EnvKind, EnvSection};
use crate::data::Example;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;

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
    /// The tool calls the policy wrote in the turn, in order, each with its checks (a call
    /// that is not `executed` was malformed, named an unknown tool, broke the schema or
    /// failed, e.g. a division by zero).
    pub calls: Vec<CallCheck>,
    /// The environment's check of the belief the policy stated in the turn (environments
    /// that track beliefs, for ReBel); `None` otherwise.
    pub belief: Option<BeliefCheck>,
}

/// An environment's check of one policy turn's stated belief (ReBel, methods-extra §19):
/// what [`rlvr_objectives::StepCredit`] holds besides the turn's token span.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BeliefCheck {
    /// The canonical belief key the turn is grouped by; `None` when no belief parsed.
    pub key: Option<String>,
    /// `r_state` in [0, 1]: the stated state against the environment's tracker.
    pub state: f32,
    /// `r_task` in [0, 1]: the turn's action against the task's phase.
    pub task: f32,
    /// Whether the belief parsed.
    pub format_ok: bool,
}

impl Turn {
    /// The end of the episode, no turn reward, no tool calls.
    pub fn finish() -> Self {
        Self {
            reply: Reply::Final,
            reward: 0.0,
            calls: Vec::new(),
            belief: None,
        }
    }

    /// The episode goes on with `observation`, no turn reward, no tool calls.
    pub fn observe(observation: impl Into<String>) -> Self {
        Self {
            reply: Reply::Observation(observation.into()),
            ..Self::finish()
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

    /// Strings that end a policy turn besides the stop tokens: `</tool_call>` when the
    /// environment has tools, none otherwise.
    fn stop_strings(&self) -> Vec<String> {
        if self.tools().is_empty() {
            Vec::new()
        } else {
            vec![tool_call::CLOSE.to_string()]
        }
    }

    /// The part of an answer turn that the verifier scores (the whole turn unless the
    /// environment's turns carry more than the answer, e.g. a stated belief).
    fn answer_text<'a>(&self, action: &'a str) -> &'a str {
        action
    }

    /// Starts an episode on `example`; its rendered prompt is the first observation.
    ///
    /// # Errors
    /// [`Error::Environment`] when the example lacks what the environment needs.
    fn reset(&mut self, example: &Example) -> Result<()>;

    /// Answers the policy's turn `action` (its decoded text, special tokens removed).
    fn step(&mut self, action: &str) -> Turn;
}

/// A fresh environment of the configured kind (the search environment's corpus is indexed
/// once per process and path, then shared).
///
/// # Errors
/// The search environment's corpus cannot be read, or `env.corpus` is missing.
pub fn new_environment(section: &EnvSection) -> Result<Box<dyn Environment>> {
    Ok(match section.kind {
        EnvKind::SingleTurn => Box::new(single_turn::SingleTurn),
        EnvKind::Calculator => Box::new(calculator::Calculator::new()),
        EnvKind::GuessNumber => Box::new(guess_number::GuessNumber::default()),
        EnvKind::Search => {
            let Some(path) = &section.corpus else {
                return Err(crate::error::Error::Config(
                    "env.kind = \"search\" needs env.corpus (a JSON-lines file of {\"text\"} \
                     documents)"
                        .into(),
                ));
            };
            Box::new(search::Search::new(
                search::corpus_index(path)?,
                section.top_k,
            ))
        }
    })
}

/// The `tools` entries of the configured environment (empty for tool-less kinds).
///
/// # Errors
/// As [`new_environment`].
pub fn tool_specs(section: &EnvSection) -> Result<Vec<serde_json::Value>> {
    Ok(new_environment(section)?
        .tools()
        .iter()
        .map(Tool::spec)
        .collect())
}
