//! The server: a model, its tokenizer and the engine thread behind an axum router.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use burn::module::Module;
use burn::tensor::Device;
use rlvr_models::{CausalLm, ModelConfig, Tokenizer, load_pretrained};
use tokio::net::TcpListener;

use crate::config::ServerConfig;
use crate::engine::{EngineConfig, EngineHandle, EngineStats};
use crate::error::{Error, Result};
use crate::routes::router;
use crate::state::AppState;

/// An OpenAI-compatible server over one model; see the crate docs for the endpoints.
#[derive(Debug, Clone)]
pub struct Server {
    state: Arc<AppState>,
}

impl Server {
    /// Loads a HuggingFace directory (weights, `config.json`, tokenizer files) onto `device` and
    /// starts the engine.
    ///
    /// # Errors
    /// [`Error::Model`] when the directory does not load, [`Error::Config`] for bad settings.
    pub fn from_dir(dir: &Path, config: ServerConfig, device: &Device) -> Result<Self> {
        let model_error = |source| Error::Model {
            dir: dir.to_path_buf(),
            source,
        };
        let (model, model_config) = load_pretrained(dir, device).map_err(model_error)?;
        let tokenizer = Tokenizer::from_dir(dir).map_err(model_error)?;
        Self::new(model, &model_config, tokenizer, config)
    }

    /// Starts the engine on `model` (run as `model.valid()`); `model_config` gives the context
    /// length and extra EOS ids. Swapped-in weights are loaded onto `model`'s device.
    ///
    /// # Errors
    /// [`Error::Config`] for bad settings.
    pub fn new(
        model: CausalLm,
        model_config: &ModelConfig,
        tokenizer: Tokenizer,
        config: ServerConfig,
    ) -> Result<Self> {
        config.validate()?;
        let mut stop_token_ids = tokenizer.eos_token_ids();
        for id in model_config.eos_token_ids() {
            if !stop_token_ids.contains(&id) {
                stop_token_ids.push(id);
            }
        }
        let engine_config = EngineConfig {
            max_batch: config.max_batch,
            stop_token_ids,
            pad_token_id: tokenizer.pad_token_id().unwrap_or(0),
        };
        let device = model.device();
        let vocab_size = model.vocab_size();
        let tokenizer = Arc::new(tokenizer);
        let engine = EngineHandle::spawn(model.valid(), tokenizer.clone(), engine_config);
        let state = AppState::new(
            engine,
            tokenizer,
            config,
            vocab_size,
            model_config.max_position_embeddings,
            device,
        );
        Ok(Self {
            state: Arc::new(state),
        })
    }

    /// The axum router (all endpoints), e.g. to nest into another app.
    pub fn router(&self) -> Router {
        router(self.state.clone())
    }

    /// Rows decoding, requests queued, weights version, peak batch and KV cache size.
    pub fn stats(&self) -> EngineStats {
        self.state.engine.stats()
    }

    /// The settings the server runs with.
    pub fn config(&self) -> &ServerConfig {
        &self.state.config
    }

    /// Serves HTTP on `listener` until `shutdown` completes (then finishes open requests).
    ///
    /// # Errors
    /// [`Error::Io`] when serving fails.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let app = self.router();
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(Error::Io)
    }
}
