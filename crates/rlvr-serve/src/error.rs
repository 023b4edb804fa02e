//! The library's error type: what can go wrong while starting a server.

use std::path::PathBuf;

/// Errors of [`Server`](crate::Server) construction and serving.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The model directory could not be loaded (config, weights or tokenizer).
    #[error("loading the model from {dir}: {source}")]
    Model {
        /// The directory.
        dir: PathBuf,
        /// What `rlvr-models` reported.
        source: rlvr_models::Error,
    },
    /// A setting of [`ServerConfig`](crate::ServerConfig) is out of range.
    #[error("invalid server setting `{field}`: {message}")]
    Config {
        /// The setting's name.
        field: &'static str,
        /// Why it is refused.
        message: String,
    },
    /// Binding or serving the socket failed.
    #[error("serving HTTP: {0}")]
    Io(#[from] std::io::Error),
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
