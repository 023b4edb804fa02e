//! Which fields of a record are the prompt, the chat turns, the id and the gold answer
//! (`data.prompt_field`, `data.messages_field`, `data.id_field`, `data.answer_field`), and the
//! conversion of one record into an [`Example`]. JSONL lines and parquet rows both go through
//! here, so a field means the same in every format.
//!
//! A field name may be a dotted path into nested objects (`reward_model.ground_truth`, verl's
//! layout); a key that itself contains the dot is found first.

use rlvr_verifiers::Kind;
use serde_json::Value;

use super::template::render_prompt_template;
use super::{Example, Message};
use crate::config::DataSection;

/// The fields a plain-text prompt is read from when `data.prompt_field` is empty, in order:
/// ours, then GSM8K's and MATH's names, so the benchmark files load as they are.
pub const PROMPT_FIELDS: [&str; 3] = ["prompt", "question", "problem"];

/// The fields an id is read from when `data.id_field` is empty (ours, then HumanEval/MBPP's).
pub const ID_FIELDS: [&str; 2] = ["id", "task_id"];

/// The record field a verifier of `kind` reads its reference from, which `data.answer_field`
/// is copied to: `answer` (math, and the verifiers that read the whole record), `tests` (code),
/// `rubric` (rubric).
pub fn reference_field(kind: Kind) -> &'static str {
    match kind {
        Kind::Code => "tests",
        Kind::Rubric => "rubric",
        _ => "answer",
    }
}

/// The field mapping of a dataset: where each part of an [`Example`] is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    /// The plain-text prompt (empty: the first of [`PROMPT_FIELDS`] present).
    pub prompt: String,
    /// The chat turns (`[{role, content}]`).
    pub messages: String,
    /// The id (empty: the first of [`ID_FIELDS`] present, else `<file stem>:<line or row>`).
    pub id: String,
    /// The gold answer, copied to `answer_to` in the record (empty: the record as it is).
    pub answer: String,
    /// Where the gold answer goes: the field the verifier reads ([`reference_field`]).
    pub answer_to: String,
    /// A Jinja template that writes the text prompt from the record (`data.prompt_template`;
    /// empty: the prompt field as it is). When set, it replaces the prompt and the chat turns.
    pub template: String,
}

impl Default for Fields {
    /// The unmapped layout: `prompt`/`question`/`problem`, `messages`, `id`/`task_id`, and the
    /// verifier's fields as they are.
    fn default() -> Self {
        Self {
            prompt: String::new(),
            messages: "messages".into(),
            id: String::new(),
            answer: String::new(),
            answer_to: "answer".into(),
            template: String::new(),
        }
    }
}

impl Fields {
    /// The mapping of a `[data]` section, for a verifier of `kind`.
    pub fn new(data: &DataSection, kind: Kind) -> Self {
        Self {
            prompt: data.prompt_field.clone(),
            messages: data.messages_field.clone(),
            id: data.id_field.clone(),
            answer: data.answer_field.clone(),
            answer_to: reference_field(kind).into(),
            template: data.prompt_template.clone(),
        }
    }

    /// Turns one record into an example; `fallback_id` is used when the record has no id.
    ///
    /// # Errors
    /// A message naming the field: the record is not an object, a prompt or id that is not a
    /// string, malformed chat turns, no prompt at all, or a mapped field that is absent.
    pub fn example(&self, mut record: Value, fallback_id: String) -> Result<Example, String> {
        if !record.is_object() {
            return Err("expected a JSON object".into());
        }
        let id = self.read_id(&record)?.unwrap_or(fallback_id);
        let (prompt, messages) = if self.template.is_empty() {
            let messages = match present(&record, &self.messages) {
                None => None,
                Some(v) => Some(serde_json::from_value::<Vec<Message>>(v.clone()).map_err(
                    |e| format!("`{}` (chat turns {{role, content}}): {e}", self.messages),
                )?),
            };
            (self.read_prompt(&record, messages.is_some())?, messages)
        } else {
            (Some(render_prompt_template(&self.template, &record)?), None)
        };
        if !self.answer.is_empty() {
            let answer = present(&record, &self.answer).cloned().ok_or_else(|| {
                format!("no `{}` (data.answer_field), or it is null", self.answer)
            })?;
            record
                .as_object_mut()
                .expect("checked above")
                .insert(self.answer_to.clone(), answer);
        }
        Ok(Example {
            id,
            prompt,
            messages,
            record,
        })
    }

