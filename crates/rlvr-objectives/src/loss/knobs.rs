//! The knobs shared by every clipped policy-gradient objective (spec §1.10) and the macro that
//! gives each registry entry its own flat, documented, serde-(de)serializable config struct.

use serde::{Deserialize, Serialize};

use crate::advantage::{AdvantageConfig, AdvantageEstimator};
use crate::aggregate::Aggregation;
use crate::error::{Result, ensure};
use crate::kl::KlEstimator;

/// Whether the importance weight is per token (PPO/GRPO) or per sequence (GSPO, arXiv 2507.18071).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RatioLevel {
    /// ρ_{i,t} = exp(ℓ^θ_{i,t} − ℓ^old_{i,t}).
    Token,
    /// s_i = exp((1/|o_i|) Σ_t m (ℓ^θ − ℓ^old)), length-normalised, applied GSPO-token style.
    Sequence,
}

/// Truncated importance sampling (TIS) against a sampler whose log-probs differ from the
/// trainer's `old_logp` (Yao et al., "Your efficient RL framework secretly brings you off-policy
/// RL training", 2025; verl `rollout_is`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TisMode {
    /// No correction.
    Off,
    /// Multiply the per-token policy loss by sg(min(π_old/π_sampler, tis_cap)).
    Truncate,
    /// Drop tokens (or whole sequences, at sequence level) whose weight exceeds `tis_cap`.
    Mask,
}

/// The knobs every clipped objective shares, resolved from a registry entry (spec §1.10).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PgKnobs {
    /// Advantage estimator (spec §1.2).
    pub adv_estimator: AdvantageEstimator,
    /// eps in (std + eps).
    pub std_eps: f32,
    /// Lower clip range ε_low: ratios below 1 − ε_low are clipped for Â < 0.
    pub eps_low: f32,
    /// Upper clip range ε_high: ratios above 1 + ε_high are clipped for Â > 0 (DAPO clip-higher).
    pub eps_high: f32,
    /// Dual-clip constant c (> 1) capping the loss of Â < 0 tokens at c·|Â|; 0 = off.
    pub dual_clip_c: f32,
    /// INTELLECT-2 two-sided clip δ (> 1 + ε_high): the unclipped branch uses min(ρ, δ); 0 = off.
    pub two_sided_delta: f32,
    /// Token or sequence importance weights.
    pub ratio_level: RatioLevel,
    /// Loss aggregation (spec §1.5).
    pub aggregation: Aggregation,
    /// The constant L of `seq_mean_token_sum_norm`; 0 = the context's maximum response length.
    pub norm_len: usize,
    /// β of the KL-to-reference term.
    pub kl_coef: f32,
    /// KL estimator.
    pub kl_estimator: KlEstimator,
    /// Put β·KL into the reward ([`crate::ObjectiveConfig::shape_rewards`]) instead of the loss.
    pub kl_in_reward: bool,
    /// Entropy bonus coefficient: loss −= coef · agg(entropy).
    pub entropy_coef: f32,
    /// Truncated importance sampling mode.
    pub tis: TisMode,
    /// Token- or sequence-level TIS weights.
    pub tis_level: RatioLevel,
    /// TIS truncation / masking threshold.
    pub tis_cap: f32,
    /// DAPO overlong shaping: maximum length L_max; 0 = off.
    pub overlong_max_len: usize,
    /// DAPO overlong shaping: the soft-penalty interval L_cache.
    pub overlong_cache: usize,
    /// DAPO overlong shaping: penalty factor.
    pub overlong_penalty: f32,
}

impl PgKnobs {
    /// GRPO (DeepSeekMath, arXiv 2402.03300): group-std advantages, ε = 0.2, k3 KL in the loss
    /// with β = 0.04, `seq_mean_token_mean`.
    pub const GRPO: PgKnobs = PgKnobs {
        adv_estimator: AdvantageEstimator::GroupStd,
        std_eps: 1e-6,
        eps_low: 0.2,
        eps_high: 0.2,
        dual_clip_c: 0.0,
        two_sided_delta: 0.0,
        ratio_level: RatioLevel::Token,
        aggregation: Aggregation::SeqMeanTokenMean,
        norm_len: 1024,
        kl_coef: 0.04,
        kl_estimator: KlEstimator::K3,
        kl_in_reward: false,
        entropy_coef: 0.0,
        tis: TisMode::Off,
        tis_level: RatioLevel::Token,
        tis_cap: 2.0,
        overlong_max_len: 0,
        overlong_cache: 0,
        overlong_penalty: 1.0,
    };

