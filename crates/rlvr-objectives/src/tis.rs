//! Truncated importance sampling against a sampler whose log-probs differ from the trainer's.

use burn::tensor::Tensor;

use crate::loss::knobs::{RatioLevel, TisMode};

/// The IS log-ratio is clamped to ±20 before `exp`, as the policy ratio is (spec §9).
const TIS_LOG_CLAMP: f32 = 20.0;

/// The TIS correction of one batch: a detached weight on each token's policy loss and a 0/1
/// factor on the mask.
pub(crate) struct TisTerms {
    /// sg(min(w, cap)) for `truncate`, ones otherwise.
    pub weight: Tensor<2>,
    /// 1[w ≤ cap] for `mask`, ones otherwise.
    pub keep: Tensor<2>,
    /// The raw weight w = π_old / π_sampler (per token or per sequence).
    pub raw: Tensor<2>,
}

/// Truncated importance sampling (Yao et al. 2025, "Your efficient RL framework secretly brings
/// you off-policy RL training"; verl `rollout_is`): the trainer's `old_logp` and the sampler's
/// log-probs differ (other kernels, precision), so the batch is reweighted by
/// w = π_old/π_sampler, truncated at `cap`.
///
/// # Formula
/// token: w_{i,t} = exp(ℓ^old − ℓ^sampler); sequence: w_i = exp(Σ_t m (ℓ^old − ℓ^sampler)),
/// broadcast. `truncate`: per-token loss × sg(min(w, cap)); `mask`: tokens (sequences) with
/// w > cap leave the loss mask.
pub(crate) fn tis_terms(
    old_logp: &Tensor<2>,
    sampler_logp: &Tensor<2>,
    mask: &Tensor<2>,
    mode: TisMode,
    level: RatioLevel,
    cap: f32,
) -> TisTerms {
    let [_, t] = old_logp.dims();
    let log_tok = (old_logp.clone() - sampler_logp.clone()).detach();
    let log_w = match level {
        RatioLevel::Token => log_tok,
        RatioLevel::Sequence => (log_tok * mask.clone()).sum_dim(1).repeat_dim(1, t),
    };
    let raw = log_w.clamp(-TIS_LOG_CLAMP, TIS_LOG_CLAMP).exp();
    let ones = raw.ones_like();
    match mode {
        TisMode::Off => TisTerms {
            weight: ones.clone(),
            keep: ones,
            raw,
        },
        TisMode::Truncate => TisTerms {
            weight: raw.clone().clamp_max(cap),
            keep: ones,
            raw,
        },
        TisMode::Mask => TisTerms {
            weight: ones,
            keep: raw.clone().lower_equal_elem(cap).float(),
            raw,
        },
    }
}
