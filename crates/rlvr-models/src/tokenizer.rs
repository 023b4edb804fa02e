//! Tokenizer: `tokenizer.json` through the `tokenizers` crate, chat templates from
//! `tokenizer_config.json` (or `chat_template.jinja`) rendered with `minijinja` the way
//! `transformers` renders them (jinja2 with `trim_blocks`, `lstrip_blocks`, `loop_controls`).

use std::path::Path;

use minijinja::value::{Kwargs, Value, ValueKind, from_args};
use minijinja::{Environment, ErrorKind};
use serde::{Deserialize, Serialize};

use crate::config::json_ids;
use crate::error::{Error, Result};

/// One chat turn: `role` is `"system"`, `"user"` or `"assistant"` (any string the template knows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Speaker.
    pub role: String,
    /// Text of the turn.
    pub content: String,
}

impl ChatMessage {
    /// A message with the given role and content.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// A HF tokenizer plus its chat template and special tokens.
#[derive(Clone)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    chat_template: Option<String>,
    /// `tokenizer_config.json` as read (written back by `save_to_dir`).
    config: serde_json::Map<String, serde_json::Value>,
    /// Extra end-of-sequence ids (from `generation_config.json`).
    extra_eos: Vec<u32>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("has_chat_template", &self.chat_template.is_some())
            .field("eos_token_ids", &self.eos_token_ids())
            .finish()
    }
}

const TOKENIZER_FILE: &str = "tokenizer.json";
const TOKENIZER_CONFIG_FILE: &str = "tokenizer_config.json";
const CHAT_TEMPLATE_FILE: &str = "chat_template.jinja";
const GENERATION_CONFIG_FILE: &str = "generation_config.json";