    fn read_id(&self, record: &Value) -> Result<Option<String>, String> {
        let found = if self.id.is_empty() {
            ID_FIELDS.iter().find_map(|f| present(record, f))
        } else {
            Some(
                present(record, &self.id)
                    .ok_or_else(|| format!("no `{}` (data.id_field), or it is null", self.id))?,
            )
        };
        Ok(match found {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v @ Value::Number(_)) => Some(v.to_string()),
            Some(v) => {
                return Err(format!(
                    "the id must be a string or a number, not {}",
                    type_name(v)
                ));
            }
        })
    }

    fn read_prompt(&self, record: &Value, has_messages: bool) -> Result<Option<String>, String> {
        let (field, value) = if self.prompt.is_empty() {
            // The chat field may be called `prompt` (verl): it is not a text prompt then.
            let mut candidates = PROMPT_FIELDS.iter().filter(|f| **f != self.messages);
            match candidates.find_map(|f| present(record, f).map(|v| (*f, v))) {
                Some(found) => found,
                None if has_messages => return Ok(None),
                None => {
                    let nulls: Vec<&str> = PROMPT_FIELDS
                        .iter()
                        .copied()
                        .filter(|f| lookup(record, f).is_some_and(Value::is_null))
                        .collect();
                    return Err(if nulls.is_empty() {
                        format!(
                            "needs `prompt` (or `question`, `problem`) or `{}`; set \
                             data.prompt_field to the prompt's field",
                            self.messages
                        )
                    } else {
                        format!(
                            "`{}` is null, and there is no `{}`",
                            nulls.join("`, `"),
                            self.messages
                        )
                    });
                }
            }
        } else {
            match lookup(record, &self.prompt) {
                Some(v) if !v.is_null() => (self.prompt.as_str(), v),
                _ if has_messages => return Ok(None),
                Some(_) => {
                    return Err(format!(
                        "`{}` (data.prompt_field) is null, and there is no `{}`",
                        self.prompt, self.messages
                    ));
                }
                None => {
                    return Err(format!(
                        "no `{}` (data.prompt_field) and no `{}`",
                        self.prompt, self.messages
                    ));
                }
            }
        };
        match value {
            Value::String(s) => Ok(Some(s.clone())),
            Value::Array(_) => Err(format!(
                "`{field}` must be a string, not a list (chat turns go in data.messages_field)"
            )),
            v => Err(format!("`{field}` must be a string, not {}", type_name(v))),
        }
    }
}

/// The value at `path` (a key, else a dotted path into nested objects), if any.
pub fn lookup<'a>(record: &'a Value, path: &str) -> Option<&'a Value> {
    if let Some(v) = record.get(path) {
        return Some(v);
    }
    if !path.contains('.') {
        return None;
    }
    path.split('.').try_fold(record, |v, key| v.get(key))
}

