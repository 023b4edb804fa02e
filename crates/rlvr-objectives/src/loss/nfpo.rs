//! NFPO: the N-step forward trace inside the masked policy gradient [PROPOSED form].

use burn::tensor::Tensor;

use super::clipped_pg::clipped_pg_loss;
use super::knobs::{PgKnobs, RatioLevel, objective_config};
use super::{LossContext, LossOutput, MethodTerms, put};
use crate::batch::PolicyBatch;
use crate::error::{Result, ensure};
use crate::masked::mean_metric;

objective_config! {
    /// NFPO (Yoon et al., "N-Step Forward-Trace Policy Optimization", arXiv 2605.20865).
    ///
    /// The PPO surrogate augmented with the cumulative likelihood ratio of the next N−1 tokens,
    /// inside a masked policy gradient. The paper's equations were not available: the form below
    /// is the spec's derivation, **[PROPOSED]** (spec §2).
    ///
    /// # Formula
    /// trace_{i,t} = Π_{k=t+1}^{min(t+N−1, |o_i|)} c(ρ_{i,k}), c = clip(ρ, 1−ε_low, 1+ε_high)
    /// when `trace_clip` (else c = ρ); M_{i,t} = PPO's clip condition as a hard mask;
    /// ℓ_{i,t} = −M·sg(trace)·ρ·Â on live tokens and PPO's clipped constant on masked ones, so
    /// N = 1 is exactly PPO clip (value and gradient). Masked-out (padding, vetoed) positions
    /// contribute factor 1 to the trace. Dual clip applies to the live value.
    ///
    /// # Knobs (defaults)
    /// DAPO base ([`PgKnobs::DAPO`]: ε 0.2/0.28, `token_mean`, β = 0); `trace_len` N = 4 and
    /// `trace_clip` = true are [PROPOSED].
    pub struct NfpoConfig {
        /// N: the trace covers the current token and the next N − 1 (N = 1 is PPO clip).
        pub trace_len: usize,
        /// Clip each trace factor to [1 − ε_low, 1 + ε_high] (bounds the variance) [PROPOSED].
        pub trace_clip: bool,
    }
}

impl Default for NfpoConfig {
    fn default() -> Self {
        Self::from_common(PgKnobs::DAPO, 4, true)
    }
}

/// log trace_{i,t} = Σ_{k=1}^{N−1} m_{i,t+k} log c(ρ_{i,t+k}) (spec §2), detached `[B, T]`.
pub fn forward_trace_log(
    ratio: &Tensor<2>,
    mask: &Tensor<2>,
    knobs: &PgKnobs,
    trace_len: usize,
    clip: bool,
) -> Tensor<2> {
    let [b, t] = ratio.dims();
    let factor = if clip {
        ratio
            .clone()
            .clamp(1.0 - knobs.eps_low, 1.0 + knobs.eps_high)
    } else {
        ratio.clone()
    };
    let log_c = factor.detach().log() * mask.clone(); // padding contributes factor 1
    let mut acc = log_c.zeros_like();
    for k in 1..trace_len.min(t) {
        // shift left by k: position t reads t + k; the last k positions read 0 (= factor 1)
        let shifted = Tensor::cat(
            vec![
                log_c.clone().slice([0..b, k..t]),
                log_c.zeros_like().slice([0..b, 0..k]),
            ],
            1,
        );
        acc = acc + shifted;
    }
    acc
}

/// NFPO loss (arXiv 2605.20865, [PROPOSED] form of spec §2); see [`NfpoConfig`].
pub fn nfpo_loss(batch: &PolicyBatch, cfg: &NfpoConfig, ctx: &LossContext) -> Result<LossOutput> {
    let knobs = cfg.common();
    ensure(
        cfg.trace_len >= 1,
        "trace_len",
        cfg.trace_len,
        "must be >= 1",
    )?;
    ensure(
        knobs.ratio_level == RatioLevel::Token,
        "ratio_level",
        "sequence",
        "NFPO's trace is over token ratios; use ratio_level = \"token\"",
    )?;
    clipped_pg_loss(batch, &knobs, ctx, "nfpo", |p| {
        let trace = forward_trace_log(
            &p.weights,
            &p.batch.mask,
            &knobs,
            cfg.trace_len,
            cfg.trace_clip,
        )
        .exp();
        let mut terms = MethodTerms::default();
        put(
            &mut terms.metrics,
            "nfpo_trace_mean",
            mean_metric(&trace, &p.batch.mask),
        );
        terms.live_gain = Some(trace);
        Ok(terms)
    })
}
