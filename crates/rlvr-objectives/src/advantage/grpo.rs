//! Group-normalised advantages: GRPO (std), Dr. GRPO (mean only) and batch-std (spec §1.2).

use super::{all_equal, mean};

/// Bessel-corrected (unbiased) standard deviation, as in verl and TRL (spec §1.2).
fn unbiased_std(values: &[f32], mean: f64) -> f64 {
    let ss: f64 = values.iter().map(|&r| (f64::from(r) - mean).powi(2)).sum();
    (ss / (values.len() as f64 - 1.0).max(1.0)).sqrt()
}

/// GRPO (DeepSeekMath, arXiv 2402.03300, §4.1.2): Â_i = (r_i − mean_g)/(std_g + eps), with the
/// unbiased std. All-equal groups give exactly 0.
pub fn group_std_advantages(rewards: &[f32], group_size: usize, eps: f64) -> Vec<f32> {
    rewards
        .chunks(group_size)
        .flat_map(|g| {
            let m = mean(g);
            let s = unbiased_std(g, m);
            let zero = all_equal(g);
            g.iter().map(move |&r| {
                if zero {
                    0.0
                } else {
                    ((f64::from(r) - m) / (s + eps)) as f32
                }
            })
        })
        .collect()
}

/// Dr. GRPO (arXiv 2503.20783, §3.2): Â_i = r_i − mean_g.
pub fn group_mean_advantages(rewards: &[f32], group_size: usize) -> Vec<f32> {
    rewards
        .chunks(group_size)
        .flat_map(|g| {
            let m = mean(g);
            let zero = all_equal(g);
            g.iter()
                .map(move |&r| if zero { 0.0 } else { (f64::from(r) - m) as f32 })
        })
        .collect()
}

/// TRL `scale_rewards = "batch"`: Â_i = (r_i − mean_g)/(std_batch + eps), one unbiased std over
/// all rewards of the batch.
pub fn batch_std_advantages(rewards: &[f32], group_size: usize, eps: f64) -> Vec<f32> {
    let s = unbiased_std(rewards, mean(rewards));
    group_mean_advantages(rewards, group_size)
        .into_iter()
        .map(|a| (f64::from(a) / (s + eps)) as f32)
        .collect()
}
