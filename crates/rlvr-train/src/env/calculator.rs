//! The calculator environment: multi-step arithmetic with a `calculator` tool.
//!
//! Each policy turn either calls the tool (`<tool_call>{"name": "calculator", "arguments":
//! {"expression": "23*7+15"}}</tool_call>`; [`crate::env::expr`] evaluates it exactly) and
//! reads back `<tool_response>176</tool_response>`, or answers, which ends the episode for the
//! verifier (math: the answer against the example's `answer`). A bad call (not JSON, another
//! tool, arguments that break the schema, an expression without an integer value) is answered
//! with `<tool_response>error: ...</tool_response>` and counted in `env/tool_errors`.
//! Datasets: `cargo xtask gen-agent-calculator` (`datasets/agent-calculator`).

use serde_json::json;

use crate::data::Example;
use crate::env::expr::{self, MAX_LEN};
use crate::env::tool_call::{CallError, Tool, parse_calls};
use crate::env::{Environment, Reply, Turn};

/// The tool's name.
pub const TOOL: &str = "calculator";

/// The calculator environment (stateless between turns: every call is evaluated on its own).
#[derive(Debug)]
pub struct Calculator {
    tools: Vec<Tool>,
}

impl Default for Calculator {
    fn default() -> Self {
        Self::new()
    }
}

impl Calculator {
    /// The environment with its one tool.
    pub fn new() -> Self {
        let tool = Tool::new(
            TOOL,
            "Evaluates an integer arithmetic expression with + - * / and parentheses.",
            json!({
                "type": "object",
                "properties": {"expression": {"type": "string", "minLength": 1, "maxLength": MAX_LEN}},
                "required": ["expression"],
                "additionalProperties": false
            }),
        );
        Self { tools: vec![tool] }
    }
}

/// The tool's response as the policy reads it.
pub fn response(text: &str) -> String {
    format!("<tool_response>{text}</tool_response>")
}

impl Environment for Calculator {
    fn tools(&self) -> &[Tool] {
        &self.tools
    }

    fn reset(&mut self, _example: &Example) {}

    fn step(&mut self, action: &str) -> Turn {
        let calls = parse_calls(action, &self.tools);
        if calls.is_empty() {
            return Turn::finish();
        }
        let mut errors = 0;
        let mut observation = String::new();
        for call in &calls {
            let result = call.as_ref().map_err(CallError::to_string).and_then(|c| {
                let text = c.arguments["expression"].as_str().unwrap_or_default();
                expr::eval(text)
                    .map(|v| v.to_string())
                    .map_err(|e| format!("error: {e}"))
            });
            errors += usize::from(result.is_err());
            observation.push_str(&response(&result.unwrap_or_else(|e| e)));
        }
        Turn {
            reply: Reply::Observation(observation),
            reward: 0.0,
            tool_calls: calls.len(),
            tool_errors: errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::tool_call::render_call;

    #[test]
    fn a_call_is_evaluated_a_bad_one_is_an_error_and_an_answer_ends() {
        let mut env = Calculator::new();
        let t = env.step(&render_call(TOOL, &json!({"expression": "23*7+15"})));
        assert_eq!(t.reply, Reply::Observation(response("176")));
        assert_eq!((t.tool_calls, t.tool_errors), (1, 0));
        let t = env.step(&render_call(TOOL, &json!({"expression": "7/2"})));
        assert_eq!(
            t.reply,
            Reply::Observation(response("error: 7/2 is not an integer"))
        );
        assert_eq!(t.tool_errors, 1);
        let t = env.step(&render_call(TOOL, &json!({"expr": "1"})));
        let Reply::Observation(obs) = t.reply else {
            panic!("a schema violation is an observation")
        };
        assert!(
            obs.starts_with("<tool_response>error: invalid arguments"),
            "{obs}"
        );
        assert_eq!(env.step("176").reply, Reply::Final);
    }
}