impl Tokenizer {
    /// Loads `tokenizer.json` (required), `tokenizer_config.json` (special tokens, chat
    /// template), `chat_template.jinja` (newer layout; wins over the config) and
    /// `generation_config.json` (extra `eos_token_id`s) from a HF directory.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] when `tokenizer.json` cannot be read, [`Error::Json`] /
    /// [`Error::Io`] for a malformed or unreadable optional file.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let path = dir.join(TOKENIZER_FILE);
        let inner = tokenizers::Tokenizer::from_file(&path).map_err(|e| Error::Tokenizer {
            path: Some(path.clone()),
            message: e.to_string(),
        })?;
        let config = match read_json(&dir.join(TOKENIZER_CONFIG_FILE))? {
            Some(serde_json::Value::Object(map)) => map,
            Some(_) => {
                return Err(Error::Tokenizer {
                    path: Some(dir.join(TOKENIZER_CONFIG_FILE)),
                    message: "not a JSON object".into(),
                });
            }
            None => serde_json::Map::new(),
        };
        let jinja = dir.join(CHAT_TEMPLATE_FILE);
        let chat_template = if jinja.exists() {
            Some(std::fs::read_to_string(&jinja).map_err(|e| Error::io(&jinja, e))?)
        } else {
            template_from_config(config.get("chat_template"))
        };
        let extra_eos = read_json(&dir.join(GENERATION_CONFIG_FILE))?
            .map(|g| json_ids(g.get("eos_token_id")))
            .unwrap_or_default();
        Ok(Self {
            inner,
            chat_template,
            config,
            extra_eos,
        })
    }

    /// Wraps an in-memory tokenizer; special tokens are then unknown until set with
    /// [`Tokenizer::with_special_token`].
    pub fn from_tokenizer(inner: tokenizers::Tokenizer, chat_template: Option<String>) -> Self {
        Self {
            inner,
            chat_template,
            config: serde_json::Map::new(),
            extra_eos: Vec::new(),
        }
    }

    /// Sets a special token by its `tokenizer_config.json` key (`"eos_token"`, `"bos_token"`,
    /// `"pad_token"`, ...), e.g. `with_special_token("eos_token", "<|im_end|>")`.
    pub fn with_special_token(mut self, key: &str, token: &str) -> Self {
        self.config.insert(key.to_owned(), token.into());
        self
    }

    /// The wrapped `tokenizers` tokenizer.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    /// The chat template source, if any.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    /// Vocabulary size including added tokens.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Token ids of `text`, without adding BOS/EOS (chat templates write those themselves);
    /// special tokens written in the text (`<|im_start|>`) become their ids.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] when encoding fails.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| Error::Tokenizer {
                path: None,
                message: e.to_string(),
            })?;
        Ok(enc.get_ids().to_vec())
    }

    /// The text of `ids`, special tokens included (so that decode∘encode is the identity).
    ///
    /// # Errors
    /// [`Error::Tokenizer`] when an id is out of range or decoding fails.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, false).map_err(|e| Error::Tokenizer {
            path: None,
            message: e.to_string(),
        })
    }

    /// The text of `ids` without special tokens (what a verifier should read).
    ///
    /// # Errors
    /// [`Error::Tokenizer`] when an id is out of range or decoding fails.
    pub fn decode_skip_special(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, true).map_err(|e| Error::Tokenizer {
            path: None,
            message: e.to_string(),
        })
    }

    /// The id of a special token named in `tokenizer_config.json` (`"eos_token"`, ...).
    pub fn special_token_id(&self, key: &str) -> Option<u32> {
        special_token_text(self.config.get(key)).and_then(|t| self.inner.token_to_id(&t))
    }

    /// End-of-sequence ids: `eos_token` of `tokenizer_config.json` plus the `eos_token_id`s of
    /// `generation_config.json`, deduplicated.
    pub fn eos_token_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self
            .special_token_id("eos_token")
            .into_iter()
            .chain(self.extra_eos.iter().copied())
            .collect();
        let mut seen = std::collections::HashSet::new();
        ids.retain(|x| seen.insert(*x));
        ids
    }

    /// The padding id (`pad_token`, else the first EOS id).
    pub fn pad_token_id(&self) -> Option<u32> {
        self.special_token_id("pad_token")
            .or_else(|| self.eos_token_ids().first().copied())
    }

    /// Renders `messages` with the chat template, as `transformers`' `apply_chat_template(...,
    /// tokenize=False)` does. The template sees `messages`, `add_generation_prompt` and every
    /// special token of `tokenizer_config.json` (`bos_token`, `eos_token`, ...); it may call
    /// `raise_exception(msg)`, `strftime_now(fmt)` and common Python string/dict methods
    /// (`strip`, `startswith`, `split`, `items`, `get`, ...).
    ///
    /// # Errors
    /// [`Error::ChatTemplate`] when there is no template, it does not parse, or it raises.
    pub fn apply_chat_template(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
    ) -> Result<String> {
        self.apply_chat_template_with_tools(messages, &[], add_generation_prompt)
    }

    /// [`Tokenizer::apply_chat_template`] with the tools the model may call, in the template's
    /// `tools` variable as `transformers`' `apply_chat_template(tools=...)` passes them (OpenAI
    /// function entries: `{"type": "function", "function": {name, description, parameters}}`);
    /// with no tools the variable is left undefined, as there. (A template's `tojson` writes
    /// their keys sorted, where Python keeps the caller's order.)
    ///
    /// # Errors
    /// As [`Tokenizer::apply_chat_template`].
    pub fn apply_chat_template_with_tools(
        &self,
        messages: &[ChatMessage],
        tools: &[serde_json::Value],
        add_generation_prompt: bool,
    ) -> Result<String> {
        let source = self
            .chat_template
            .as_deref()
            .ok_or_else(|| Error::ChatTemplate {
                message: "the tokenizer has no chat_template".into(),
            })?;
        let env = chat_environment();
        let template = env.template_from_str(source).map_err(template_error)?;
        let mut ctx = std::collections::BTreeMap::new();
        for key in [
            "bos_token",
            "eos_token",
            "pad_token",
            "unk_token",
            "sep_token",
            "cls_token",
            "mask_token",
        ] {
            if let Some(text) = special_token_text(self.config.get(key)) {
                ctx.insert(key.to_owned(), Value::from(text));
            }
        }
        ctx.insert("messages".into(), Value::from_serialize(messages));
        if !tools.is_empty() {
            ctx.insert("tools".into(), Value::from_serialize(tools));
        }
        ctx.insert(
            "add_generation_prompt".into(),
            Value::from(add_generation_prompt),
        );
        template.render(Value::from(ctx)).map_err(template_error)
    }

    /// Writes `tokenizer.json` and `tokenizer_config.json` (with `chat_template`) into `dir`,
    /// creating it if needed.
    ///
    /// # Errors
    /// [`Error::Io`] / [`Error::Tokenizer`] when a file cannot be written.
    pub fn save_to_dir(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(TOKENIZER_FILE);
        self.inner
            .save(&path, false)
            .map_err(|e| Error::Tokenizer {
                path: Some(path.clone()),
                message: e.to_string(),
            })?;
        let mut config = self.config.clone();
        if let Some(t) = &self.chat_template {
            config.insert("chat_template".into(), t.clone().into());
        }
        let path = dir.join(TOKENIZER_CONFIG_FILE);
        let text = serde_json::to_string_pretty(&config).map_err(|source| Error::Json {
            path: path.clone(),
            source,
        })?;
        std::fs::write(&path, text).map_err(|e| Error::io(&path, e))
    }
}

