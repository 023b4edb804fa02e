//! A teacher's multi-turn transcript split into the policy's turns and the environment's
//! observations, by replaying it through the environment: what the warm start trains on when
//! `sft.mask_observations` is on (the same tokens an RL episode's loss mask keeps).
//!
//! A completion such as `<tool_call>{...}</tool_call><tool_response>176</tool_response>176`
//! is read turn by turn: a policy turn runs to the first of the environment's stop strings
//! ([`Environment::stop_strings`], `</tool_call>` for tool environments) or to the end; the
//! environment is stepped with it, and its observation, rendered by `env.observation_template`,
//! must be the text that follows. A transcript that disagrees with the environment (a tool
//! response the tool would not give, text after the episode ended) is an error naming the
//! example: the warm start would otherwise learn observations the policy never sees.

use crate::data::Example;
use crate::env::episode::ObservationFormat;
use crate::env::{Environment, Reply};
use crate::error::{Error, Result};

/// One piece of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Its text.
    pub text: String,
    /// Whether the policy wrote it (`true`) or the environment did (an observation).
    pub policy: bool,
}

/// Splits `transcript` (a completion of `example`) into policy turns and observations by
/// replaying it through `env` (reset here on `example`).
///
/// # Errors
/// [`Error::Environment`] naming the example when the environment cannot start on it, when an
/// observation in the transcript is not the environment's, or when text follows the turn that
/// ended the episode; the template's [`Error::Config`].
pub fn split_transcript(
    env: &mut dyn Environment,
    format: &ObservationFormat,
    example: &Example,
    transcript: &str,
) -> Result<Vec<Segment>> {
    env.reset(example)?;
    let stops = env.stop_strings();
    let mismatch = |message: String| Error::Environment {
        example: example.id.clone(),
        message,
    };
    let mut segments = Vec::new();
    let mut rest = transcript;
    loop {
        let end = stops
            .iter()
            .filter_map(|s| rest.find(s.as_str()).map(|at| at + s.len()))
            .min()
            .unwrap_or(rest.len());
        let (turn, after) = rest.split_at(end);
        segments.push(Segment {
            text: turn.to_string(),
            policy: true,
        });
        rest = after;
        if rest.is_empty() {
            return Ok(segments);
        }
        match env.step(turn).reply {
            Reply::Final => {
                return Err(mismatch(format!(
                    "the completion goes on after the turn `{turn}` ended the episode"
                )));
            }
            Reply::Observation(observation) => {
                let rendered = format.render(&observation)?;
                let Some(after) = rest.strip_prefix(rendered.as_str()) else {
                    return Err(mismatch(format!(
                        "after the turn `{turn}` the completion has `{}`, not the \
                         environment's observation `{rendered}`",
                        rest.chars()
                            .take(rendered.chars().count().max(16))
                            .collect::<String>()
                    )));
                };
                segments.push(Segment {
                    text: rendered,
                    policy: false,
                });
                rest = after;
                if rest.is_empty() {
                    return Ok(segments);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::calculator::Calculator;
    use crate::env::guess_number::GuessNumber;

    fn example(record: serde_json::Value) -> Example {
        Example {
            id: "ex-1".into(),
            prompt: record["prompt"].as_str().map(str::to_string),
            messages: None,
            record,
        }
    }

    fn parts(segments: &[Segment]) -> Vec<(&str, bool)> {
        segments
            .iter()
            .map(|s| (s.text.as_str(), s.policy))
            .collect()
    }

    #[test]
    fn a_calculator_transcript_splits_at_the_call_and_its_response() {
        let call =
            r#"<tool_call>{"name":"calculator","arguments":{"expression":"28*3-95"}}</tool_call>"#;
        let text = format!("{call}<tool_response>-11</tool_response>-11");
        let ex = example(serde_json::json!({"prompt": "28*3-95=", "answer": "-11"}));
        let format = ObservationFormat::new("{{ observation }}").unwrap();
        let got = split_transcript(&mut Calculator::new(), &format, &ex, &text).unwrap();
        assert_eq!(
            parts(&got),
            [
                (call, true),
                ("<tool_response>-11</tool_response>", false),
                ("-11", true)
            ]
        );
        // A direct answer is one policy turn.
        let got = split_transcript(&mut Calculator::new(), &format, &ex, "-11").unwrap();
        assert_eq!(parts(&got), [("-11", true)]);
        // The template is applied to the observation before it is matched.
        let framed = ObservationFormat::new("\n[{{ observation }}] ").unwrap();
        let text = format!("{call}\n[<tool_response>-11</tool_response>] -11");
        let got = split_transcript(&mut Calculator::new(), &framed, &ex, &text).unwrap();
        assert_eq!(got[1].text, "\n[<tool_response>-11</tool_response>] ");
        assert_eq!(got[2].text, "-11");
    }

    #[test]
    fn a_game_transcript_splits_at_every_probe() {
        let ex = example(serde_json::json!({
            "prompt": "GUESS 6-20:", "answer": "10", "low": 6, "high": 20
        }));
        let format = ObservationFormat::new("{{ observation }}").unwrap();
        let got = split_transcript(&mut GuessNumber::default(), &format, &ex, "13?L9?H10").unwrap();
        assert_eq!(
            parts(&got),
            [
                ("13?", true),
                ("L", false),
                ("9?", true),
                ("H", false),
                ("10", true)
            ]
        );
    }

    #[test]
    fn a_transcript_the_environment_disagrees_with_is_named() {
        let ex = example(serde_json::json!({"prompt": "2*3+1=", "answer": "7"}));
        let format = ObservationFormat::new("{{ observation }}").unwrap();
        let call =
            r#"<tool_call>{"name":"calculator","arguments":{"expression":"2*3+1"}}</tool_call>"#;
        let wrong = format!("{call}<tool_response>8</tool_response>8");
        let err = split_transcript(&mut Calculator::new(), &format, &ex, &wrong)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ex-1") && err.contains("<tool_response>7</tool_response>"),
            "{err}"
        );
    }
}
