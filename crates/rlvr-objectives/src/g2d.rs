//! G2D's second stage: a static preference set from the groups of a GRPO-trained policy.
//!
//! # Paper
//! Verma, Ravindran, "How Much Online RL is Enough? Informative Rollouts for Offline Preference
//! Optimization in RLVR", arXiv 2605.21266 (no code). Specification: `methods-extra.md` §12;
//! the selection rule below is its **\[PROPOSED]** algorithm.
//!
//! # Rule
//! Per prompt with N sampled responses: keep the prompt only if its group is mixed (pass rate in
//! [1/N, (N−1)/N]). Order the incorrect responses by length-normalized log-prob under the
//! sampling policy, highest first (confident errors are the most informative; ties by index);
//! order the correct ones by a seeded random permutation. Pair them in these orders without
//! replacement, up to `pairs_per_prompt`, then drop pairs whose longer response is more than
//! `max_length_ratio` times the shorter one (DPO's length bias).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, ensure};
use crate::rng::SplitMix64;

/// G2D pair-selection knobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct G2dConfig {
    /// P, the most pairs per prompt (default 4).
    pub pairs_per_prompt: usize,
    /// Longest/shortest response length above which a pair is dropped (default 3).
    pub max_length_ratio: f64,
}

impl Default for G2dConfig {
    fn default() -> Self {
        Self {
            pairs_per_prompt: 4,
            max_length_ratio: 3.0,
        }
    }
}

impl G2dConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.pairs_per_prompt >= 1,
            "g2d.pairs_per_prompt",
            self.pairs_per_prompt,
            "must be >= 1",
        )?;
        ensure(
            self.max_length_ratio >= 1.0,
            "g2d.max_length_ratio",
            self.max_length_ratio,
            "must be >= 1",
        )
    }
}

/// One response of a group, as the selection sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Whether the verifier judged it correct.
    pub passed: bool,
    /// Mean sampler log-prob per response token.
    pub logp_mean: f32,
    /// Response length in tokens.
    pub len: usize,
}

/// The (chosen, rejected) index pairs of one group (indices into `group`); empty when the group
/// is not mixed. `seed` drives the order of the correct responses.
pub fn select_pairs(
    group: &[Candidate],
    cfg: &G2dConfig,
    seed: u64,
) -> Result<Vec<(usize, usize)>> {
    cfg.validate()?;
    if let Some(i) = group.iter().position(|c| !c.logp_mean.is_finite()) {
        return Err(Error::NonFinite {
            field: "logp_mean",
            index: i,
            value: group[i].logp_mean,
        });
    }
    let mut chosen: Vec<usize> = (0..group.len()).filter(|&i| group[i].passed).collect();
    let mut rejected: Vec<usize> = (0..group.len()).filter(|&i| !group[i].passed).collect();
    if chosen.is_empty() || rejected.is_empty() {
        return Ok(Vec::new());
    }
    rejected.sort_by(|&a, &b| {
        group[b]
            .logp_mean
            .total_cmp(&group[a].logp_mean)
            .then(a.cmp(&b))
    });
    // Fisher–Yates with the crate's stable generator.
    let mut rng = SplitMix64::new(seed);
    for i in (1..chosen.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        chosen.swap(i, j);
    }
    Ok(chosen
        .into_iter()
        .zip(rejected)
        .take(cfg.pairs_per_prompt)
        .filter(|&(c, r)| {
            let (a, b) = (
                group[c].len.max(group[r].len),
                group[c].len.min(group[r].len),
            );
            a as f64 <= cfg.max_length_ratio * b as f64
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(passed: bool, logp_mean: f32, len: usize) -> Candidate {
        Candidate {
            passed,
            logp_mean,
            len,
        }
    }

    #[test]
    fn collapsed_groups_give_no_pairs() {
        let cfg = G2dConfig::default();
        assert!(
            select_pairs(&[c(true, -1.0, 3); 4], &cfg, 0)
                .unwrap()
                .is_empty()
        );
        assert!(
            select_pairs(&[c(false, -1.0, 3); 4], &cfg, 0)
                .unwrap()
                .is_empty()
        );
        assert!(select_pairs(&[], &cfg, 0).unwrap().is_empty());
    }

    /// One correct response (index 0) and three wrong ones with mean log-probs −2, −0.5, −1:
    /// the single pair takes the most confident error, index 2.
    #[test]
    fn the_most_confident_error_is_rejected_first() {
        let g = [
            c(true, -1.0, 3),
            c(false, -2.0, 3),
            c(false, -0.5, 3),
            c(false, -1.0, 3),
        ];
        assert_eq!(
            select_pairs(&g, &G2dConfig::default(), 7).unwrap(),
            vec![(0, 2)]
        );
    }

    /// Three correct, three wrong, P = 2: two pairs, rejected 4 (−0.1) then 5 (−0.2), each
    /// chosen response used once; lengths 2 vs 7 (ratio 3.5 > 3) drop a pair.
    #[test]
    fn at_most_p_pairs_without_replacement_and_the_length_filter() {
        let g = [
            c(true, -1.0, 2),
            c(true, -1.0, 2),
            c(true, -1.0, 2),
            c(false, -0.3, 2),
            c(false, -0.1, 2),
            c(false, -0.2, 2),
        ];
        let cfg = G2dConfig {
            pairs_per_prompt: 2,
            ..G2dConfig::default()
        };
        let pairs = select_pairs(&g, &cfg, 3).unwrap();
        assert_eq!(pairs.iter().map(|p| p.1).collect::<Vec<_>>(), vec![4, 5]);
        assert!(pairs[0].0 != pairs[1].0 && pairs.iter().all(|p| p.0 < 3));
        let long = [c(true, -1.0, 7), c(false, -1.0, 2)];
        assert!(
            select_pairs(&long, &G2dConfig::default(), 0)
                .unwrap()
                .is_empty()
        );
        let ok = [c(true, -1.0, 6), c(false, -1.0, 2)];
        assert_eq!(
            select_pairs(&ok, &G2dConfig::default(), 0).unwrap(),
            vec![(0, 1)]
        );
    }

    #[test]
    fn bad_knobs_and_inputs_are_typed_errors() {
        let bad = G2dConfig {
            max_length_ratio: 0.5,
            ..G2dConfig::default()
        };
        assert!(matches!(
            select_pairs(&[], &bad, 0),
            Err(Error::InvalidConfig {
                field: "g2d.max_length_ratio",
                ..
            })
        ));
        let nan = [c(true, f32::NAN, 2), c(false, -1.0, 2)];
        assert!(matches!(
            select_pairs(&nan, &G2dConfig::default(), 0),
            Err(Error::NonFinite {
                field: "logp_mean",
                ..
            })
        ));
    }
}
