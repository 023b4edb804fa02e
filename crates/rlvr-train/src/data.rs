//! Datasets: JSONL files whose lines carry a prompt and the verifier's reference fields.
//!
//! A line is a JSON object with an optional `id`, either `prompt` (text) or `messages` (chat
//! turns `{role, content}`), and the fields of the verifier's reference (`answer` for math,
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
        let prompt = match obj.get("prompt") {
            None => None,
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(bad("`prompt` must be a string".into())),
        };
        let messages = match obj.get("messages") {
            None => None,
            Some(v) => Some(
                serde_json::from_value::<Vec<Message>>(v.clone())
                    .map_err(|e| bad(format!("`messages`: {e}")))?,
            ),
        };
        if prompt.is_none() && messages.is_none() {
            return Err(bad("needs `prompt` or `messages`".into()));
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
