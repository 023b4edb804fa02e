//! Masked reductions on device and host-side metric reads.

use burn::tensor::{Bool, Tensor};

/// Σ m·x over all positions, as a one-element tensor.
pub fn masked_sum(x: Tensor<2>, mask: &Tensor<2>) -> Tensor<1> {
    (x * mask.clone()).sum()
}

/// Σ m·x / max(Σ m, 1): the mean over valid positions; 0 when no position is valid.
pub fn masked_mean(x: Tensor<2>, mask: &Tensor<2>) -> Tensor<1> {
    masked_sum(x, mask) / mask.clone().sum().clamp_min(1.0)
}

/// Reads a one-element tensor back to the host as f64 (for metrics).
pub(crate) fn scalar(x: Tensor<1>) -> f64 {
    f64::from(x.detach().into_scalar::<f32>())
}

/// Host-side mean of `x` over valid positions (detached).
pub(crate) fn mean_metric(x: &Tensor<2>, mask: &Tensor<2>) -> f64 {
    scalar(masked_mean(x.clone().detach(), mask))
}

/// Host-side fraction of valid positions where `flag` holds.
pub(crate) fn frac_metric(flag: &Tensor<2, Bool>, mask: &Tensor<2>) -> f64 {
    mean_metric(&flag.clone().float(), mask)
}

/// Host-side count of valid positions where `flag` holds.
pub(crate) fn count_metric(flag: &Tensor<2, Bool>, mask: &Tensor<2>) -> f64 {
    scalar(masked_sum(flag.clone().float(), mask))
}

/// Host-side (min, mean, max) of `x` over valid positions; zeros when none is valid.
pub(crate) fn min_mean_max(x: &Tensor<2>, mask: &Tensor<2>) -> (f64, f64, f64) {
    let xs = x
        .clone()
        .detach()
        .into_data()
        .try_to_vec::<f32>()
        .unwrap_or_default();
    let ms = mask
        .clone()
        .into_data()
        .try_to_vec::<f32>()
        .unwrap_or_default();
    let (mut lo, mut hi, mut sum, mut n) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0usize);
    for (&v, &m) in xs.iter().zip(&ms) {
        if m > 0.0 {
            let v = f64::from(v);
            lo = lo.min(v);
            hi = hi.max(v);
            sum += v;
            n += 1;
        }
    }
    if n == 0 {
        (0.0, 0.0, 0.0)
    } else {
        (lo, sum / n as f64, hi)
    }
}
