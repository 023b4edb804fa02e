//! `POST /v1/chat/completions`: messages rendered with the tokenizer's chat template, then
//! continued `n` times.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use rlvr_models::{FinishReason, Tokenizer};

use crate::api_error::ApiError;
use crate::job::{collect, start};
use crate::logprobs::{SampledToken, chat_logprobs};
use crate::openai_types::{
    ChatChoice, ChatChunkChoice, ChatCompletionChunk, ChatCompletionRequest,
    ChatCompletionResponse, ChatDelta, ChatMessageOut, Usage, finish_reason_name,
};
use crate::request::{Job, chat_job};
use crate::routes::{parse_json, with_version_header};
use crate::state::{AppState, unix_now};
use crate::stream::{Flavor, StreamSetup, sse_response};

/// The handler.
pub(crate) async fn chat_completions(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match run(state, body).await {
        Ok(response) => response,
        Err(e) => {
            tracing::info!(status = %e.status, error = %e.message, "POST /v1/chat/completions refused");
            e.into_response()
        }
    }
}

async fn run(
    state: Arc<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: ChatCompletionRequest = parse_json(body)?;
    let job = chat_job(&state, &request)?;
    tracing::info!(
        prompt_tokens = job.prompt.len(),
        n = job.n,
        max_tokens = job.params.max_tokens,
        stream = job.stream,
        "POST /v1/chat/completions"
    );
    let running = start(&state, &job).await?;
    let version = running.weights_version;
    let id = state.response_id("chatcmpl");
    if job.stream {
        let flavor = ChatChunks {
            tokenizer: state.tokenizer.clone(),
            id,
            created: unix_now(),
            model: state.config.served_model_name.clone(),
            weights_version: version,
            prompt_ids: job.return_token_ids.then(|| job.prompt.clone()),
            job: job.clone(),
        };
        let setup = StreamSetup {
            n: job.n,
            stop: job.params.stop.clone(),
            include_usage: job.include_usage,
            prompt_tokens: job.prompt.len(),
        };
        return Ok(sse_response(
            state.tokenizer.clone(),
            setup,
            running,
            flavor,
        ));
    }
    let outputs = collect(&state, &job, running).await?;
    let completion_tokens = outputs.iter().map(|o| o.tokens.len()).sum();
    let choices = outputs
        .into_iter()
        .enumerate()
        .map(|(index, o)| ChatChoice {
            index,
            logprobs: job
                .logprobs
                .then(|| chat_logprobs(&state.tokenizer, &o.tokens, job.tokens_as_ids)),
            finish_reason: finish_reason_name(o.finish_reason),
            token_ids: job.return_token_ids.then(|| o.token_ids()),
            message: ChatMessageOut {
                role: "assistant",
                content: o.text,
            },
        })
        .collect();
    let response = ChatCompletionResponse {
        id,
        object: "chat.completion",
        created: unix_now(),
        model: state.config.served_model_name.clone(),
        choices,
        usage: Usage::new(job.prompt.len(), completion_tokens),
        prompt_token_ids: job.return_token_ids.then(|| job.prompt.clone()),
        weights_version: version,
    };
    Ok(with_version_header(Json(response).into_response(), version))
}

/// Stream chunks of the chat endpoint.
struct ChatChunks {
    tokenizer: Arc<Tokenizer>,
    job: Job,
    id: String,
    created: u64,
    model: String,
    weights_version: u64,
    /// Sent (top level) in the first chunk, then `None`.
    prompt_ids: Option<Vec<u32>>,
}

impl ChatChunks {
    fn chunk(&mut self, choices: Vec<ChatChunkChoice>, usage: Option<Usage>) -> String {
        serde_json::to_string(&ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk",
            created: self.created,
            model: self.model.clone(),
            choices,
            usage,
            prompt_token_ids: self.prompt_ids.take(),
            weights_version: self.weights_version,
        })
        .expect("serializable")
    }
}

impl Flavor for ChatChunks {
    fn opening(&mut self) -> Vec<String> {
        (0..self.job.n)
            .map(|index| {
                let choice = ChatChunkChoice {
                    index,
                    delta: ChatDelta {
                        role: Some("assistant"),
                        content: Some(String::new()),
                    },
                    logprobs: None,
                    finish_reason: None,
                    token_ids: None,
                };
                self.chunk(vec![choice], None)
            })
            .collect()
    }

    fn piece(
        &mut self,
        choice: usize,
        text: String,
        tokens: &[SampledToken],
        finish: Option<FinishReason>,
    ) -> String {
        let choice = ChatChunkChoice {
            index: choice,
            delta: ChatDelta {
                role: None,
                content: (!text.is_empty() || finish.is_none()).then_some(text),
            },
            logprobs: self
                .job
                .logprobs
                .then(|| chat_logprobs(&self.tokenizer, tokens, self.job.tokens_as_ids)),
            finish_reason: finish.map(finish_reason_name),
            token_ids: self
                .job
                .return_token_ids
                .then(|| tokens.iter().map(|t| t.token).collect()),
        };
        self.chunk(vec![choice], None)
    }

    fn usage(&mut self, usage: Usage) -> String {
        self.chunk(Vec::new(), Some(usage))
    }
}
