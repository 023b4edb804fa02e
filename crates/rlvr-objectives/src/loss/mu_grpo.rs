//! Mu-GRPO: relaxed clipping plus the negative-advantage veto of the post-trigger suffix.

use burn::tensor::Tensor;

use super::clipped_pg::clipped_pg_loss;
use super::knobs::{PgKnobs, objective_config};
use super::{LossContext, LossOutput, MethodTerms, put};
use crate::aggregate::Aggregation;
use crate::batch::PolicyBatch;
use crate::error::{Result, ensure};
use crate::masked::{count_metric, frac_metric};

objective_config! {
    /// Mu-GRPO (Tian, Xie, Wei, "How Off-Policy Can GRPO Be?", arXiv 2605.17570).
    ///
    /// Training runs in a few large stages (rollouts once per stage, then many updates on
    /// them). The stage schedule is the trainer's (`train.stage_batches` in rlvr-train: batches
    /// generated with one policy, then optimized through), not a knob of the loss. Relaxed clipping keeps stale tokens' gradient,
    /// and the **negative-advantage veto** drops the suffix of every Â < 0 response from its
    /// trigger: the first response token whose ratio to the generating policy exceeds
    /// `veto_threshold`. Values and the exact trigger are **[PROPOSED]** (spec §4).
    ///
    /// # Formula
    /// for Â_i < 0: t* = min{t : m_{i,t} = 1, ρ_{i,t} > τ}; m_{i,t} ← 0 for t ≥ t* (t > t* when
    /// `veto_inclusive` = false). Vetoed tokens leave numerator and denominator. Then the
    /// clipped surrogate with ε 0.5/1.0 and dual clip 3.
    ///
    /// # Knobs (defaults)
    /// ε_low 0.5, ε_high 1.0, `dual_clip_c` 3, `token_mean`, β = 0, τ = 2.0 (= 1 + ε_high),
    /// trigger included ([PROPOSED]).
    pub struct MuGrpoConfig {
        /// τ: a Â < 0 response is cut at its first token with ρ > τ [PROPOSED 2.0].
        pub veto_threshold: f32,
        /// Whether the trigger token itself is vetoed [PROPOSED true].
        pub veto_inclusive: bool,
    }
}

impl Default for MuGrpoConfig {
    fn default() -> Self {
        let base = PgKnobs {
            eps_low: 0.5,
            eps_high: 1.0,
            dual_clip_c: 3.0,
            aggregation: Aggregation::TokenMean,
            kl_coef: 0.0,
            ..PgKnobs::GRPO
        };
        Self::from_common(base, 2.0, true)
    }
}

/// The veto mask `[B, T]`: 1 where a token stays, 0 on the vetoed suffix (spec §4).
pub fn veto_keep(
    ratio: &Tensor<2>,
    adv: &Tensor<2>,
    mask: &Tensor<2>,
    threshold: f32,
    inclusive: bool,
) -> Tensor<2> {
    let trigger = ratio
        .clone()
        .greater_elem(threshold)
        .bool_and(adv.clone().lower_elem(0.0))
        .bool_and(mask.clone().greater_elem(0.0))
        .float();
    let seen = trigger.clone().cumsum(1); // triggers at or before t
    let before = if inclusive { seen } else { seen - trigger };
    before.lower_equal_elem(0.0).float()
}

/// Mu-GRPO loss (arXiv 2605.17570, [PROPOSED] form of spec §4); see [`MuGrpoConfig`].
pub fn mu_grpo_loss(
    batch: &PolicyBatch,
    cfg: &MuGrpoConfig,
    ctx: &LossContext,
) -> Result<LossOutput> {
    let knobs = cfg.common();
    ensure(
        cfg.veto_threshold > 0.0,
        "veto_threshold",
        cfg.veto_threshold,
        "must be > 0",
    )?;
    clipped_pg_loss(batch, &knobs, ctx, "mu_grpo", |p| {
        let keep = veto_keep(
            &p.weights,
            &p.batch.advantages,
            &p.batch.mask,
            cfg.veto_threshold,
            cfg.veto_inclusive,
        );
        let vetoed = keep.clone().lower_elem(0.5);
        let mut terms = MethodTerms::default();
        put(
            &mut terms.metrics,
            "vetoed_tokens",
            count_metric(&vetoed, &p.batch.mask),
        );
        put(
            &mut terms.metrics,
            "vetoed_frac",
            frac_metric(&vetoed, &p.batch.mask),
        );
        terms.keep = Some(keep);
        Ok(terms)
    })
}
