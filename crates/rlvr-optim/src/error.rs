//! The crate's error type: bad optimizer configuration and unreadable optimizer state.

/// Errors of `rlvr-optim`. Every variant names the offending config field or input.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration field holds a value outside its valid range.
    #[error("invalid optimizer config: `{field}` = {value}: {reason}")]
    InvalidConfig {
        /// Dotted name of the field, e.g. `pion.promotion_steps`.
        field: &'static str,
        /// The offending value, rendered as text.
        value: String,
        /// What the valid range is.
        reason: &'static str,
    },
    /// Optimizer state bytes could not be written or read (burnpack record error).
    #[error("optimizer state {action} failed: {reason}")]
    State {
        /// `"save"` or `"load"`.
        action: &'static str,
        /// burn's message.
        reason: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Builds an [`Error::InvalidConfig`] for `field` holding `value`.
    pub(crate) fn config(
        field: &'static str,
        value: impl std::fmt::Display,
        reason: &'static str,
    ) -> Self {
        Self::InvalidConfig {
            field,
            value: value.to_string(),
            reason,
        }
    }
}
