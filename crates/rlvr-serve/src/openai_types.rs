//! The JSON bodies of the OpenAI API (completions, chat completions, models) plus the vLLM /
//! SGLang extension fields this server supports. Unknown request fields are ignored.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /v1/completions` request.
#[derive(Debug, Clone, Deserialize)]
pub struct CompletionRequest {
    /// Must equal the served model name when given.
    pub model: Option<String>,
    /// A string, or a list of token ids.
    pub prompt: Value,
    /// Tokens to generate (default 16).
    pub max_tokens: Option<u64>,
    /// Softmax temperature (default 1; 0 = greedy).
    pub temperature: Option<f32>,
    /// Nucleus mass in (0, 1] (default 1).
    pub top_p: Option<f32>,
    /// Keep the k most likely tokens (vLLM extension; -1 or 0: off).
    pub top_k: Option<i64>,
    /// Choices per prompt (default 1).
    pub n: Option<u64>,
    /// Server-sent events instead of one JSON body.
    pub stream: Option<bool>,
    /// `{"include_usage": true}`: a last chunk with `usage`.
    pub stream_options: Option<StreamOptions>,
    /// A stop string or a list of them.
    pub stop: Option<Value>,
    /// Sampling seed (default: a fresh random one).
    pub seed: Option<u64>,
    /// Return log-probs of the sampled tokens and this many alternatives (0..=20).
    pub logprobs: Option<u64>,
    /// Unsupported unless false.
    pub echo: Option<bool>,
    /// Unsupported unless equal to `n`.
    pub best_of: Option<u64>,
    /// Unsupported unless 0.
    pub presence_penalty: Option<f32>,
    /// Unsupported unless 0.
    pub frequency_penalty: Option<f32>,
    /// vLLM: add `prompt_token_ids` and `token_ids` to every choice.
    pub return_token_ids: Option<bool>,
    /// vLLM: name log-prob tokens `token_id:<id>` instead of their text.
    pub return_tokens_as_token_ids: Option<bool>,
    /// vLLM: keep generating after EOS tokens (only `max_tokens` and `stop` end a choice).
    pub ignore_eos: Option<bool>,
}

/// `POST /v1/chat/completions` request.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatCompletionRequest {
    /// Must equal the served model name when given.
    pub model: Option<String>,
    /// The conversation, rendered with the tokenizer's chat template.
    pub messages: Vec<ChatMessageIn>,
    /// Tokens to generate (default: as many as the limit and context allow).
    pub max_tokens: Option<u64>,
    /// Newer name of `max_tokens` (wins when both are given).
    pub max_completion_tokens: Option<u64>,
    /// Softmax temperature (default 1; 0 = greedy).
    pub temperature: Option<f32>,
    /// Nucleus mass in (0, 1] (default 1).
    pub top_p: Option<f32>,
    /// Keep the k most likely tokens (vLLM extension; -1 or 0: off).
    pub top_k: Option<i64>,
    /// Choices (default 1).
    pub n: Option<u64>,
    /// Server-sent events instead of one JSON body.
    pub stream: Option<bool>,
    /// `{"include_usage": true}`: a last chunk with `usage`.
    pub stream_options: Option<StreamOptions>,
    /// A stop string or a list of them.
    pub stop: Option<Value>,
    /// Sampling seed (default: a fresh random one).
    pub seed: Option<u64>,
    /// Return log-probs of the sampled tokens.
    pub logprobs: Option<bool>,
    /// Alternatives per position (0..=20; needs `logprobs`).
    pub top_logprobs: Option<u64>,
    /// Unsupported unless 0.
    pub presence_penalty: Option<f32>,
    /// Unsupported unless 0.
    pub frequency_penalty: Option<f32>,
    /// Append the assistant header after the messages (default true).
    pub add_generation_prompt: Option<bool>,
    /// vLLM: add `prompt_token_ids` (top level) and `token_ids` (per choice).
    pub return_token_ids: Option<bool>,
    /// vLLM: name log-prob tokens `token_id:<id>` instead of their text.
    pub return_tokens_as_token_ids: Option<bool>,
    /// vLLM: keep generating after EOS tokens (only `max_tokens` and `stop` end a choice).
    pub ignore_eos: Option<bool>,
}

/// One chat message of a request: `content` is a string or a list of `{"type": "text", "text"}`
/// parts.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatMessageIn {
    /// `system`, `user`, `assistant`, ...
    pub role: String,
    /// The text, or text parts.
    pub content: Value,
}

/// `stream_options` of a request.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct StreamOptions {
    /// Send a last chunk with `usage` and no choices.
    #[serde(default)]
    pub include_usage: bool,
}

/// Token counts of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (once, whatever `n`).
    pub prompt_tokens: usize,
    /// Generated tokens over all choices.
    pub completion_tokens: usize,
    /// The sum.
    pub total_tokens: usize,
}

impl Usage {
    /// Usage of a prompt of `prompt` tokens and `completion` generated tokens.
    pub fn new(prompt: usize, completion: usize) -> Self {
        Self {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
        }
    }
}

/// A completions response, or (with `usage` absent) one streamed chunk.
#[derive(Debug, Clone, Serialize)]
pub struct CompletionResponse {
    /// `cmpl-...`, shared by the chunks of a stream.
    pub id: String,
    /// `"text_completion"`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// The served model name.
    pub model: String,
    /// One per choice (a chunk may hold one choice or none).
    pub choices: Vec<CompletionChoice>,
    /// Token counts (absent in stream chunks but the optional last one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The weights version that produced the response.
    pub weights_version: u64,
}

