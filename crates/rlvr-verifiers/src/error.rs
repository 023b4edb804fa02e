//! The crate's error type: failures of the verifiers themselves, never of the model's output.

use std::path::PathBuf;

/// What can go wrong in this crate.
///
/// Bad model output is never an error: it is a [`crate::Verdict`] with
/// [`crate::Outcome::Unparseable`] or a failing outcome. These variants are for bad configuration,
/// bad input files and a sandbox that cannot start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration field holds an invalid value.
    #[error("invalid config field `{field}`: {reason}")]
    InvalidConfig {
        /// The offending field, as written in the config (e.g. `code.timeout_s`).
        field: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A line of an input JSONL file could not be turned into a task.
    #[error("{path}:{line}: {reason}")]
    BadLine {
        /// The file being read.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        reason: String,
    },
    /// A reference record does not have the shape its verifier needs.
    #[error("reference does not fit verifier `{verifier}`: {reason}")]
    BadReference {
        /// The verifier kind (`math`, `code`, `rubric`).
        verifier: &'static str,
        /// What is missing or wrong.
        reason: String,
    },
    /// The sandbox could not start the interpreter.
    #[error("sandbox: {reason}")]
    Sandbox {
        /// What failed (with the OS error when there is one).
        reason: String,
    },
    /// An I/O error on a named file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
