//! Tool calls in the format Qwen2.5 / Hermes chat models are trained on: the policy writes
//! `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (one JSON object per tag, any
//! number of tags in a turn), and each tool's `parameters` are a JSON Schema that the
//! arguments must satisfy (checked with the `jsonschema` crate). A call that is not JSON, names
//! no known tool or breaks the schema is not executed: the policy gets the error back as the
//! tool's response, as the anchors' agent loops do, and the episode goes on.
//!
//! [`Tool::spec`] is the OpenAI / HuggingFace `tools` entry (`{"type": "function",
//! "function": {name, description, parameters}}`) that chat templates render into the system
//! prompt.

use jsonschema::Validator;
use serde_json::{Value, json};

/// The opening tag of a call.
pub const OPEN: &str = "<tool_call>";
/// The closing tag of a call (the policy's turn stops at it).
pub const CLOSE: &str = "</tool_call>";

/// A tool the environment executes.
pub struct Tool {
    /// The name calls use.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
    validator: Validator,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("parameters", &self.parameters)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool whose arguments follow `parameters`.
    ///
    /// # Panics
    /// If `parameters` is not a valid JSON Schema (tools are defined in code, so this is a
    /// programming error).
    pub fn new(name: &str, description: &str, parameters: Value) -> Self {
        let validator = jsonschema::validator_for(&parameters)
            .unwrap_or_else(|e| panic!("tool `{name}`: invalid JSON Schema: {e}"));
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            validator,
        }
    }

    /// The `tools` entry a chat template renders.
    pub fn spec(&self) -> Value {
        json!({"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}})
    }

    /// Every schema violation of `arguments`, as `<path>: <message>` lines; empty when valid.
    pub fn violations(&self, arguments: &Value) -> Vec<String> {
        self.validator
            .iter_errors(arguments)
            .map(|e| {
                let path = e.instance_path().to_string();
                let path = if path.is_empty() { "/".into() } else { path };
                format!("{path}: {e}")
            })
            .collect()
    }
}

/// One call the policy wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments (validated against the tool's schema).
    pub arguments: Value,
}

/// Why a call was not executed; its `Display` is what the policy reads back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// `<tool_call>` without `</tool_call>`.
    Unclosed,
    /// The body is not a JSON object with a string `name` and an object `arguments`.
    Malformed(String),
    /// No tool of this name.
    UnknownTool(String),
    /// The arguments break the tool's schema.
    Schema(Vec<String>),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unclosed => write!(f, "error: {OPEN} without {CLOSE}"),
            Self::Malformed(why) => write!(f, "error: malformed tool call: {why}"),
            Self::UnknownTool(name) => write!(f, "error: unknown tool {name:?}"),
            Self::Schema(v) => write!(f, "error: invalid arguments: {}", v.join("; ")),
        }
    }
}

/// What became of one call, the per-call checks of TIER (`env/tier.rs`): each holds only if
/// the one before it does (a call that does not parse is neither valid nor executed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallCheck {
    /// `f_j`: the tag closed and its body is a JSON object with a string `name` and an object
    /// `arguments`.
    pub parsed: bool,
    /// `s_j`: parsed, and it names a known tool whose schema the arguments satisfy.
    pub valid: bool,
    /// `e_j`: valid, and the tool returned without an error.
    pub executed: bool,
}

impl CallCheck {
    /// The checks of a parsed call, before execution (`executed` is set by the caller when
    /// the tool returns without an error).
    pub fn of(call: &Result<ToolCall, CallError>) -> Self {
        let parsed = !matches!(call, Err(CallError::Unclosed | CallError::Malformed(_)));
        Self {
            parsed,
            valid: call.is_ok(),
            executed: false,
        }
    }

    /// The checks of a valid call that the tool ran: `executed` when it returned `Ok`.
    #[must_use]
    pub fn ran(self, ok: bool) -> Self {
        Self {
            executed: self.valid && ok,
            ..self
        }
    }
}

/// The tool calls of a turn's text, in order, each parsed and checked against `tools`; an
/// empty list when the text has no `<tool_call>` (the turn is a final answer).
pub fn parse_calls(text: &str, tools: &[Tool]) -> Vec<Result<ToolCall, CallError>> {
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let body_start = &rest[start + OPEN.len()..];
        let Some(end) = body_start.find(CLOSE) else {
            calls.push(Err(CallError::Unclosed));
            break;
        };
        calls.push(parse_one(body_start[..end].trim(), tools));
        rest = &body_start[end + CLOSE.len()..];
    }
    calls
}

