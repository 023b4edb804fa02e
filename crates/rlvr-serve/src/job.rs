//! Running a validated [`Job`] on the engine: submission, admission, and (without streaming)
//! collecting every choice.

use rlvr_models::FinishReason;
use tokio::sync::mpsc;

use crate::api_error::ApiError;
use crate::engine::{Event, GenerationRequest};
use crate::logprobs::SampledToken;
use crate::request::Job;
use crate::state::AppState;
use crate::text::final_text;

/// A job the engine admitted.
pub(crate) struct Running {
    /// The weights version producing it.
    pub weights_version: u64,
    /// The engine's events for it (dropping this cancels the job).
    pub events: mpsc::UnboundedReceiver<Event>,
}

/// Submits `job` and waits until the engine admits it.
pub(crate) async fn start(state: &AppState, job: &Job) -> Result<Running, ApiError> {
    let (tx, mut events) = mpsc::unbounded_channel();
    state
        .engine
        .submit(GenerationRequest {
            prompt: job.prompt.clone(),
            n: job.n,
            params: job.params.clone(),
            events: tx,
        })
        .map_err(|_| ApiError::engine_stopped())?;
    match events.recv().await {
        Some(Event::Started { weights_version }) => Ok(Running {
            weights_version,
            events,
        }),
        _ => Err(ApiError::engine_stopped()),
    }
}

/// One finished choice.
#[derive(Debug, Clone)]
pub(crate) struct ChoiceOutput {
    pub tokens: Vec<SampledToken>,
    pub finish_reason: FinishReason,
    /// Decoded text, cut at the first stop string.
    pub text: String,
}

impl ChoiceOutput {
    pub fn token_ids(&self) -> Vec<u32> {
        self.tokens.iter().map(|t| t.token).collect()
    }
}

/// Waits for every choice of a running job.
pub(crate) async fn collect(
    state: &AppState,
    job: &Job,
    mut running: Running,
) -> Result<Vec<ChoiceOutput>, ApiError> {
    let mut tokens: Vec<Vec<SampledToken>> = vec![Vec::new(); job.n];
    let mut reasons: Vec<Option<FinishReason>> = vec![None; job.n];
    let mut open = job.n;
    while open > 0 {
        match running.events.recv().await {
            Some(Event::Token {
                choice,
                token,
                logprob,
                top,
            }) => tokens[choice].push(SampledToken {
                token,
                logprob,
                top,
            }),
            Some(Event::Finished { choice, reason }) => {
                reasons[choice] = Some(reason);
                open -= 1;
            }
            Some(Event::Started { .. }) => {}
            None => return Err(ApiError::engine_stopped()),
        }
    }
    Ok(tokens
        .into_iter()
        .zip(reasons)
        .map(|(tokens, reason)| {
            let ids: Vec<u32> = tokens.iter().map(|t| t.token).collect();
            ChoiceOutput {
                text: final_text(&state.tokenizer, &ids, &job.params.stop),
                tokens,
                finish_reason: reason.unwrap_or(FinishReason::Length),
            }
        })
        .collect())
}
