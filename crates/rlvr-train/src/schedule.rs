//! Learning-rate schedules.

/// Linear warm-up from `peak / warmup` to `peak` over `warmup` steps, then constant.
pub fn warmup_constant(step: usize, warmup: usize, peak: f64) -> f64 {
    if warmup == 0 || step >= warmup {
        peak
    } else {
        peak * (step + 1) as f64 / warmup as f64
    }
}

/// Linear warm-up over `warmup` steps, then cosine decay to `floor · peak` at `total`.
pub fn warmup_cosine(step: usize, warmup: usize, total: usize, peak: f64, floor: f64) -> f64 {
    if step < warmup {
        return warmup_constant(step, warmup, peak);
    }
    let span = total.saturating_sub(warmup).max(1) as f64;
    let progress = ((step - warmup) as f64 / span).min(1.0);
    let cosine = 0.5 * (1.0 + (std::f64::consts::PI * progress).cos());
    peak * (floor + (1.0 - floor) * cosine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_then_constant() {
        assert_eq!(warmup_constant(0, 4, 1.0), 0.25);
        assert_eq!(warmup_constant(3, 4, 1.0), 1.0);
        assert_eq!(warmup_constant(100, 4, 1.0), 1.0);
        assert_eq!(warmup_constant(0, 0, 2.0), 2.0);
    }

    #[test]
    fn cosine_reaches_floor() {
        // Halfway through the decay the cosine factor is exactly 1/2.
        assert!((warmup_cosine(60, 10, 110, 1.0, 0.0) - 0.5).abs() < 1e-12);
        assert!((warmup_cosine(110, 10, 110, 1.0, 0.1) - 0.1).abs() < 1e-12);
    }
}