fn parse_one(body: &str, tools: &[Tool]) -> Result<ToolCall, CallError> {
    let value: Value =
        serde_json::from_str(body).map_err(|e| CallError::Malformed(e.to_string()))?;
    let Value::Object(mut obj) = value else {
        return Err(CallError::Malformed("not a JSON object".into()));
    };
    let name = match obj.remove("name") {
        Some(Value::String(n)) => n,
        _ => return Err(CallError::Malformed("no string \"name\"".into())),
    };
    let arguments = obj.remove("arguments").unwrap_or_else(|| json!({}));
    if !arguments.is_object() {
        return Err(CallError::Malformed(
            "\"arguments\" is not an object".into(),
        ));
    }
    let tool = tools
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| CallError::UnknownTool(name.clone()))?;
    let violations = tool.violations(&arguments);
    if !violations.is_empty() {
        return Err(CallError::Schema(violations));
    }
    Ok(ToolCall { name, arguments })
}

/// A call as Hermes-format models write it: compact JSON, `name` before `arguments`.
pub fn render_call(name: &str, arguments: &Value) -> String {
    format!(
        r#"{OPEN}{{"name":{},"arguments":{arguments}}}{CLOSE}"#,
        Value::from(name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calc() -> Vec<Tool> {
        vec![Tool::new(
            "calculator",
            "evaluates integer arithmetic",
            json!({"type": "object",
                   "properties": {"expression": {"type": "string", "maxLength": 16}},
                   "required": ["expression"], "additionalProperties": false}),
        )]
    }

    #[test]
    fn well_formed_calls_parse_in_order() {
        let text = r#"first <tool_call>{"name":"calculator","arguments":{"expression":"1+2"}}</tool_call>
            then <tool_call> {"name": "calculator", "arguments": {"expression": "3*4"}} </tool_call>"#;
        let calls = parse_calls(text, &calc());
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].as_ref().unwrap().arguments["expression"], "3*4");
        assert!(parse_calls("the answer is 3", &calc()).is_empty());
    }

    #[test]
    fn every_bad_call_is_an_error_the_policy_reads() {
        let tools = calc();
        let one = |body: &str| parse_calls(&format!("{OPEN}{body}{CLOSE}"), &tools).remove(0);
        assert!(matches!(one("{nope"), Err(CallError::Malformed(_))));
        assert!(matches!(one("[1]"), Err(CallError::Malformed(_))));
        assert!(matches!(
            one(r#"{"arguments":{}}"#),
            Err(CallError::Malformed(_))
        ));
        assert_eq!(
            one(r#"{"name":"shell","arguments":{}}"#),
            Err(CallError::UnknownTool("shell".into()))
        );
        // Missing field, wrong type, extra field, too long: each a schema violation.
        for args in [
            r#"{}"#,
            r#"{"expression":12}"#,
            r#"{"expression":"1","x":1}"#,
            r#"{"expression":"11111111111111111"}"#,
        ] {
            let r = one(&format!(r#"{{"name":"calculator","arguments":{args}}}"#));
            assert!(matches!(r, Err(CallError::Schema(_))), "{args}: {r:?}");
        }
        let unclosed = parse_calls(r#"<tool_call>{"name":"calculator""#, &tools);
        assert_eq!(unclosed, vec![Err(CallError::Unclosed)]);
    }

    #[test]
    fn each_check_needs_the_one_before() {
        let tools = calc();
        let check = |text: &str| CallCheck::of(&parse_calls(text, &tools).remove(0));
        let no = CallCheck::default();
        assert_eq!(check("<tool_call>{nope</tool_call>"), no);
        assert_eq!(check("<tool_call>{\"name\":\"calculator\""), no);
        let parsed = CallCheck { parsed: true, ..no };
        assert_eq!(
            check(r#"<tool_call>{"name":"x","arguments":{}}</tool_call>"#),
            parsed
        );
        let valid = check(&render_call("calculator", &json!({"expression": "1"})));
        assert_eq!(
            valid,
            CallCheck {
                valid: true,
                ..parsed
            }
        );
        assert!(valid.ran(true).executed && !valid.ran(false).executed);
        assert!(
            !parsed.ran(true).executed,
            "an invalid call never counts as executed"
        );
    }

    #[test]
    fn a_rendered_call_parses_back() {
        let text = render_call("calculator", &json!({"expression": "6/3"}));
        let calls = parse_calls(&text, &calc());
        assert_eq!(
            calls[0].as_ref().unwrap().arguments,
            json!({"expression": "6/3"})
        );
    }
}
