//! Server-sent events: a running job's engine events become `data: {chunk}` lines, ended by
//! `data: [DONE]`. The endpoint decides the chunk shape ([`Flavor`]); this file decides when
//! chunks are sent. Dropping the response stream (the client went away) drops the event
//! receiver, which makes the engine free the job's batch rows.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use rlvr_models::{FinishReason, Tokenizer};
use tokio::sync::mpsc;

use crate::engine::Event;
use crate::job::Running;
use crate::logprobs::SampledToken;
use crate::openai_types::Usage;
use crate::routes::with_version_header;
use crate::text::TextAssembler;

/// The chunk shapes of one endpoint (each chunk serialized to its JSON text).
pub(crate) trait Flavor: Send + 'static {
    /// Chunks sent before any token (chat: each choice's role).
    fn opening(&mut self) -> Vec<String>;
    /// A chunk with new `text` and `tokens` of `choice`; `finish` in its last chunk.
    fn piece(
        &mut self,
        choice: usize,
        text: String,
        tokens: &[SampledToken],
        finish: Option<FinishReason>,
    ) -> String;
    /// The optional last chunk: no choices, the usage.
    fn usage(&mut self, usage: Usage) -> String;
}

struct StreamState<F> {
    events: mpsc::UnboundedReceiver<Event>,
    flavor: F,
    tokenizer: Arc<Tokenizer>,
    texts: Vec<TextAssembler>,
    open: usize,
    pending: VecDeque<SseEvent>,
    include_usage: bool,
    prompt_tokens: usize,
    completion_tokens: usize,
    done: bool,
}

/// Options of a stream besides its chunk shape.
pub(crate) struct StreamSetup {
    pub n: usize,
    pub stop: Vec<String>,
    pub include_usage: bool,
    pub prompt_tokens: usize,
}

/// The SSE response of a running job.
pub(crate) fn sse_response<F: Flavor>(
    tokenizer: Arc<Tokenizer>,
    setup: StreamSetup,
    running: Running,
    mut flavor: F,
) -> Response {
    let pending = flavor.opening().into_iter().map(data).collect();
    let state = StreamState {
        events: running.events,
        flavor,
        tokenizer,
        texts: vec![TextAssembler::new(&setup.stop); setup.n],
        open: setup.n,
        pending,
        include_usage: setup.include_usage,
        prompt_tokens: setup.prompt_tokens,
        completion_tokens: 0,
        done: false,
    };
    let stream = futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(event) = s.pending.pop_front() {
                return Some((Ok::<_, Infallible>(event), s));
            }
            if s.done {
                return None;
            }
            if s.open == 0 {
                if s.include_usage {
                    let usage = Usage::new(s.prompt_tokens, s.completion_tokens);
                    let chunk = s.flavor.usage(usage);
                    s.pending.push_back(data(chunk));
                }
                s.pending.push_back(SseEvent::default().data("[DONE]"));
                s.done = true;
                continue;
            }
            match s.events.recv().await {
                Some(Event::Token {
                    choice,
                    token,
                    logprob,
                    top,
                }) => {
                    s.completion_tokens += 1;
                    let text = s.texts[choice].push(&s.tokenizer, token);
                    let sampled = SampledToken {
                        token,
                        logprob,
                        top,
                    };
                    let chunk = s.flavor.piece(choice, text, &[sampled], None);
                    s.pending.push_back(data(chunk));
                }
                Some(Event::Finished { choice, reason }) => {
                    s.open -= 1;
                    let text = s.texts[choice].finish(&s.tokenizer);
                    let chunk = s.flavor.piece(choice, text, &[], Some(reason));
                    s.pending.push_back(data(chunk));
                }
                Some(Event::Started { .. }) => {}
                // The engine stopped: end the stream without [DONE], so the client sees an
                // incomplete stream rather than a silently short one.
                None => s.done = true,
            }
        }
    });
    with_version_header(Sse::new(stream).into_response(), running.weights_version)
}

fn data(chunk: String) -> SseEvent {
    SseEvent::default().data(chunk)
}
