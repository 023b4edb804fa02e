//! What every handler shares.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use burn::tensor::Device;
use rlvr_models::Tokenizer;

use crate::config::ServerConfig;
use crate::engine::EngineHandle;

/// Shared state of the HTTP handlers.
#[derive(Debug)]
pub(crate) struct AppState {
    pub engine: EngineHandle,
    pub tokenizer: Arc<Tokenizer>,
    pub config: ServerConfig,
    /// Vocabulary size of the served model (a swapped-in model must match it).
    pub vocab_size: usize,
    /// Context length: prompt plus generated tokens must fit.
    pub max_model_len: usize,
    /// Where swapped-in weights are loaded.
    pub device: Device,
    /// Unix seconds at start.
    pub created: u64,
    next_id: AtomicU64,
}

impl AppState {
    pub fn new(
        engine: EngineHandle,
        tokenizer: Arc<Tokenizer>,
        config: ServerConfig,
        vocab_size: usize,
        max_model_len: usize,
        device: Device,
    ) -> Self {
        Self {
            engine,
            tokenizer,
            config,
            vocab_size,
            max_model_len,
            device,
            created: unix_now(),
            next_id: AtomicU64::new(0),
        }
    }

    /// A fresh response id, `<prefix>-<hex>`.
    pub fn response_id(&self, prefix: &str) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        format!(
            "{prefix}-{:016x}",
            rlvr_models::splitmix64(self.created ^ (n << 20))
        )
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
