//! Scripted policies that solve the bundled environments, and a text-level episode loop to
//! play them: each environment's test plays its oracle on the held-out split and expects the
//! verifier to pass every episode (the environment and its data are solvable as served).

use serde_json::json;

use crate::data::Example;
use crate::env::calculator::TOOL;
use crate::env::tool_call::render_call;
use crate::env::{Environment, Reply};

/// The end of a text-level episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Played {
    /// The answer turn, when the environment ended the episode.
    pub final_text: Option<String>,
    /// Policy turns taken.
    pub turns: usize,
    /// Tool calls that failed.
    pub tool_errors: usize,
}

/// Plays `policy` (the observations so far → the next turn's text) against `env`, reset on
/// `example`, for at most `max_turns` turns.
pub fn play(
    env: &mut dyn Environment,
    example: &Example,
    max_turns: usize,
    mut policy: impl FnMut(&[String]) -> String,
) -> Played {
    env.reset(example);
    let mut observations = Vec::new();
    let mut tool_errors = 0;
    for turn in 1..=max_turns {
        let action = policy(&observations);
        let t = env.step(&action);
        tool_errors += t.tool_errors;
        match t.reply {
            Reply::Final => {
                return Played {
                    final_text: Some(action),
                    turns: turn,
                    tool_errors,
                };
            }
            Reply::Observation(o) => observations.push(o),
        }
    }
    Played {
        final_text: None,
        turns: max_turns,
        tool_errors,
    }
}

/// The calculator's oracle: calls the tool on the record's `expression`, then answers with
/// the number inside the tool's response (never with the record's `answer`: the episode
/// passes only if the tool computed it).
pub fn calculator(example: &Example) -> impl FnMut(&[String]) -> String + '_ {
    move |observations: &[String]| match observations.last() {
        None => {
            let expression = example.record["expression"].as_str().unwrap_or_default();
            render_call(TOOL, &json!({ "expression": expression }))
        }
        Some(o) => o
            .trim_start_matches("<tool_response>")
            .trim_end_matches("</tool_response>")
            .to_string(),
    }
}
