//! RLOO: the leave-one-out baseline (Ahmadian et al., arXiv 2402.14740, Eq. 6).

use super::{all_equal, mean};

/// RLOO (arXiv 2402.14740, Eq. 6): Â_i = r_i − (1/(G−1)) Σ_{j≠i} r_j = G/(G−1)·(r_i − mean_g).
/// All-equal groups give exactly 0. Needs G ≥ 2 (checked by the caller).
pub fn rloo_advantages(rewards: &[f32], group_size: usize) -> Vec<f32> {
    let g = group_size as f64;
    rewards
        .chunks(group_size)
        .flat_map(|grp| {
            let total: f64 = mean(grp) * g;
            let zero = all_equal(grp);
            grp.iter().map(move |&r| {
                let r = f64::from(r);
                if zero {
                    0.0
                } else {
                    (r - (total - r) / (g - 1.0)) as f32
                }
            })
        })
        .collect()
}
