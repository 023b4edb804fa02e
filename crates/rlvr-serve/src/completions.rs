//! `POST /v1/completions`: a prompt (text or token ids) continued `n` times.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use rlvr_models::{FinishReason, Tokenizer};

use crate::api_error::ApiError;
use crate::endpoint::{ResponseHeader, respond, run_job};
use crate::job::ChoiceOutput;
use crate::logprobs::{SampledToken, completion_logprobs};
use crate::openai_types::{
    CompletionChoice, CompletionRequest, CompletionResponse, Usage, finish_reason_name,
};
use crate::request::{Job, completion_job};
use crate::routes::parse_json;
use crate::state::AppState;
use crate::stream::Flavor;

/// The handler.
pub(crate) async fn completions(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    respond(ROUTE, run(state, body)).await
}

const ROUTE: &str = "/v1/completions";

async fn run(
    state: Arc<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: CompletionRequest = parse_json(body)?;
    let job = completion_job(&state, &request)?;
    let tokenizer = &state.tokenizer;
    let flavor = |header| CompletionChunks {
        tokenizer: tokenizer.clone(),
        header,
        prompt_ids: job.return_token_ids.then(|| job.prompt.clone()),
        first: vec![true; job.n],
        offsets: vec![0; job.n],
        job: job.clone(),
    };
    let body = |header: ResponseHeader, outputs: Vec<ChoiceOutput>| {
        let completion_tokens = outputs.iter().map(|o| o.tokens.len()).sum();
        let choices = outputs
            .into_iter()
            .enumerate()
            .map(|(index, o)| CompletionChoice {
                index,
                logprobs: job.logprobs.then(|| {
                    completion_logprobs(
                        tokenizer,
                        &o.tokens,
                        job.params.top_logprobs,
                        job.tokens_as_ids,
                        0,
                    )
                }),
                finish_reason: Some(finish_reason_name(o.finish_reason)),
                prompt_token_ids: job.return_token_ids.then(|| job.prompt.clone()),
                token_ids: job.return_token_ids.then(|| o.token_ids()),
                text: o.text,
            })
            .collect();
        CompletionResponse {
            id: header.id,
            object: "text_completion",
            created: header.created,
            model: header.model,
            choices,
            usage: Some(Usage::new(job.prompt.len(), completion_tokens)),
            weights_version: header.weights_version,
        }
    };
    run_job(&state, &job, ROUTE, "cmpl", flavor, body).await
}

/// Stream chunks of the completions endpoint.
struct CompletionChunks {
    tokenizer: Arc<Tokenizer>,
    job: Job,
    header: ResponseHeader,
    prompt_ids: Option<Vec<u32>>,
    /// Whether a choice has sent nothing yet (it then carries `prompt_token_ids`).
    first: Vec<bool>,
    /// Characters of each choice's log-prob tokens so far (`text_offset`).
    offsets: Vec<usize>,
}

impl CompletionChunks {
    fn chunk(&self, choices: Vec<CompletionChoice>, usage: Option<Usage>) -> String {
        serde_json::to_string(&CompletionResponse {
            id: self.header.id.clone(),
            object: "text_completion",
            created: self.header.created,
            model: self.header.model.clone(),
            choices,
            usage,
            weights_version: self.header.weights_version,
        })
        .expect("serializable")
    }
}

impl Flavor for CompletionChunks {
    fn opening(&mut self) -> Vec<String> {
        Vec::new()
    }

    fn piece(
        &mut self,
        choice: usize,
        text: String,
        tokens: &[SampledToken],
        finish: Option<FinishReason>,
    ) -> String {
        let logprobs = self.job.logprobs.then(|| {
            let block = completion_logprobs(
                &self.tokenizer,
                tokens,
                self.job.params.top_logprobs,
                self.job.tokens_as_ids,
                self.offsets[choice],
            );
            self.offsets[choice] += block
                .tokens
                .iter()
                .map(|t| t.chars().count())
                .sum::<usize>();
            block
        });
        let first = std::mem::replace(&mut self.first[choice], false);
        let c = CompletionChoice {
            index: choice,
            text,
            logprobs,
            finish_reason: finish.map(finish_reason_name),
            prompt_token_ids: self.prompt_ids.clone().filter(|_| first),
            token_ids: self
                .job
                .return_token_ids
                .then(|| tokens.iter().map(|t| t.token).collect()),
        };
        self.chunk(vec![c], None)
    }

    fn usage(&mut self, usage: Usage) -> String {
        self.chunk(Vec::new(), Some(usage))
    }
}
