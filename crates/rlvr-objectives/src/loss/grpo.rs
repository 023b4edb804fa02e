//! GRPO and the presets that differ from it only in knob values: DAPO, Dr. GRPO and RLOO.

use super::clipped_pg::clipped_pg_loss;
use super::knobs::{PgKnobs, objective_config};
use super::{LossContext, LossOutput, MethodTerms};
use crate::batch::PolicyBatch;
use crate::error::Result;

objective_config! {
    /// GRPO (Shao et al., "DeepSeekMath", arXiv 2402.03300, §4.1, Eq. 3).
    ///
    /// # Formula
    /// J = E[(1/G) Σ_i (1/|o_i|) Σ_t {min(ρ Â, clip(ρ, 1−ε, 1+ε) Â) − β k3}]: group-std
    /// advantages, the clipped surrogate and the k3 KL in the loss, `seq_mean_token_mean`.
    ///
    /// # Knobs (defaults)
    /// `group_std`, ε = 0.2/0.2, β = 0.04 (`k3`), `seq_mean_token_mean` ([`PgKnobs::GRPO`]).
    pub struct GrpoConfig {}
}

objective_config! {
    /// DAPO (Yu et al., arXiv 2503.14476, Eq. 8): clip-higher, token-level loss, soft overlong
    /// penalty (dynamic sampling is the trainer's `rollout.dynamic_sampling`).
    ///
    /// # Knobs (defaults)
    /// ε_low 0.2, ε_high 0.28, β = 0, `token_mean`, overlong 20480/4096/1.0 ([`PgKnobs::DAPO`]).
    pub struct DapoConfig {}
}

objective_config! {
    /// Dr. GRPO (Liu et al., "Understanding R1-Zero-Like Training", arXiv 2503.20783, Eq. 4):
    /// no std division in the advantage and a constant loss normaliser.
    ///
    /// # Knobs (defaults)
    /// `group_mean`, ε = 0.2, β = 0, `seq_mean_token_sum_norm` with `norm_len` 1024
    /// ([`PgKnobs::DR_GRPO`]; the 1024 is [PROPOSED]: set it to the run's maximum response length).
    pub struct DrGrpoConfig {}
}

objective_config! {
    /// RLOO advantages (Ahmadian et al., "Back to Basics", arXiv 2402.14740, Eq. 6) with the
    /// PPO clipped surrogate, as verl's `rloo` estimator runs it.
    ///
    /// # Knobs (defaults)
    /// `rloo`, ε = 0.2, β = 0, `token_mean` ([`PgKnobs::RLOO`]).
    pub struct RlooConfig {}
}

impl Default for GrpoConfig {
    fn default() -> Self {
        Self::from_common(PgKnobs::GRPO)
    }
}

impl Default for DapoConfig {
    fn default() -> Self {
        Self::from_common(PgKnobs::DAPO)
    }
}

impl Default for DrGrpoConfig {
    fn default() -> Self {
        Self::from_common(PgKnobs::DR_GRPO)
    }
}

impl Default for RlooConfig {
    fn default() -> Self {
        Self::from_common(PgKnobs::RLOO)
    }
}

/// The GRPO-family loss on any shared knobs (spec §1.10b): GRPO, DAPO, Dr. GRPO, GSPO and RLOO
/// are this function with different [`PgKnobs`].
pub fn clipped_loss(batch: &PolicyBatch, knobs: &PgKnobs, ctx: &LossContext) -> Result<LossOutput> {
    clipped_pg_loss(batch, knobs, ctx, "clipped_pg", |_| {
        Ok(MethodTerms::default())
    })
}
