//! `POST /v1/chat/completions`: messages rendered with the tokenizer's chat template, then
//! continued `n` times.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use rlvr_models::{FinishReason, Tokenizer};

use crate::api_error::ApiError;
use crate::endpoint::{ResponseHeader, respond, run_job};
use crate::job::ChoiceOutput;
use crate::logprobs::{SampledToken, chat_logprobs};
use crate::openai_types::{
    ChatChoice, ChatChunkChoice, ChatCompletionChunk, ChatCompletionRequest,
    ChatCompletionResponse, ChatDelta, ChatMessageOut, Usage, finish_reason_name,
};
use crate::request::{Job, chat_job};
use crate::routes::parse_json;
use crate::state::AppState;
use crate::stream::Flavor;

/// The handler.
pub(crate) async fn chat_completions(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    respond(ROUTE, run(state, body)).await
}

const ROUTE: &str = "/v1/chat/completions";

async fn run(
    state: Arc<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: ChatCompletionRequest = parse_json(body)?;
    let job = chat_job(&state, &request)?;
    let tokenizer = &state.tokenizer;
    let flavor = |header| ChatChunks {
        tokenizer: tokenizer.clone(),
        header,
        prompt_ids: job.return_token_ids.then(|| job.prompt.clone()),
        job: job.clone(),
    };
    let body = |header: ResponseHeader, outputs: Vec<ChoiceOutput>| {
        let completion_tokens = outputs.iter().map(|o| o.tokens.len()).sum();
        let choices = outputs
            .into_iter()
            .enumerate()
            .map(|(index, o)| ChatChoice {
                index,
                logprobs: job
                    .logprobs
                    .then(|| chat_logprobs(tokenizer, &o.tokens, job.tokens_as_ids)),
                finish_reason: finish_reason_name(o.finish_reason),
                token_ids: job.return_token_ids.then(|| o.token_ids()),
                message: ChatMessageOut {
                    role: "assistant",
                    content: o.text,
                },
            })
            .collect();
        ChatCompletionResponse {
            id: header.id,
            object: "chat.completion",
            created: header.created,
            model: header.model,
            choices,
            usage: Usage::new(job.prompt.len(), completion_tokens),
            prompt_token_ids: job.return_token_ids.then(|| job.prompt.clone()),
            weights_version: header.weights_version,
        }
    };
    run_job(&state, &job, ROUTE, "chatcmpl", flavor, body).await
}

/// Stream chunks of the chat endpoint.
struct ChatChunks {
    tokenizer: Arc<Tokenizer>,
    job: Job,
    header: ResponseHeader,
    /// Sent (top level) in the first chunk, then `None`.
    prompt_ids: Option<Vec<u32>>,
}

impl ChatChunks {
    fn chunk(&mut self, choices: Vec<ChatChunkChoice>, usage: Option<Usage>) -> String {
        serde_json::to_string(&ChatCompletionChunk {
            id: self.header.id.clone(),
            object: "chat.completion.chunk",
            created: self.header.created,
            model: self.header.model.clone(),
            choices,
            usage,
            prompt_token_ids: self.prompt_ids.take(),
            weights_version: self.header.weights_version,
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
