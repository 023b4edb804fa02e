//! An OpenAI-compatible inference server over the `rlvr-models` decoder, for sampling
//! rollouts from a policy while it trains.
//!
//! - `POST /v1/completions`, `POST /v1/chat/completions`: `n`, `temperature` (0 = greedy),
//!   `top_p`, `top_k`, `max_tokens`, `stop`, `seed`, log-probs, SSE streaming, and vLLM's
//!   `return_token_ids` / `return_tokens_as_token_ids`.
//! - `GET /v1/models`, `GET /health`.
//! - `POST /update_weights_from_disk {"model_path": DIR}` (SGLang's shape): new weights, served
//!   once the running batch has drained; every response names its `weights_version` (a body
//!   field and the `x-weights-version` header).
//!
//! One engine thread owns the model and runs continuous batching
//! ([`rlvr_models::DecodeBatch`]): requests join the decode batch between steps and leave it
//! when they finish or their client disconnects. Choice `i` of a request with seed `s` samples
//! from `row_seed(s, i)`, as [`rlvr_models::generate`] does for prompt `i`, so a seeded request
//! gives the same tokens alone or batched with others.
//!
//! ```no_run
//! use burn::tensor::Device;
//! use rlvr_serve::{Server, ServerConfig};
//!
//! # async fn run() -> rlvr_serve::Result<()> {
//! let dir = std::path::Path::new("my-model");
//! let server = Server::from_dir(dir, ServerConfig::new("my-model"), &Device::flex())?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
//! server.serve(listener, std::future::pending()).await
//! # }
//! ```
#![warn(missing_docs)]

mod api_error;
mod background;
mod chat;
mod completions;
mod config;
mod endpoint;
mod engine;
mod error;
mod job;
mod logprobs;
pub mod openai_types;
mod request;
mod routes;
mod server;
mod state;
mod stream;
mod text;

pub use api_error::ApiError;
pub use background::BackgroundServer;
pub use config::ServerConfig;
pub use engine::{
    EngineConfig, EngineHandle, EngineStats, EngineStopped, Event, GenerationRequest,
    SamplingParams,
};
pub use error::{Error, Result};
pub use routes::WEIGHTS_VERSION_HEADER;
pub use server::Server;
pub use text::{TextAssembler, final_text, token_string};
