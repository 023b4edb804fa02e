//! OWPO: direction from the verifier, magnitude from the reference, and the reference ratchet.

use super::clipped_pg::clipped_pg_loss;
use super::knobs::{PgKnobs, objective_config};
use super::{LossContext, LossOutput, MethodTerms, put};
use crate::batch::PolicyBatch;
use crate::error::{Error, Result, ensure};
use crate::masked::{frac_metric, mean_metric};

objective_config! {
    /// OWPO (Yang et al., "One-Way Policy Optimization for Self-Evolving LLMs", arXiv 2605.22156,
    /// ICML 2026).
    ///
    /// The verifier fixes each token's gradient direction (sign Â); the reference only scales
    /// its magnitude through a positive stop-gradient weight: tokens where the policy lags the
    /// reference along Â are up-weighted (accelerated alignment), tokens where it leads are
    /// down-weighted (gain locking). Every `reference_update_every` optimizer steps the trainer
    /// replaces the reference by the current policy (the ratchet, spec §3). The weight function is not given in
    /// any source reached: the form below is **[PROPOSED]** (spec §3).
    ///
    /// # Formula
    /// d_{i,t} = sign(Â_i)·(ℓ^θ − ℓ^ref) (detached); w = clip(exp(−λ d), w_min, w_max);
    /// ℓ_{i,t} = sg(w)·L_clip_{i,t} (the DAPO clipped surrogate, no KL term).
    ///
    /// # Knobs (defaults)
    /// DAPO base ([`PgKnobs::DAPO`]); λ = 1, w ∈ [0.5, 2], ratchet every 100 steps ([PROPOSED]).
    pub struct OwpoConfig {
        /// λ: sharpness of the weight in the directional deviation [PROPOSED 1.0].
        pub lambda: f32,
        /// Smallest weight (gain locking floor) [PROPOSED 0.5].
        pub weight_min: f32,
        /// Largest weight (accelerated alignment cap) [PROPOSED 2.0].
        pub weight_max: f32,
        /// Ratchet period K: after every K optimizer steps (mini-batch updates, not RL steps)
        /// the reference becomes the current policy (0 = never) [PROPOSED 100].
        pub reference_update_every: usize,
    }
}

impl Default for OwpoConfig {
    fn default() -> Self {
        Self::from_common(PgKnobs::DAPO, 1.0, 0.5, 2.0, 100)
    }
}

impl OwpoConfig {
    /// Whether the trainer should copy the policy into the reference after `completed_steps`
    /// optimizer steps (the ratchet θ_ref ← θ; the trainer does the copy).
    pub fn reference_update_due(&self, completed_steps: usize) -> bool {
        reference_update_due(self.reference_update_every, completed_steps)
    }
}

/// The ratchet schedule: true after every `every` completed optimizer steps (never when `every`
/// is 0).
pub fn reference_update_due(every: usize, completed_steps: usize) -> bool {
    every > 0 && completed_steps > 0 && completed_steps.is_multiple_of(every)
}

/// OWPO loss (arXiv 2605.22156, [PROPOSED] weight of spec §3); see [`OwpoConfig`].
pub fn owpo_loss(batch: &PolicyBatch, cfg: &OwpoConfig, ctx: &LossContext) -> Result<LossOutput> {
    let knobs = cfg.common();
    ensure(
        cfg.lambda.is_finite() && cfg.lambda >= 0.0,
        "lambda",
        cfg.lambda,
        "must be >= 0",
    )?;
    ensure(
        cfg.weight_min > 0.0 && cfg.weight_min <= 1.0,
        "weight_min",
        cfg.weight_min,
        "must be in (0, 1]",
    )?;
    ensure(
        cfg.weight_max >= 1.0 && cfg.weight_max.is_finite(),
        "weight_max",
        cfg.weight_max,
        "must be >= 1",
    )?;
    let ref_logp = batch.ref_logp.clone().ok_or(Error::MissingTensor {
        name: "ref_logp",
        method: "owpo",
        why: "OWPO weights tokens by the reference; keep a reference model (train.reference_model = true)",
    })?;
    clipped_pg_loss(batch, &knobs, ctx, "owpo", |p| {
        let b = p.batch;
        let d = b.advantages.clone().sign() * (b.logp.clone().detach() - ref_logp); // directional deviation
        let w = (d * -cfg.lambda)
            .exp()
            .clamp(cfg.weight_min, cfg.weight_max);
        let mut terms = MethodTerms::default();
        let live = b.advantages.clone().not_equal_elem(0.0);
        let m = &b.mask;
        put(&mut terms.metrics, "owpo_weight_mean", mean_metric(&w, m));
        put(
            &mut terms.metrics,
            "owpo_accelerated_frac",
            frac_metric(&w.clone().greater_elem(1.0).bool_and(live.clone()), m),
        );
        put(
            &mut terms.metrics,
            "owpo_locked_frac",
            frac_metric(&w.clone().lower_elem(1.0).bool_and(live), m),
        );
        terms.token_weight = Some(w);
        Ok(terms)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratchet_fires_every_k_steps() {
        let due: Vec<usize> = (0..=10).filter(|&s| reference_update_due(4, s)).collect();
        assert_eq!(due, vec![4, 8]);
        assert!(!(0..100).any(|s| reference_update_due(0, s)));
    }
}
