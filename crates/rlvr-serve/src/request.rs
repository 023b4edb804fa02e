//! Request validation: a parsed OpenAI request becomes a [`Job`] (prompt ids, sampling
//! settings, response options) or a 4xx [`ApiError`] naming the field.

use axum::http::StatusCode;
use rlvr_models::{ChatMessage, Sampler};
use serde_json::Value;

use crate::api_error::ApiError;
use crate::engine::SamplingParams;
use crate::openai_types::{ChatCompletionRequest, CompletionRequest, StreamOptions};
use crate::state::AppState;

/// Most alternatives per position (OpenAI's limit).
const MAX_TOP_LOGPROBS: u64 = 20;
/// Most stop strings per request.
const MAX_STOP_STRINGS: usize = 16;
/// `max_tokens` of a completions request that sets none (OpenAI's default).
const DEFAULT_COMPLETION_TOKENS: usize = 16;

/// A validated generation request.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub prompt: Vec<u32>,
    pub n: usize,
    pub params: SamplingParams,
    pub stream: bool,
    pub include_usage: bool,
    /// Report log-probs of the sampled tokens.
    pub logprobs: bool,
    pub return_token_ids: bool,
    pub tokens_as_ids: bool,
}

/// The knobs both endpoints share, before validation.
struct Knobs<'a> {
    model: Option<&'a str>,
    max_tokens: Option<u64>,
    /// The request's name for `max_tokens` (errors name it).
    max_tokens_field: &'static str,
    temperature: Option<f32>,
    top_p: Option<f32>,
    top_k: Option<i64>,
    n: Option<u64>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    stop: Option<&'a Value>,
    seed: Option<u64>,
    presence_penalty: Option<f32>,
    frequency_penalty: Option<f32>,
    return_token_ids: Option<bool>,
    return_tokens_as_token_ids: Option<bool>,
    ignore_eos: Option<bool>,
}

/// Validates a completions request.
pub(crate) fn completion_job(state: &AppState, r: &CompletionRequest) -> Result<Job, ApiError> {
    if r.echo == Some(true) {
        return Err(ApiError::invalid(
            "echo",
            "unsupported",
            "`echo` is not supported",
        ));
    }
    if r.best_of.is_some_and(|b| Some(b) != r.n.or(Some(1))) {
        return Err(ApiError::invalid(
            "best_of",
            "unsupported",
            "`best_of` is not supported (leave it unset or equal to `n`)",
        ));
    }
    let prompt = completion_prompt(state, &r.prompt)?;
    let top = match r.logprobs {
        Some(k) if k > MAX_TOP_LOGPROBS => {
            return Err(ApiError::invalid(
                "logprobs",
                "invalid_value",
                format!("`logprobs` must be in 0..={MAX_TOP_LOGPROBS}, got {k}"),
            ));
        }
        k => k,
    };
    let knobs = Knobs {
        model: r.model.as_deref(),
        max_tokens: r.max_tokens,
        max_tokens_field: "max_tokens",
        temperature: r.temperature,
        top_p: r.top_p,
        top_k: r.top_k,
        n: r.n,
        stream: r.stream,
        stream_options: r.stream_options,
        stop: r.stop.as_ref(),
        seed: r.seed,
        presence_penalty: r.presence_penalty,
        frequency_penalty: r.frequency_penalty,
        return_token_ids: r.return_token_ids,
        return_tokens_as_token_ids: r.return_tokens_as_token_ids,
        ignore_eos: r.ignore_eos,
    };
    build(
        state,
        knobs,
        ("prompt", prompt),
        top,
        Some(DEFAULT_COMPLETION_TOKENS),
    )
}

