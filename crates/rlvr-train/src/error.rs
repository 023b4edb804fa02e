//! The training crate's error type.

use std::path::{Path, PathBuf};

/// Everything that can go wrong in a run that is the user's to fix (config, data, files).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is invalid.
    #[error("config: {0}")]
    Config(String),
    /// A dataset line could not be used.
    #[error("{path}:{line}: {message}")]
    BadLine {
        /// The dataset file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A dataset row (parquet) could not be used.
    #[error("{path}: row {row} (from 0): {message}")]
    BadRow {
        /// The dataset file.
        path: PathBuf,
        /// 0-based row number, as `datasets` and pandas count rows.
        row: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The model crate failed (checkpoint, tokenizer).
    #[error(transparent)]
    Model(#[from] rlvr_models::Error),
    /// The optimizer crate failed.
    #[error(transparent)]
    Optim(#[from] rlvr_optim::Error),
    /// The objective crate failed.
    #[error(transparent)]
    Objective(#[from] rlvr_objectives::Error),
    /// The verifier crate failed.
    #[error(transparent)]
    Verifier(#[from] rlvr_verifiers::Error),
    /// A checkpoint or run directory is not usable.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// The remote rollout engine failed: an endpoint unreachable after the retries, an error
    /// answer, a malformed body, or weights of the wrong version.
    #[error("rollout engine: {endpoint}: {message}")]
    Engine {
        /// The endpoint (`http://HOST:PORT`).
        endpoint: String,
        /// What went wrong.
        message: String,
    },
    /// An environment could not start an episode on an example (a field it needs is missing
    /// or malformed).
    #[error("environment: example {example}: {message}")]
    Environment {
        /// The example's id.
        example: String,
        /// What is wrong with it.
        message: String,
    },
    /// A TensorBoard event file could not be read.
    #[error("{path}: record at byte {offset}: {message}")]
    EventFile {
        /// The event file.
        path: PathBuf,
        /// Byte offset of the record.
        offset: usize,
        /// What is wrong with it.
        message: String,
    },
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Result with the training crate's error.
pub type Result<T> = std::result::Result<T, Error>;
