//! How far the sampler's log-probs (a server's) are from the trainer's on the same tokens:
//! the per-step `rollout/logp_mismatch_*`, `rollout/is_ratio_*` and `rollout/sampler_kl`.

use crate::metrics::Metrics;

/// Mismatch statistics over every response token of a batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogpMismatch {
    /// Mean of |sampler − trainer| log-prob.
    pub mean_abs: f64,
    /// Largest |sampler − trainer| log-prob.
    pub max_abs: f64,
    /// Mean of exp(trainer − sampler), the importance ratio π_trainer / π_sampler.
    pub is_ratio_mean: f64,
    /// Largest importance ratio.
    pub is_ratio_max: f64,
    /// Mean of sampler − trainer log-prob: the k1 estimate of KL(sampler ‖ trainer), since the
    /// tokens were drawn by the sampler.
    pub sampler_kl: f64,
}

impl LogpMismatch {
    /// The statistics of `sampler[i][k]` against `trainer[i][k]` (rows of equal lengths; an
    /// empty batch gives zero gaps and ratios of 1).
    ///
    /// # Panics
    /// If the two differ in shape.
    pub fn of(sampler: &[Vec<f32>], trainer: &[Vec<f32>]) -> Self {
        assert_eq!(sampler.len(), trainer.len(), "one row per sample");
        let (mut n, mut abs_sum, mut abs_max) = (0usize, 0f64, 0f64);
        let (mut ratio_sum, mut ratio_max, mut diff_sum) = (0f64, f64::NEG_INFINITY, 0f64);
        for (s_row, t_row) in sampler.iter().zip(trainer) {
            assert_eq!(s_row.len(), t_row.len(), "one log-prob per response token");
            for (&s, &t) in s_row.iter().zip(t_row) {
                let d = f64::from(s) - f64::from(t);
                let ratio = (-d).exp();
                n += 1;
                abs_sum += d.abs();
                abs_max = abs_max.max(d.abs());
                ratio_sum += ratio;
                ratio_max = ratio_max.max(ratio);
                diff_sum += d;
            }
        }
        if n == 0 {
            return Self {
                mean_abs: 0.0,
                max_abs: 0.0,
                is_ratio_mean: 1.0,
                is_ratio_max: 1.0,
                sampler_kl: 0.0,
            };
        }
        let n = n as f64;
        Self {
            mean_abs: abs_sum / n,
            max_abs: abs_max,
            is_ratio_mean: ratio_sum / n,
            is_ratio_max: ratio_max,
            sampler_kl: diff_sum / n,
        }
    }

    /// Adds the statistics to a step's metrics under `rollout/`.
    pub fn insert_into(&self, m: &mut Metrics) {
        m.insert("rollout/logp_mismatch_mean".into(), self.mean_abs);
        m.insert("rollout/logp_mismatch_max".into(), self.max_abs);
        m.insert("rollout/is_ratio_mean".into(), self.is_ratio_mean);
        m.insert("rollout/is_ratio_max".into(), self.is_ratio_max);
        m.insert("rollout/sampler_kl".into(), self.sampler_kl);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two tokens with sampler − trainer = +0.5 and −0.25 (ln-space), by hand:
    /// mean |Δ| = 0.375, max 0.5; ratios e^−0.5 = 0.60653, e^0.25 = 1.28403, mean 0.94528,
    /// max 1.28403; k1 = (0.5 − 0.25) / 2 = 0.125.
    #[test]
    fn statistics_match_a_hand_calculation() {
        let sampler = vec![vec![-1.0f32], vec![-2.25]];
        let trainer = vec![vec![-1.5f32], vec![-2.0]];
        let m = LogpMismatch::of(&sampler, &trainer);
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        close(m.mean_abs, 0.375);
        close(m.max_abs, 0.5);
        close(m.is_ratio_mean, (0.606_531 + 1.284_025) / 2.0);
        close(m.is_ratio_max, 1.284_025);
        close(m.sampler_kl, 0.125);
    }

    #[test]
    fn equal_log_probs_have_no_mismatch() {
        let rows = vec![vec![-0.1f32, -3.0], vec![-0.7]];
        let m = LogpMismatch::of(&rows, &rows);
        assert_eq!((m.mean_abs, m.max_abs, m.sampler_kl), (0.0, 0.0, 0.0));
        assert_eq!((m.is_ratio_mean, m.is_ratio_max), (1.0, 1.0));
    }
}
