//! The calculator environment: multi-step arithmetic with a `calculator` tool.
//!
//! Each policy turn either calls the tool (`<tool_call>{"name": "calculator", "arguments":
//! {"expression": "23*7+15"}}</tool_call>`; [`crate::env::expr`] evaluates it exactly) and
//! reads back `<tool_response>176</tool_response>`, or answers, which ends the episode for the
//! verifier (math: the answer against the example's `answer`). A bad call (not JSON, another
//! tool, arguments that break the schema, an expression without an integer value) is answered
//! with `<tool_response>error: ...</tool_response>` and counted in `env/tool_error_frac`.
//! Datasets: `cargo xtask gen-agent-calculator` (`datasets/agent-calculator`).

use std::sync::LazyLock;

use serde_json::json;

use crate::data::Example;
use crate::env::expr::{self, MAX_LEN};
use crate::env::tool_call::{CallCheck, CallError, Tool, parse_calls};
use crate::env::{Environment, Turn};
use crate::error::Result;

/// The tool's name.
pub const TOOL: &str = "calculator";

/// The calculator tool, its schema compiled once per process (every episode's environment
/// shares it).
static TOOLS: LazyLock<[Tool; 1]> = LazyLock::new(|| {
    [Tool::new(
        TOOL,
        "Evaluates an integer arithmetic expression with + - * / and parentheses.",
        json!({
            "type": "object",
            "properties": {"expression": {"type": "string", "minLength": 1, "maxLength": MAX_LEN}},
            "required": ["expression"],
            "additionalProperties": false
        }),
    )]
});

/// The calculator environment (stateless between turns: every call is evaluated on its own).
#[derive(Debug, Clone, Copy, Default)]
pub struct Calculator;

impl Calculator {
    /// The environment with its one tool.
    pub fn new() -> Self {
        Self
    }
}

/// The tool's response as the policy reads it.
pub fn response(text: &str) -> String {
    format!("<tool_response>{text}</tool_response>")
}

impl Environment for Calculator {
    fn tools(&self) -> &[Tool] {
        TOOLS.as_slice()
    }

    fn reset(&mut self, _example: &Example) -> Result<()> {
        Ok(())
    }

    fn step(&mut self, action: &str) -> Turn {
        let calls = parse_calls(action, self.tools());
        if calls.is_empty() {
            return Turn::finish();
        }
        let mut checks = Vec::with_capacity(calls.len());
        let mut observation = String::new();
        for call in &calls {
            let result = call.as_ref().map_err(CallError::to_string).and_then(|c| {
                let text = c.arguments["expression"].as_str().unwrap_or_default();
                expr::eval(text)
                    .map(|v| v.to_string())
                    .map_err(|e| format!("error: {e}"))
            });
            checks.push(CallCheck::of(call).ran(result.is_ok()));
            observation.push_str(&response(&result.unwrap_or_else(|e| e)));
        }
        Turn {
            calls: checks,
            ..Turn::observe(observation)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Reply;
    use crate::env::tool_call::render_call;

    fn errors(t: &Turn) -> usize {
        t.calls.iter().filter(|c| !c.executed).count()
    }

    #[test]
    fn a_call_is_evaluated_a_bad_one_is_an_error_and_an_answer_ends() {
        let mut env = Calculator::new();
        let t = env.step(&render_call(TOOL, &json!({"expression": "23*7+15"})));
        assert_eq!(t.reply, Reply::Observation(response("176")));
        assert_eq!((t.calls.len(), errors(&t)), (1, 0));
        let t = env.step(&render_call(TOOL, &json!({"expression": "7/2"})));
        assert_eq!(
            t.reply,
            Reply::Observation(response("error: 7/2 is not an integer"))
        );
        assert_eq!(errors(&t), 1);
        assert!(
            t.calls[0].valid,
            "an inexact division is a valid call that fails"
        );
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
