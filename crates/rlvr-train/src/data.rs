//! Datasets: JSONL files whose lines carry a prompt and the verifier's reference fields.
//!
//! A line is a JSON object with an optional `id`, either `prompt` (text; GSM8K's `question` and
//! MATH's `problem` are read too) or `messages` (chat turns `{role, content}`), and the fields of the verifier's reference (`answer` for math,
//! `tests`/`test` for code, `rubric` for rubrics; see `rlvr-verifiers`). A malformed line is an
//! error naming the file and the line.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One chat turn.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

/// One training or evaluation example.
#[derive(Debug, Clone)]
pub struct Example {
    /// The line's `id`, or `<file stem>:<line>` when absent.
    pub id: String,
    /// The prompt as plain text (`prompt`), if given.
    pub prompt: Option<String>,
    /// The prompt as chat turns (`messages`), if given.
    pub messages: Option<Vec<Message>>,
    /// The whole line, from which the verifier takes its reference fields.
    pub record: serde_json::Value,
}

/// The fields a plain-text prompt is read from, in order: ours, then GSM8K's and MATH's names,
/// so the benchmark files load as they are.
const PROMPT_FIELDS: [&str; 3] = ["prompt", "question", "problem"];

/// Reads a JSONL dataset. Blank lines are skipped.
pub fn load_jsonl(path: &Path) -> Result<Vec<Example>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| Error::BadLine {
            path: path.to_path_buf(),
            line: i + 1,
            message,
        };
        let record: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        let obj = record
            .as_object()
            .ok_or_else(|| bad("expected a JSON object".into()))?;
        let id = match obj.get("id").or_else(|| obj.get("task_id")) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => format!("{stem}:{}", i + 1),
        };
        let prompt_field = PROMPT_FIELDS.iter().find(|f| obj.contains_key(**f));
        let prompt = match prompt_field.map(|f| (f, &obj[*f])) {
            None => None,
            Some((_, serde_json::Value::String(s))) => Some(s.clone()),
            Some((f, _)) => return Err(bad(format!("`{f}` must be a string"))),
        };
        let messages = match obj.get("messages") {
            None => None,
            Some(v) => Some(
                serde_json::from_value::<Vec<Message>>(v.clone())
                    .map_err(|e| bad(format!("`messages`: {e}")))?,
            ),
        };
        if prompt.is_none() && messages.is_none() {
            return Err(bad(
                "needs `prompt` (or `question`, `problem`) or `messages`".into(),
            ));
        }
        out.push(Example {
            id,
            prompt,
            messages,
            record,
        });
    }
    if out.is_empty() {
        return Err(Error::BadLine {
            path: path.to_path_buf(),
            line: 0,
            message: "no examples".into(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Vec<Example>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, text).unwrap();
        load_jsonl(&path)
    }

    #[test]
    fn reads_prompts_messages_and_ids() {
        let ex = load(
            "{\"id\":\"a\",\"prompt\":\"1+1=\",\"answer\":\"2\"}\n\n\
             {\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"answer\":\"3\"}\n",
        )
        .unwrap();
        assert_eq!(ex.len(), 2);
        assert_eq!(ex[0].id, "a");
        assert_eq!(ex[1].id, "d:3");
        assert_eq!(ex[1].messages.as_ref().unwrap()[0].content, "hi");
        assert_eq!(ex[0].record["answer"], "2");
    }

    #[test]
    fn benchmark_prompt_fields_are_read() {
        let ex = load(
            "{\"question\":\"Q?\",\"answer\":\"x\\n#### 4\"}\n\
             {\"problem\":\"P?\",\"answer\":\"5\"}\n\
             {\"prompt\":\"A\",\"question\":\"B\",\"answer\":\"6\"}\n",
        )
        .unwrap();
        let prompts: Vec<_> = ex.iter().map(|e| e.prompt.as_deref().unwrap()).collect();
        assert_eq!(prompts, ["Q?", "P?", "A"]);
        let err = load("{\"question\": 3}\n").unwrap_err().to_string();
        assert!(
            err.contains("d.jsonl:1") && err.contains("`question`"),
            "{err}"
        );
    }

    #[test]
    fn malformed_line_names_file_and_line() {
        let err = load("{\"prompt\":\"x\"}\n{\"prompt\": 3}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("d.jsonl:2") && err.contains("prompt"), "{err}");
        let err = load("{\"prompt\":\"x\"}\nnot json\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("d.jsonl:2") && err.contains("JSON"), "{err}");
        let err = load("{\"answer\":\"x\"}\n").unwrap_err().to_string();
        assert!(err.contains("d.jsonl:1"), "{err}");
    }
}
