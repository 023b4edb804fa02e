//! Host-side reward shaping before advantages: DAPO's soft overlong penalty and KL-in-reward.

use crate::error::{Error, Result};
use crate::loss::knobs::PgKnobs;

/// DAPO soft overlong punishment (arXiv 2503.14476, Eq. 13; verl's form with a factor):
/// R_len = 0 if |y| ≤ L_max − L_cache; ((L_max − L_cache) − |y|)/L_cache · factor if
/// L_max − L_cache < |y| ≤ L_max; −factor if |y| > L_max. `max_len` 0 disables it.
pub fn overlong_penalty(len: usize, max_len: usize, cache: usize, factor: f32) -> f32 {
    if max_len == 0 || cache == 0 {
        return 0.0;
    }
    let expected = max_len.saturating_sub(cache);
    if len <= expected {
        0.0
    } else if len <= max_len {
        -((len - expected) as f32 / cache as f32) * factor
    } else {
        -factor
    }
}

/// Per-sequence values the shaping may need, in the order of the rewards.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShapingInput<'a> {
    /// Response lengths in tokens (needed when the overlong penalty is on).
    pub response_lens: Option<&'a [usize]>,
    /// Σ_t KL per sequence ([`crate::kl::sequence_kl`]), needed when `kl_in_reward`.
    pub sequence_kl: Option<&'a [f32]>,
}

/// What shaping changed, for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ShapingStats {
    /// Sequences that received a non-zero overlong penalty.
    pub overlong_penalized: usize,
    /// Mean penalty added (≤ 0).
    pub overlong_penalty_mean: f64,
    /// Mean β·KL subtracted.
    pub kl_penalty_mean: f64,
}

/// Adds the overlong penalty (when `overlong_max_len > 0`) and subtracts β·KL (when
/// `kl_in_reward`, PPO-style, spec §1.4) to `rewards` in place, before advantages.
pub fn shape_rewards(
    knobs: &PgKnobs,
    rewards: &mut [f32],
    input: &ShapingInput,
) -> Result<ShapingStats> {
    let n = rewards.len();
    let check_len = |name: &'static str, got: usize| {
        if got == n {
            Ok(())
        } else {
            Err(Error::LengthMismatch {
                name,
                expected: n,
                got,
            })
        }
    };
    let mut stats = ShapingStats::default();
    if knobs.overlong_max_len > 0 {
        let lens = input.response_lens.ok_or(Error::MissingTensor {
            name: "response_lens",
            method: "overlong_penalty",
            why: "overlong_max_len > 0 needs the response lengths",
        })?;
        check_len("response_lens", lens.len())?;
        for (r, &len) in rewards.iter_mut().zip(lens) {
            let p = overlong_penalty(
                len,
                knobs.overlong_max_len,
                knobs.overlong_cache,
                knobs.overlong_penalty,
            );
            if p != 0.0 {
                stats.overlong_penalized += 1;
            }
            stats.overlong_penalty_mean += f64::from(p) / n.max(1) as f64;
            *r += p;
        }
    }
    if knobs.kl_in_reward && knobs.kl_coef > 0.0 {
        let kl = input.sequence_kl.ok_or(Error::MissingTensor {
            name: "sequence_kl",
            method: "kl_in_reward",
            why: "kl_in_reward needs the per-sequence KL (kl::sequence_kl)",
        })?;
        check_len("sequence_kl", kl.len())?;
        for (i, (r, &k)) in rewards.iter_mut().zip(kl).enumerate() {
            if !k.is_finite() {
                return Err(Error::NonFinite {
                    field: "sequence_kl",
                    index: i,
                    value: k,
                });
            }
            stats.kl_penalty_mean += f64::from(knobs.kl_coef * k) / n.max(1) as f64;
            *r -= knobs.kl_coef * k;
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec §1.8: L_max = 20480, L_cache = 4096: |y| = 18432 gives −0.5; ≤ 16384 gives 0;
    /// > 20480 gives −1.
    #[test]
    fn overlong_matches_dapo_example() {
        assert_eq!(overlong_penalty(16384, 20480, 4096, 1.0), 0.0);
        assert_eq!(overlong_penalty(18432, 20480, 4096, 1.0), -0.5);
        assert_eq!(overlong_penalty(20480, 20480, 4096, 1.0), -1.0);
        assert_eq!(overlong_penalty(30000, 20480, 4096, 1.0), -1.0);
        assert_eq!(overlong_penalty(30000, 0, 4096, 1.0), 0.0);
    }

    #[test]
    fn shaping_adds_penalty_and_subtracts_kl() {
        let knobs = PgKnobs {
            overlong_max_len: 10,
            overlong_cache: 4,
            kl_in_reward: true,
            kl_coef: 0.5,
            ..PgKnobs::DAPO
        };
        let mut r = [1.0, 1.0, 0.0];
        let lens = [6, 8, 12];
        let kl = [0.0, 2.0, 0.0];
        let input = ShapingInput {
            response_lens: Some(&lens),
            sequence_kl: Some(&kl),
        };
        let stats = shape_rewards(&knobs, &mut r, &input).unwrap();
        // 8 tokens: −(8 − 6)/4 = −0.5; 12 > 10: −1; then −0.5·2 = −1 on the second.
        assert_eq!(r, [1.0, -0.5, -1.0]);
        assert_eq!(stats.overlong_penalized, 2);
        let err = shape_rewards(
            &knobs,
            &mut r,
            &ShapingInput {
                response_lens: Some(&lens[..2]),
                sequence_kl: Some(&kl),
            },
        );
        assert!(matches!(
            err,
            Err(Error::LengthMismatch {
                name: "response_lens",
                ..
            })
        ));
    }
}
