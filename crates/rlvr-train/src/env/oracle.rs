//! Scripted policies that solve the bundled environments, and a text-level episode loop to
//! play them: each environment's test plays its oracle on the held-out split and expects the
//! verifier to pass every episode (the environment and its data are solvable as served).

use serde_json::json;

use crate::data::Example;
use crate::env::calculator::TOOL;
use crate::env::tool_call::render_call;
use crate::env::{CallCheck, Environment, Reply};
use crate::error::Result;

/// The end of a text-level episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Played {
    /// The answer turn (the part the verifier scores), when the environment ended the episode.
    pub final_text: Option<String>,
    /// Policy turns taken.
    pub turns: usize,
    /// Every tool call, in order, with its checks.
    pub calls: Vec<CallCheck>,
}

impl Played {
    /// Tool calls that were not executed.
    pub fn tool_errors(&self) -> usize {
        self.calls.iter().filter(|c| !c.executed).count()
    }
}

/// Plays `policy` (the observations so far → the next turn's text) against `env`, reset on
/// `example`, for at most `max_turns` turns.
///
/// # Errors
/// The environment's, when it cannot start on `example`.
pub fn play(
    env: &mut dyn Environment,
    example: &Example,
    max_turns: usize,
    mut policy: impl FnMut(&[String]) -> String,
) -> Result<Played> {
    env.reset(example)?;
    let mut observations = Vec::new();
    let mut calls = Vec::new();
    for turn in 1..=max_turns {
        let action = policy(&observations);
        let t = env.step(&action);
        calls.extend(t.calls);
        match t.reply {
            Reply::Final => {
                return Ok(Played {
                    final_text: Some(env.answer_text(&action).to_string()),
                    turns: turn,
                    calls,
                });
            }
            Reply::Observation(o) => observations.push(o),
        }
    }
    Ok(Played {
        final_text: None,
        turns: max_turns,
        calls,
    })
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

/// The search environment's oracle: searches the record's `entity`, then answers with the
/// number that follows `<entity>:` in the results (never with the record's `answer`: the
/// episode passes only if retrieval found the entity's own document).
pub fn search(example: &Example) -> impl FnMut(&[String]) -> String + '_ {
    let entity = example.record["entity"].as_str().unwrap_or_default();
    move |observations: &[String]| match observations.last() {
        None => render_call(crate::env::search::TOOL, &json!({ "query": entity })),
        Some(o) => {
            let head = format!("{entity}: ");
            // A document starts at the response's opening or after another's closing period.
            let at = o
                .match_indices(&head)
                .map(|(i, _)| i)
                .find(|&i| i == 0 || o[..i].ends_with('>') || o[..i].ends_with(". "));
            at.map(|i| {
                o[i + head.len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect()
            })
            .unwrap_or_default()
        }
    }
}