/// Parses an optional JSON file (`None` when it does not exist).
fn read_json(path: &Path) -> Result<Option<serde_json::Value>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| Error::Json {
            path: path.to_owned(),
            source,
        })
}

/// `chat_template` is a string, or a list of `{name, template}` of which `default` is used.
fn template_from_config(value: Option<&serde_json::Value>) -> Option<String> {
    match value? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(list) => list
            .iter()
            .find(|t| t.get("name").and_then(|n| n.as_str()) == Some("default"))
            .or_else(|| list.first())
            .and_then(|t| t.get("template")?.as_str().map(str::to_owned)),
        _ => None,
    }
}

/// A special token is a string or an `AddedToken` object `{"content": ..}`.
fn special_token_text(value: Option<&serde_json::Value>) -> Option<String> {
    match value? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(o) => o.get("content")?.as_str().map(str::to_owned),
        _ => None,
    }
}

fn template_error(e: minijinja::Error) -> Error {
    let line = e
        .line()
        .map(|l| format!(" (template line {l})"))
        .unwrap_or_default();
    Error::ChatTemplate {
        message: format!("{e}{line}"),
    }
}

/// The jinja2 environment `transformers` uses for chat templates, in minijinja.
fn chat_environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.add_function(
        "raise_exception",
        |msg: String| -> Result<Value, minijinja::Error> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
        },
    );
    env.add_function("strftime_now", |fmt: String| strftime_now(&fmt));
    env.add_filter(
        "tojson",
        |v: Value, kwargs: Kwargs| -> Result<String, minijinja::Error> {
            let indent: Option<usize> = kwargs.get("indent")?;
            kwargs.assert_all_used()?;
            let json = serde_json::to_value(&v)
                .map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
            Ok(py_json(&json, indent, 0))
        },
    );
    env.set_unknown_method_callback(py_method);
    env
}

/// Python's `json.dumps(v, ensure_ascii=False, indent=indent)` (separators `", "` / `": "`).
fn py_json(v: &serde_json::Value, indent: Option<usize>, depth: usize) -> String {
    let (open_nl, sep, close_nl) = match indent {
        Some(n) => (
            format!("\n{}", " ".repeat(n * (depth + 1))),
            format!(",\n{}", " ".repeat(n * (depth + 1))),
            format!("\n{}", " ".repeat(n * depth)),
        ),
        None => (String::new(), ", ".to_owned(), String::new()),
    };
    match v {
        serde_json::Value::Array(a) if !a.is_empty() => {
            let items: Vec<String> = a.iter().map(|x| py_json(x, indent, depth + 1)).collect();
            format!("[{open_nl}{}{close_nl}]", items.join(&sep))
        }
        serde_json::Value::Object(o) if !o.is_empty() => {
            let items: Vec<String> = o
                .iter()
                .map(|(k, x)| {
                    format!(
                        "{}: {}",
                        serde_json::Value::from(k.as_str()),
                        py_json(x, indent, depth + 1)
                    )
                })
                .collect();
            format!("{{{open_nl}{}{close_nl}}}", items.join(&sep))
        }
        other => other.to_string(),
    }
}