    /// DAPO (arXiv 2503.14476): ε_low 0.2, ε_high 0.28, β = 0, `token_mean`, soft overlong
    /// penalty with L_max = 20480, L_cache = 4096.
    pub const DAPO: PgKnobs = PgKnobs {
        eps_high: 0.28,
        aggregation: Aggregation::TokenMean,
        kl_coef: 0.0,
        overlong_max_len: 20480,
        overlong_cache: 4096,
        ..Self::GRPO
    };

    /// Dr. GRPO (arXiv 2503.20783): mean-only advantages, β = 0, `seq_mean_token_sum_norm`
    /// with the constant L = `norm_len` (1024, [PROPOSED]: set it to the maximum generation length).
    pub const DR_GRPO: PgKnobs = PgKnobs {
        adv_estimator: AdvantageEstimator::GroupMean,
        aggregation: Aggregation::SeqMeanTokenSumNorm,
        kl_coef: 0.0,
        ..Self::GRPO
    };

    /// GSPO (arXiv 2507.18071): sequence-level ratio, ε_low 3e-4, ε_high 4e-4, β = 0,
    /// `seq_mean_token_mean`.
    pub const GSPO: PgKnobs = PgKnobs {
        eps_low: 3e-4,
        eps_high: 4e-4,
        ratio_level: RatioLevel::Sequence,
        kl_coef: 0.0,
        ..Self::GRPO
    };

    /// RLOO (arXiv 2402.14740) advantages with the PPO clip, β = 0, `token_mean` (verl's RLOO).
    pub const RLOO: PgKnobs = PgKnobs {
        adv_estimator: AdvantageEstimator::Rloo,
        aggregation: Aggregation::TokenMean,
        kl_coef: 0.0,
        ..Self::GRPO
    };

    /// The advantage settings.
    pub fn advantage_config(&self) -> AdvantageConfig {
        AdvantageConfig {
            estimator: self.adv_estimator,
            std_eps: self.std_eps,
        }
    }

    /// Checks ranges that serde cannot.
    pub fn validate(&self) -> Result<()> {
        let finite = |x: f32| x.is_finite();
        ensure(
            finite(self.std_eps) && self.std_eps >= 0.0,
            "std_eps",
            self.std_eps,
            "must be >= 0",
        )?;
        ensure(
            finite(self.eps_low) && (0.0..1.0).contains(&self.eps_low),
            "eps_low",
            self.eps_low,
            "must be in [0, 1)",
        )?;
        ensure(
            finite(self.eps_high) && self.eps_high >= 0.0,
            "eps_high",
            self.eps_high,
            "must be >= 0",
        )?;
        ensure(
            self.dual_clip_c == 0.0 || (finite(self.dual_clip_c) && self.dual_clip_c > 1.0),
            "dual_clip_c",
            self.dual_clip_c,
            "must be 0 (off) or > 1",
        )?;
        ensure(
            self.dual_clip_c == 0.0 || self.ratio_level == RatioLevel::Token,
            "dual_clip_c",
            self.dual_clip_c,
            "dual clip is token-level only (GSPO has none); set 0 with ratio_level = \"sequence\"",
        )?;
        ensure(
            self.two_sided_delta == 0.0
                || (finite(self.two_sided_delta) && self.two_sided_delta > 1.0 + self.eps_high),
            "two_sided_delta",
            self.two_sided_delta,
            "must be 0 (off) or > 1 + eps_high",
        )?;
        ensure(
            finite(self.kl_coef) && self.kl_coef >= 0.0,
            "kl_coef",
            self.kl_coef,
            "must be >= 0",
        )?;
        ensure(
            finite(self.entropy_coef),
            "entropy_coef",
            self.entropy_coef,
            "must be finite",
        )?;
        ensure(
            self.tis == TisMode::Off || (finite(self.tis_cap) && self.tis_cap > 0.0),
            "tis_cap",
            self.tis_cap,
            "must be > 0",
        )?;
        ensure(
            self.overlong_max_len == 0
                || (self.overlong_cache > 0 && self.overlong_cache <= self.overlong_max_len),
            "overlong_cache",
            self.overlong_cache,
            "must be in 1..=overlong_max_len when overlong_max_len > 0",
        )?;
        ensure(
            finite(self.overlong_penalty) && self.overlong_penalty >= 0.0,
            "overlong_penalty",
            self.overlong_penalty,
            "must be >= 0",
        )
    }
}