/// Validates a chat request (rendering the messages with the chat template).
pub(crate) fn chat_job(state: &AppState, r: &ChatCompletionRequest) -> Result<Job, ApiError> {
    if r.messages.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "invalid_value",
            "`messages` must not be empty",
        ));
    }
    let mut messages = Vec::with_capacity(r.messages.len());
    for (i, m) in r.messages.iter().enumerate() {
        messages.push(ChatMessage::new(&m.role, message_text(i, &m.content)?));
    }
    let text = state
        .tokenizer
        .apply_chat_template(&messages, r.add_generation_prompt.unwrap_or(true))
        .map_err(|e| ApiError::invalid("messages", "chat_template_error", e.to_string()))?;
    let prompt = encode(state, &text)?;
    let top = match (r.logprobs.unwrap_or(false), r.top_logprobs) {
        (_, Some(k)) if k > MAX_TOP_LOGPROBS => {
            return Err(ApiError::invalid(
                "top_logprobs",
                "invalid_value",
                format!("`top_logprobs` must be in 0..={MAX_TOP_LOGPROBS}, got {k}"),
            ));
        }
        (false, Some(k)) if k > 0 => {
            return Err(ApiError::invalid(
                "top_logprobs",
                "invalid_value",
                "`top_logprobs` needs `logprobs: true`",
            ));
        }
        (true, k) => Some(k.unwrap_or(0)),
        (false, _) => None,
    };
    let knobs = Knobs {
        model: r.model.as_deref(),
        max_tokens: r.max_completion_tokens.or(r.max_tokens),
        max_tokens_field: if r.max_completion_tokens.is_some() {
            "max_completion_tokens"
        } else {
            "max_tokens"
        },
        temperature: r.temperature,
        top_p: r.top_p,
        top_k: r.top_k,
        n: r.n,
        stream: r.stream,
        stream_options: r.stream_options,
        stop: r.stop.as_ref(),
        seed: r.seed,
        presence_penalty: r.presence_penalty,
        frequency_penalty: r.frequency_penalty,
        return_token_ids: r.return_token_ids,
        return_tokens_as_token_ids: r.return_tokens_as_token_ids,
        ignore_eos: r.ignore_eos,
    };
    build(state, knobs, ("messages", prompt), top, None)
}

/// Checks the shared knobs; `prompt` is the field the prompt came from and its ids;
/// `default_max_tokens: None` means "as many as fit".
fn build(
    state: &AppState,
    k: Knobs<'_>,
    (prompt_field, prompt): (&str, Vec<u32>),
    top_logprobs: Option<u64>,
    default_max_tokens: Option<usize>,
) -> Result<Job, ApiError> {
    if let Some(model) = k.model
        && model != state.config.served_model_name
    {
        return Err(ApiError::request(
            StatusCode::NOT_FOUND,
            "model_not_found",
            format!(
                "the model `{model}` does not exist; this server serves `{}`",
                state.config.served_model_name
            ),
        ));
    }
    for (name, value) in [
        ("presence_penalty", k.presence_penalty),
        ("frequency_penalty", k.frequency_penalty),
    ] {
        if value.is_some_and(|v| v != 0.0) {
            return Err(ApiError::invalid(
                name,
                "unsupported",
                format!("`{name}` is not supported (leave it unset or 0)"),
            ));
        }
    }
    let n = k.n.unwrap_or(1);
    if n == 0 || n > state.config.max_batch as u64 {
        return Err(ApiError::invalid(
            "n",
            "invalid_value",
            format!("`n` must be in 1..={}, got {n}", state.config.max_batch),
        ));
    }
    let temperature = k.temperature.unwrap_or(1.0);
    if !(temperature.is_finite() && temperature >= 0.0) {
        return Err(ApiError::invalid(
            "temperature",
            "invalid_value",
            format!("`temperature` must be a finite number >= 0, got {temperature}"),
        ));
    }
    let top_p = k.top_p.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(ApiError::invalid(
            "top_p",
            "invalid_value",
            format!("`top_p` must be in (0, 1], got {top_p}"),
        ));
    }
    let top_k = match k.top_k {
        None | Some(-1 | 0) => None,
        Some(x) if x > 0 => Some(x as usize),
        Some(x) => {
            return Err(ApiError::invalid(
                "top_k",
                "invalid_value",
                format!("`top_k` must be -1, 0 (off) or positive, got {x}"),
            ));
        }
    };
    if prompt.len() >= state.max_model_len {
        return Err(ApiError::invalid(
            prompt_field,
            "context_length_exceeded",
            format!(
                "the prompt ({} tokens) leaves no room in the context length {}",
                prompt.len(),
                state.max_model_len
            ),
        ));
    }
    let room = state.max_model_len - prompt.len();
    let limit = state.config.max_tokens_limit;
    let max_tokens = match (k.max_tokens, default_max_tokens) {
        (Some(m), _) => m,
        (None, Some(d)) => d as u64,
        (None, None) => room.min(limit) as u64,
    };
    if max_tokens == 0 {
        return Err(ApiError::invalid(
            k.max_tokens_field,
            "invalid_value",
            format!("`{}` must be at least 1", k.max_tokens_field),
        ));
    }
    if max_tokens > limit as u64 {
        return Err(ApiError::invalid(
            k.max_tokens_field,
            "invalid_value",
            format!(
                "`{}` is {max_tokens}, above this server's limit of {limit}",
                k.max_tokens_field
            ),
        ));
    }
    let max_tokens = max_tokens as usize;
    if prompt.len() + max_tokens > state.max_model_len {
        return Err(ApiError::invalid(
            k.max_tokens_field,
            "context_length_exceeded",
            format!(
                "prompt ({} tokens) + {} ({max_tokens}) exceeds the context length {}",
                prompt.len(),
                k.max_tokens_field,
                state.max_model_len
            ),
        ));
    }
    let stop = stop_strings(k.stop)?;
    Ok(Job {
        prompt,
        n: n as usize,
        params: SamplingParams {
            sampler: Sampler {
                temperature,
                top_k,
                top_p: (top_p < 1.0).then_some(top_p),
            },
            max_tokens,
            stop,
            seed: k.seed.unwrap_or_else(rand::random),
            top_logprobs: top_logprobs.unwrap_or(0) as usize,
            ignore_eos: k.ignore_eos.unwrap_or(false),
        },
        stream: k.stream.unwrap_or(false),
        include_usage: k.stream_options.is_some_and(|o| o.include_usage),
        logprobs: top_logprobs.is_some(),
        return_token_ids: k.return_token_ids.unwrap_or(false),
        tokens_as_ids: k.return_tokens_as_token_ids.unwrap_or(false),
    })
}

