//! The crate's error type: every variant names the offending field, tensor or group.

/// What can go wrong when building a batch, estimating advantages or computing a loss.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tensor of the batch does not have the shape of `logp`.
    #[error("tensor `{name}` has shape {got:?}, expected {expected:?}")]
    ShapeMismatch {
        /// The tensor's field name in [`crate::PolicyBatch`].
        name: &'static str,
        /// The shape it should have.
        expected: Vec<usize>,
        /// The shape it has.
        got: Vec<usize>,
    },
    /// An objective needs a tensor the batch does not carry.
    #[error("objective `{method}` needs `{name}` in the batch ({why})")]
    MissingTensor {
        /// The tensor's field name in [`crate::PolicyBatch`].
        name: &'static str,
        /// The objective or knob that needs it.
        method: &'static str,
        /// What to change so that it is present.
        why: &'static str,
    },
    /// A configuration value is out of its valid range.
    #[error("objective config field `{field}` = {value}: {reason}")]
    InvalidConfig {
        /// The field, as spelled in TOML.
        field: &'static str,
        /// Its value, printed.
        value: String,
        /// The valid range.
        reason: &'static str,
    },
    /// Group-relative advantages need at least two samples per group.
    #[error(
        "group_size = {group_size}: group-relative advantages need at least 2 samples per prompt"
    )]
    GroupTooSmall {
        /// The group size that was passed.
        group_size: usize,
    },
    /// The rewards do not split into whole groups.
    #[error("{len} rewards do not split into groups of {group_size}")]
    RaggedGroups {
        /// Number of rewards.
        len: usize,
        /// The group size.
        group_size: usize,
    },
    /// A host-side input holds NaN or infinity.
    #[error("`{field}`[{index}] = {value} is not finite")]
    NonFinite {
        /// The input's name.
        field: &'static str,
        /// The position of the first bad value.
        index: usize,
        /// The value.
        value: f32,
    },
    /// Two host-side inputs that must have one entry per sequence have different lengths.
    #[error("`{name}` has {got} entries, expected {expected} (one per sequence)")]
    LengthMismatch {
        /// The input's name.
        name: &'static str,
        /// Entries expected.
        expected: usize,
        /// Entries given.
        got: usize,
    },
    /// A host-side input of the advantage shaping stages is malformed at one position.
    #[error("`{field}`[{index}]: {reason}")]
    BadInput {
        /// The input's name (a field of `shaping::StageInput`).
        field: &'static str,
        /// The sequence or group index where it is wrong.
        index: usize,
        /// What is wrong.
        reason: String,
    },
}

/// Result with the crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Fails with [`Error::InvalidConfig`] unless `ok`.
pub(crate) fn ensure(
    ok: bool,
    field: &'static str,
    value: impl ToString,
    reason: &'static str,
) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidConfig {
            field,
            value: value.to_string(),
            reason,
        })
    }
}