/// Defines a registry entry's config struct: the shared [`PgKnobs`] fields, flat, followed by the
/// method's own fields; `#[serde(default, deny_unknown_fields)]`, so a TOML table may set any
/// subset and a misspelt knob is an error. Generates `common()` (the shared knobs) and
/// `from_common(preset, own fields...)`.
macro_rules! objective_config {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty, )* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct $name {
            /// Advantage estimator: `group_std` | `group_mean` | `batch_std` | `rloo` (spec §1.2).
            pub adv_estimator: $crate::advantage::AdvantageEstimator,
            /// eps in (std + eps) (verl 1e-6).
            pub std_eps: f32,
            /// Lower clip range ε_low (ratios below 1 − ε_low are clipped when Â < 0).
            pub eps_low: f32,
            /// Upper clip range ε_high (ratios above 1 + ε_high are clipped when Â > 0).
            pub eps_high: f32,
            /// Dual-clip constant c > 1 capping Â < 0 tokens at c·|Â| (verl 3.0); 0 = off.
            pub dual_clip_c: f32,
            /// Two-sided clip δ > 1 + ε_high (INTELLECT-2, TRL `delta`); 0 = off.
            pub two_sided_delta: f32,
            /// `token` (PPO/GRPO) or `sequence` (GSPO) importance weights.
            pub ratio_level: $crate::loss::knobs::RatioLevel,
            /// `token_mean` | `seq_mean_token_mean` | `seq_mean_token_sum` | `seq_mean_token_sum_norm`.
            pub aggregation: $crate::aggregate::Aggregation,
            /// Constant L of `seq_mean_token_sum_norm` (max generation length); 0 = take it from
            /// the loss context.
            pub norm_len: usize,
            /// β of the KL-to-reference term (needs `ref_logp` when > 0).
            pub kl_coef: f32,
            /// KL estimator: `k1` | `k2` | `k3` | `k3_st` (spec §1.4).
            pub kl_estimator: $crate::kl::KlEstimator,
            /// Put β·KL into the reward (`shape_rewards`) instead of the loss.
            pub kl_in_reward: bool,
            /// Entropy bonus: loss −= coef · agg(entropy) (needs `entropy` when ≠ 0).
            pub entropy_coef: f32,
            /// Truncated importance sampling: `off` | `truncate` | `mask`.
            pub tis: $crate::loss::knobs::TisMode,
            /// TIS weights per `token` or per `sequence`.
            pub tis_level: $crate::loss::knobs::RatioLevel,
            /// TIS threshold (verl `rollout_is_threshold` 2.0).
            pub tis_cap: f32,
            /// DAPO soft overlong penalty: L_max in tokens; 0 = off.
            pub overlong_max_len: usize,
            /// DAPO soft overlong penalty: L_cache in tokens.
            pub overlong_cache: usize,
            /// DAPO soft overlong penalty factor (1.0).
            pub overlong_penalty: f32,
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// The knobs shared with every clipped objective.
            pub fn common(&self) -> $crate::loss::knobs::PgKnobs {
                $crate::loss::knobs::PgKnobs {
                    adv_estimator: self.adv_estimator,
                    std_eps: self.std_eps,
                    eps_low: self.eps_low,
                    eps_high: self.eps_high,
                    dual_clip_c: self.dual_clip_c,
                    two_sided_delta: self.two_sided_delta,
                    ratio_level: self.ratio_level,
                    aggregation: self.aggregation,
                    norm_len: self.norm_len,
                    kl_coef: self.kl_coef,
                    kl_estimator: self.kl_estimator,
                    kl_in_reward: self.kl_in_reward,
                    entropy_coef: self.entropy_coef,
                    tis: self.tis,
                    tis_level: self.tis_level,
                    tis_cap: self.tis_cap,
                    overlong_max_len: self.overlong_max_len,
                    overlong_cache: self.overlong_cache,
                    overlong_penalty: self.overlong_penalty,
                }
            }

            /// A config with the shared knobs of `c` and the given method fields.
            #[allow(clippy::redundant_field_names)]
            pub fn from_common(c: $crate::loss::knobs::PgKnobs $(, $field: $ty)*) -> Self {
                Self {
                    adv_estimator: c.adv_estimator,
                    std_eps: c.std_eps,
                    eps_low: c.eps_low,
                    eps_high: c.eps_high,
                    dual_clip_c: c.dual_clip_c,
                    two_sided_delta: c.two_sided_delta,
                    ratio_level: c.ratio_level,
                    aggregation: c.aggregation,
                    norm_len: c.norm_len,
                    kl_coef: c.kl_coef,
                    kl_estimator: c.kl_estimator,
                    kl_in_reward: c.kl_in_reward,
                    entropy_coef: c.entropy_coef,
                    tis: c.tis,
                    tis_level: c.tis_level,
                    tis_cap: c.tis_cap,
                    overlong_max_len: c.overlong_max_len,
                    overlong_cache: c.overlong_cache,
                    overlong_penalty: c.overlong_penalty,
                    $( $field: $field, )*
                }
            }
        }
    };
}

pub(crate) use objective_config;
