//! What the two generation endpoints (`/v1/completions`, `/v1/chat/completions`) share: refusing
//! with a logged error, running a parsed job, and answering it either as one JSON body or as an
//! SSE stream. Each endpoint supplies only its request parsing, its chunk shape ([`Flavor`]) and
//! its final response body.

use std::future::Future;
use std::sync::Arc;

use axum::Json;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::api_error::ApiError;
use crate::job::{ChoiceOutput, collect, start};
use crate::request::Job;
use crate::routes::with_version_header;
use crate::state::{AppState, unix_now};
use crate::stream::{Flavor, StreamSetup, sse_response};

/// The fields every response of one request repeats (each stream chunk and the final body).
#[derive(Debug, Clone)]
pub(crate) struct ResponseHeader {
    /// `cmpl-…` / `chatcmpl-…`.
    pub id: String,
    /// Unix seconds at the start of the request.
    pub created: u64,
    /// The served model name.
    pub model: String,
    /// The weights version that produced the answer.
    pub weights_version: u64,
}

/// Awaits an endpoint's work; a refusal is logged with the route and turned into its response.
pub(crate) async fn respond(
    route: &'static str,
    work: impl Future<Output = Result<Response, ApiError>>,
) -> Response {
    match work.await {
        Ok(response) => response,
        Err(e) => {
            tracing::info!(status = %e.status, error = %e.message, "POST {route} refused");
            e.into_response()
        }
    }
}

/// Runs `job` on the engine. With `stream`, answers with SSE chunks shaped by the flavor that
/// `flavor` builds; otherwise waits for every choice and answers with the body `body` builds,
/// with the weights version also in a header.
///
/// # Errors
/// The engine refusing the job (queue full, shutting down) or failing while it runs.
pub(crate) async fn run_job<F: Flavor, B: Serialize>(
    state: &Arc<AppState>,
    job: &Job,
    route: &'static str,
    id_prefix: &str,
    flavor: impl FnOnce(ResponseHeader) -> F,
    body: impl FnOnce(ResponseHeader, Vec<ChoiceOutput>) -> B,
) -> Result<Response, ApiError> {
    tracing::info!(
        prompt_tokens = job.prompt.len(),
        n = job.n,
        max_tokens = job.params.max_tokens,
        stream = job.stream,
        "POST {route}"
    );
    let running = start(state, job).await?;
    let header = ResponseHeader {
        id: state.response_id(id_prefix),
        created: unix_now(),
        model: state.config.served_model_name.clone(),
        weights_version: running.weights_version,
    };
    if job.stream {
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
            flavor(header),
        ));
    }
    let outputs = collect(state, job, running).await?;
    let version = header.weights_version;
    Ok(with_version_header(
        Json(body(header, outputs)).into_response(),
        version,
    ))
}