/// Python string and dict methods that HF chat templates call (a subset of minijinja-contrib's
/// `pycompat`): `strip lstrip rstrip startswith endswith split upper lower replace title
/// capitalize` on strings, `items keys values get` on maps.
fn py_method(
    state: &minijinja::State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, minijinja::Error> {
    let unknown = || Err(minijinja::Error::from(ErrorKind::UnknownMethod));
    match (value.kind(), value.as_str()) {
        (ValueKind::String, Some(s)) => {
            let chars = |c: Option<String>| {
                move |ch: char| {
                    c.as_deref()
                        .map_or(ch.is_whitespace(), |set| set.contains(ch))
                }
            };
            Ok(match method {
                "strip" => {
                    let (c,): (Option<String>,) = from_args(args)?;
                    Value::from(s.trim_matches(chars(c)))
                }
                "lstrip" => {
                    let (c,): (Option<String>,) = from_args(args)?;
                    Value::from(s.trim_start_matches(chars(c)))
                }
                "rstrip" => {
                    let (c,): (Option<String>,) = from_args(args)?;
                    Value::from(s.trim_end_matches(chars(c)))
                }
                "startswith" => {
                    let (p,): (String,) = from_args(args)?;
                    Value::from(s.starts_with(&p))
                }
                "endswith" => {
                    let (p,): (String,) = from_args(args)?;
                    Value::from(s.ends_with(&p))
                }
                "split" => {
                    let (sep, max): (Option<String>, Option<i64>) = from_args(args)?;
                    let max = max
                        .filter(|&m| m >= 0)
                        .map(|m| m as usize + 1)
                        .unwrap_or(usize::MAX);
                    let parts: Vec<Value> = match sep {
                        Some(sep) => s.splitn(max, sep.as_str()).map(Value::from).collect(),
                        None => s.split_whitespace().map(Value::from).collect(),
                    };
                    Value::from(parts)
                }
                "upper" => Value::from(s.to_uppercase()),
                "lower" => Value::from(s.to_lowercase()),
                "replace" => {
                    let (a, b): (String, String) = from_args(args)?;
                    Value::from(s.replace(&a, &b))
                }
                "title" | "capitalize" => {
                    state.apply_filter(method, std::slice::from_ref(value))?
                }
                _ => return unknown(),
            })
        }
        (ValueKind::Map, _) => match method {
            "items" => state.apply_filter("items", std::slice::from_ref(value)),
            "keys" => {
                let _: () = from_args(args)?;
                Ok(Value::from(value.try_iter()?.collect::<Vec<_>>()))
            }
            "values" => {
                let _: () = from_args(args)?;
                Ok(Value::from(
                    value
                        .try_iter()?
                        .map(|k| value.get_item(&k).unwrap_or_default())
                        .collect::<Vec<_>>(),
                ))
            }
            "get" => {
                let (key, default): (Value, Option<Value>) = from_args(args)?;
                let v = value.get_item(&key).unwrap_or_default();
                Ok(if v.is_undefined() {
                    default.unwrap_or_default()
                } else {
                    v
                })
            }
            _ => unknown(),
        },
        _ => unknown(),
    }
}

/// `strftime_now(fmt)` for the formats chat templates use (`%d %b %Y`, `%Y-%m-%d`, `%B`, ...),
/// in UTC, computed from the system clock.
fn strftime_now(fmt: &str) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let name = MONTHS[(month - 1) as usize];
    fmt.replace("%d", &format!("{day:02}"))
        .replace("%m", &format!("{month:02}"))
        .replace("%Y", &year.to_string())
        .replace("%B", name)
        .replace("%b", &name[..3])
}
