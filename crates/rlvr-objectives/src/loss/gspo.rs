//! GSPO: the sequence-level, length-normalised importance ratio.

use super::knobs::{PgKnobs, objective_config};

objective_config! {
    /// GSPO (Zheng et al., "Group Sequence Policy Optimization", arXiv 2507.18071, Eq. 5–7, and
    /// the GSPO-token form of Eq. 13–14 that verl implements).
    ///
    /// # Formula
    /// s_i = exp((1/|o_i|) Σ_t m (ℓ^θ − ℓ^old)); J = E[(1/G) Σ_i min(s_i Â_i, clip(s_i, 1−ε_low,
    /// 1+ε_high) Â_i)]; per token w_{i,t} = sg(s_i)·exp(ℓ^θ_{i,t} − sg(ℓ^θ_{i,t})), so a whole
    /// sequence is clipped or kept together. No dual clip.
    ///
    /// # Knobs (defaults)
    /// `ratio_level = "sequence"`, ε_low 3e-4, ε_high 4e-4 (paper §5.1), β = 0,
    /// `seq_mean_token_mean` ([`PgKnobs::GSPO`]).
    pub struct GspoConfig {}
}

impl Default for GspoConfig {
    fn default() -> Self {
        Self::from_common(PgKnobs::GSPO)
    }
}