/// [`lookup`], with a null counted as absent (a parquet column holds a null where a JSONL line
/// would leave the field out).
fn present<'a>(record: &'a Value, path: &str) -> Option<&'a Value> {
    lookup(record, path).filter(|v| !v.is_null())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn mapped(prompt: &str, messages: &str, id: &str, answer: &str) -> Fields {
        Fields {
            prompt: prompt.into(),
            messages: messages.into(),
            id: id.into(),
            answer: answer.into(),
            answer_to: "answer".into(),
            template: String::new(),
        }
    }

    #[test]
    fn dotted_paths_reach_nested_fields_and_a_dotted_key_wins() {
        let r = json!({"a": {"b": {"c": 1}}, "a.b": 2});
        assert_eq!(lookup(&r, "a.b.c"), Some(&json!(1)));
        assert_eq!(lookup(&r, "a.b"), Some(&json!(2)));
        assert_eq!(lookup(&r, "a.x"), None);
        assert_eq!(lookup(&r, "x"), None);
    }

    #[test]
    fn a_mapping_reads_the_named_fields_and_copies_the_answer() {
        let f = mapped("q", "turns", "uid", "reward_model.ground_truth");
        let r = json!({"uid": 7, "q": "1+1=", "prompt": "ignored",
                       "reward_model": {"ground_truth": "2"}, "answer": "stale"});
        let ex = f.example(r, "fallback".into()).unwrap();
        assert_eq!(ex.id, "7");
        assert_eq!(ex.prompt.as_deref(), Some("1+1="));
        assert_eq!(ex.messages, None);
        assert_eq!(ex.record["answer"], "2");
        assert_eq!(ex.record["reward_model"]["ground_truth"], "2");
    }

    #[test]
    fn the_chat_field_may_be_named_prompt() {
        // verl's layout: `prompt` holds the chat turns.
        let f = mapped("", "prompt", "", "");
        let r = json!({"prompt": [{"role": "user", "content": "hi"}], "answer": "3"});
        let ex = f.example(r, "d:1".into()).unwrap();
        assert_eq!(ex.prompt, None);
        assert_eq!(ex.messages.unwrap()[0].content, "hi");
        assert_eq!(ex.id, "d:1");
    }

    #[test]
    fn missing_null_and_mistyped_fields_name_the_field() {
        let f = Fields::default();
        let err = |f: &Fields, r: Value| f.example(r, String::new()).unwrap_err();
        assert!(err(&f, json!({"prompt": null, "answer": "1"})).contains("`prompt` is null"));
        assert!(err(&f, json!({"answer": "1"})).contains("data.prompt_field"));
        assert!(err(&f, json!({"prompt": 3})).contains("`prompt` must be a string, not a number"));
        assert!(err(&f, json!({"prompt": ["x"]})).contains("data.messages_field"));
        assert!(err(&f, json!({"prompt": "x", "id": [1]})).contains("id must be"));
        assert!(err(&f, json!({"messages": "x"})).contains("`messages`"));
        assert!(err(&f, json!([1, 2])).contains("JSON object"));
        let m = mapped("q", "messages", "uid", "sol");
        assert!(err(&m, json!({"uid": "a", "sol": "1"})).contains("`q` (data.prompt_field)"));
        assert!(err(&m, json!({"q": "x", "sol": "1"})).contains("`uid` (data.id_field)"));
        assert!(
            err(&m, json!({"uid": "a", "q": "x", "sol": null}))
                .contains("`sol` (data.answer_field)")
        );
    }

    #[test]
    fn unmapped_prompts_follow_the_benchmark_names_in_order() {
        let f = Fields::default();
        let p = |r: Value| f.example(r, String::new()).unwrap().prompt.unwrap();
        assert_eq!(p(json!({"question": "Q", "problem": "P"})), "Q");
        assert_eq!(p(json!({"problem": "P"})), "P");
        assert_eq!(p(json!({"prompt": "A", "question": "B"})), "A");
        // A null prompt column next to a filled `question` (a parquet file with both columns).
        assert_eq!(p(json!({"prompt": null, "question": "B"})), "B");
    }

    #[test]
    fn the_answer_goes_where_the_verifier_reads() {
        assert_eq!(reference_field(Kind::Math), "answer");
        assert_eq!(reference_field(Kind::Code), "tests");
        assert_eq!(reference_field(Kind::Rubric), "rubric");
    }
}
