//! Small f64 statistics shared by the shaping stages (means, variances, input checks).

use crate::error::{Error, Result};

/// Mean of `values` in f64 (0 for an empty slice).
pub(crate) fn mean(values: &[f32]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64
}

/// Population variance (divides by n) around `m`.
pub(crate) fn pop_var(values: &[f32], m: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values
        .iter()
        .map(|&v| (f64::from(v) - m).powi(2))
        .sum::<f64>()
        / values.len() as f64
}

/// Unbiased variance (divides by n − 1) around `m`; `None` for fewer than 2 values.
pub(crate) fn unbiased_var(values: &[f64], m: f64) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    Some(values.iter().map(|&v| (v - m).powi(2)).sum::<f64>() / (values.len() as f64 - 1.0))
}

/// Fails with [`Error::MissingTensor`] when a stage needs an input the caller left empty, and
/// with [`Error::LengthMismatch`] when it does not hold `expected` entries.
pub(crate) fn need(
    name: &'static str,
    len: usize,
    expected: usize,
    method: &'static str,
) -> Result<()> {
    if len == 0 && expected > 0 {
        return Err(Error::MissingTensor {
            name,
            method,
            why: "set this field of StageInput (one entry per sequence or per prompt)",
        });
    }
    if len != expected {
        return Err(Error::LengthMismatch {
            name,
            expected,
            got: len,
        });
    }
    Ok(())
}

/// Fails with [`Error::NonFinite`] at the first NaN or infinity of `values`.
pub(crate) fn finite(field: &'static str, values: &[f32]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(Error::NonFinite {
            field,
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}