/// `prompt`: a non-empty string or a non-empty list of token ids below the vocabulary size.
fn completion_prompt(state: &AppState, prompt: &Value) -> Result<Vec<u32>, ApiError> {
    let bad = |message: String| ApiError::invalid("prompt", "invalid_value", message);
    let ids = match prompt {
        Value::String(text) => encode(state, text)?,
        Value::Array(items) if items.iter().all(Value::is_number) => {
            let mut ids = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item.as_u64() {
                    Some(id) if id < state.vocab_size as u64 => ids.push(id as u32),
                    _ => {
                        return Err(bad(format!(
                            "`prompt[{i}]` = {item} is not a token id in 0..{}",
                            state.vocab_size
                        )));
                    }
                }
            }
            ids
        }
        Value::Array(_) => {
            return Err(bad(
                "batched prompts are not supported: send one request per prompt (a string or a \
                 list of token ids)"
                    .into(),
            ));
        }
        other => {
            return Err(bad(format!(
                "`prompt` must be a string or a list of token ids, got {other}"
            )));
        }
    };
    if ids.is_empty() {
        return Err(bad("`prompt` is empty".into()));
    }
    Ok(ids)
}

fn encode(state: &AppState, text: &str) -> Result<Vec<u32>, ApiError> {
    let ids = state
        .tokenizer
        .encode(text)
        .map_err(|e| ApiError::invalid("prompt", "tokenizer_error", e.to_string()))?;
    if ids.is_empty() {
        return Err(ApiError::invalid(
            "prompt",
            "invalid_value",
            "the prompt encodes to no tokens",
        ));
    }
    Ok(ids)
}

/// A message's `content`: a string, or `[{"type": "text", "text": ...}, ...]` joined.
fn message_text(index: usize, content: &Value) -> Result<String, ApiError> {
    let param = format!("messages[{index}].content");
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut text = String::new();
            for (j, part) in parts.iter().enumerate() {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("text"), Some(Value::String(t))) => text.push_str(t),
                    _ => {
                        return Err(ApiError::invalid(
                            &format!("{param}[{j}]"),
                            "invalid_value",
                            format!("`{param}[{j}]` must be {{\"type\": \"text\", \"text\": ...}}"),
                        ));
                    }
                }
            }
            Ok(text)
        }
        other => Err(ApiError::invalid(
            &param,
            "invalid_value",
            format!("`{param}` must be a string or a list of text parts, got {other}"),
        )),
    }
}

/// `stop`: null, a string, or a list of strings.
fn stop_strings(stop: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let bad = || {
        ApiError::invalid(
            "stop",
            "invalid_value",
            format!("`stop` must be a string or a list of at most {MAX_STOP_STRINGS} strings"),
        )
    };
    let stops: Vec<String> = match stop {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad()),
    };
    if stops.len() > MAX_STOP_STRINGS {
        return Err(bad());
    }
    Ok(stops.into_iter().filter(|s| !s.is_empty()).collect())
}