/// One completions choice.
#[derive(Debug, Clone, Serialize)]
pub struct CompletionChoice {
    /// Choice index.
    pub index: usize,
    /// Generated text (a stream chunk: the new piece).
    pub text: String,
    /// Log-probs when requested, else null.
    pub logprobs: Option<CompletionLogprobs>,
    /// `"stop"`, `"length"`, or null while streaming.
    pub finish_reason: Option<&'static str>,
    /// With `return_token_ids`: the prompt ids (in a stream: in the choice's first chunk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_token_ids: Option<Vec<u32>>,
    /// With `return_token_ids`: the generated ids (in a stream: the chunk's new ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Vec<u32>>,
}

/// The legacy completions log-prob block.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CompletionLogprobs {
    /// Token strings.
    pub tokens: Vec<String>,
    /// Log-prob of each sampled token.
    pub token_logprobs: Vec<f32>,
    /// Per position, the requested number of alternatives (`{token: logprob}`); null for 0.
    pub top_logprobs: Option<Vec<serde_json::Map<String, Value>>>,
    /// Character offset of each token in the text.
    pub text_offset: Vec<usize>,
}

/// A chat completions response.
#[derive(Debug, Clone, Serialize)]
pub struct ChatCompletionResponse {
    /// `chatcmpl-...`.
    pub id: String,
    /// `"chat.completion"`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// The served model name.
    pub model: String,
    /// One per choice.
    pub choices: Vec<ChatChoice>,
    /// Token counts.
    pub usage: Usage,
    /// With `return_token_ids`: the rendered prompt's ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_token_ids: Option<Vec<u32>>,
    /// The weights version that produced the response.
    pub weights_version: u64,
}

/// One chat choice.
#[derive(Debug, Clone, Serialize)]
pub struct ChatChoice {
    /// Choice index.
    pub index: usize,
    /// The assistant message.
    pub message: ChatMessageOut,
    /// Log-probs when requested, else null.
    pub logprobs: Option<ChatLogprobs>,
    /// `"stop"` or `"length"`.
    pub finish_reason: &'static str,
    /// With `return_token_ids`: the generated ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Vec<u32>>,
}

/// The assistant message of a chat choice.
#[derive(Debug, Clone, Serialize)]
pub struct ChatMessageOut {
    /// `"assistant"`.
    pub role: &'static str,
    /// Generated text.
    pub content: String,
}

/// Chat log-probs: one entry per generated token.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ChatLogprobs {
    /// Entries in order.
    pub content: Vec<ChatLogprob>,
}

/// One chat log-prob entry.
#[derive(Debug, Clone, Serialize)]
pub struct ChatLogprob {
    /// Token string.
    pub token: String,
    /// Its log-prob.
    pub logprob: f32,
    /// UTF-8 bytes of `token`.
    pub bytes: Vec<u8>,
    /// Alternatives, most likely first (empty unless `top_logprobs` > 0).
    pub top_logprobs: Vec<ChatTopLogprob>,
}

/// One alternative of a chat log-prob entry.
#[derive(Debug, Clone, Serialize)]
pub struct ChatTopLogprob {
    /// Token string.
    pub token: String,
    /// Its log-prob.
    pub logprob: f32,
    /// UTF-8 bytes of `token`.
    pub bytes: Vec<u8>,
}

/// One streamed chat chunk.
#[derive(Debug, Clone, Serialize)]
pub struct ChatCompletionChunk {
    /// `chatcmpl-...`, shared by the chunks of a stream.
    pub id: String,
    /// `"chat.completion.chunk"`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// The served model name.
    pub model: String,
    /// Zero or one choice.
    pub choices: Vec<ChatChunkChoice>,
    /// Only in the optional last chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// With `return_token_ids`: the prompt ids, in the first chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_token_ids: Option<Vec<u32>>,
    /// The weights version that produced the stream.
    pub weights_version: u64,
}

/// One choice of a chat chunk.
#[derive(Debug, Clone, Serialize)]
pub struct ChatChunkChoice {
    /// Choice index.
    pub index: usize,
    /// What is new.
    pub delta: ChatDelta,
    /// Log-probs of the chunk's tokens when requested, else null.
    pub logprobs: Option<ChatLogprobs>,
    /// Set in the choice's last chunk.
    pub finish_reason: Option<&'static str>,
    /// With `return_token_ids`: the chunk's new ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Vec<u32>>,
}

/// The new part of a streamed chat message.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ChatDelta {
    /// `"assistant"` in a choice's first chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// New text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// `GET /v1/models` response.
#[derive(Debug, Clone, Serialize)]
pub struct ModelList {
    /// `"list"`.
    pub object: &'static str,
    /// The one served model.
    pub data: Vec<ModelCard>,
    /// The weights version being served.
    pub weights_version: u64,
}

/// One model of `GET /v1/models`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelCard {
    /// The served model name.
    pub id: String,
    /// `"model"`.
    pub object: &'static str,
    /// Unix seconds at server start.
    pub created: u64,
    /// `"rlvr-rs"`.
    pub owned_by: &'static str,
    /// Context length (`max_position_embeddings`).
    pub max_model_len: usize,
}

/// `POST /update_weights_from_disk` request (SGLang's shape).
#[derive(Debug, Clone, Deserialize)]
pub struct UpdateWeightsRequest {
    /// A HuggingFace model directory.
    pub model_path: String,
}

/// `POST /update_weights_from_disk` response.
#[derive(Debug, Clone, Serialize)]
pub struct UpdateWeightsResponse {
    /// Whether the new weights are being served.
    pub success: bool,
    /// What happened.
    pub message: String,
    /// The version now served.
    pub weights_version: u64,
}

/// Maps a finish reason to its OpenAI name.
pub fn finish_reason_name(reason: rlvr_models::FinishReason) -> &'static str {
    match reason {
        rlvr_models::FinishReason::Stop => "stop",
        rlvr_models::FinishReason::Length => "length",
    }
}
