//! The clipped policy-gradient surrogate (PPO clip with ε_low/ε_high, dual clip, two-sided clip,
//! token or sequence ratios) and the pipeline every objective runs: weights → surrogate →
//! method terms → TIS → aggregation → KL and entropy terms → metrics.

use burn::tensor::{Bool, Tensor};

use super::knobs::{PgKnobs, RatioLevel, TisMode};
use super::{LossContext, LossOutput, MethodTerms, Metrics, put};
use crate::aggregate::{Aggregation, aggregate_over, aggregate_weighted};
use crate::batch::PolicyBatch;
use crate::error::{Error, Result};
use crate::kl::kl_per_token;
use crate::masked::{frac_metric, mean_metric, min_mean_max, scalar};
use crate::tis::tis_terms;

/// Log-ratios ℓ^θ − ℓ^old are clamped to ±20 before `exp` (verl; spec §1.1).
pub const LOG_RATIO_CLAMP: f32 = 20.0;
/// GSPO-token clamps the log of the sequence weight at 10 (verl `compute_policy_loss_gspo`).
pub const SEQ_LOG_RATIO_MAX: f32 = 10.0;

/// Importance weights `[B, T]` with gradient through `logp` (spec §1.10b).
///
/// # Formula
/// token: w = exp(clamp(ℓ^θ − ℓ^old, ±20)).
/// sequence (GSPO-token, arXiv 2507.18071 Eq. 11/14): w_{i,t} = exp(min(ℓ^θ_{i,t} −
/// sg(ℓ^θ_{i,t}) + sg(log s_i), 10)) with log s_i = Σ_t m (ℓ^θ − ℓ^old) / max(|o_i|, 1); value
/// s_i, gradient s_i ∇ℓ^θ_{i,t}.
pub fn importance_weights(batch: &PolicyBatch, level: RatioLevel) -> Tensor<2> {
    let [_, t] = batch.dims();
    let log_ratio =
        (batch.logp.clone() - batch.old_logp.clone()).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP);
    match level {
        RatioLevel::Token => log_ratio.exp(),
        RatioLevel::Sequence => {
            let n = batch.mask.clone().sum_dim(1).clamp_min(1.0); // [B, 1]
            let log_s = ((log_ratio.detach() * batch.mask.clone()).sum_dim(1) / n).repeat_dim(1, t); // Eq. (7)
            let live = batch.logp.clone() - batch.logp.clone().detach();
            (live + log_s).clamp_max(SEQ_LOG_RATIO_MAX).exp()
        }
    }
}

/// The per-token clipped surrogate and which tokens each clip touched.
pub struct Surrogate {
    /// Per-token loss ℓ_{i,t} to minimise `[B, T]`.
    pub per_token: Tensor<2>,
    /// Â > 0 and w > 1 + ε_high: clipped from above (no gradient).
    pub clip_high: Tensor<2, Bool>,
    /// Â < 0 and w < 1 − ε_low: clipped from below (no gradient).
    pub clip_low: Tensor<2, Bool>,
    /// Â < 0 tokens capped by the dual clip (no gradient).
    pub dual: Tensor<2, Bool>,
}

/// PPO's clipped surrogate with decoupled ranges (DAPO clip-higher, arXiv 2503.14476 Eq. 10),
/// optional dual clip (Ye et al., arXiv 1912.09729) and two-sided clip (INTELLECT-2); spec §1.3.
///
/// # Formula
/// L1 = −Â·g·w (g: `live_gain`, 1 by default); L2 = −Â·clip(w, 1−ε_low, 1+ε_high);
/// ℓ = max(L1, L2), written as: ℓ = sg(L2) on clipped tokens (Â>0, w>1+ε_high or Â<0,
/// w<1−ε_low, minus `rescued` ones), ℓ = L1 elsewhere; two-sided: Â<0 and w>δ → sg(−Â·δ);
/// dual clip (Â<0): ℓ = min(ℓ, −Â·c). Clipped tokens keep their value (and their place in the
/// denominators) but get no gradient.
pub fn clipped_surrogate(
    w: Tensor<2>,
    adv: &Tensor<2>,
    knobs: &PgKnobs,
    live_gain: Option<Tensor<2>>,
    rescued: Option<Tensor<2, Bool>>,
) -> Surrogate {
    let wd = w.clone().detach();
    let pos = adv.clone().greater_elem(0.0);
    let neg = adv.clone().lower_elem(0.0);
    let clip_high = pos.bool_and(wd.clone().greater_elem(1.0 + knobs.eps_high));
    let clip_low = neg
        .clone()
        .bool_and(wd.clone().lower_elem(1.0 - knobs.eps_low));
    let mut clipped = clip_high.clone().bool_or(clip_low.clone());
    if let Some(r) = rescued {
        clipped = clipped.bool_and(r.bool_not());
    }
    let neg_adv = adv.clone().neg();
    let live = match live_gain {
        Some(g) => neg_adv.clone() * w * g,
        None => neg_adv.clone() * w,
    }; // L1
    let clipped_value =
        neg_adv.clone() * wd.clone().clamp(1.0 - knobs.eps_low, 1.0 + knobs.eps_high); // L2
    let mut per_token = live.mask_where(clipped.clone(), clipped_value);
    if knobs.two_sided_delta > 0.0 {
        let over = neg
            .clone()
            .bool_and(wd.greater_elem(knobs.two_sided_delta))
            .bool_and(clipped.bool_not());
        per_token = per_token.mask_where(over, neg_adv.clone() * knobs.two_sided_delta);
    }
    let dual = if knobs.dual_clip_c > 0.0 {
        let cap = neg_adv * knobs.dual_clip_c;
        let dual = neg.bool_and(per_token.clone().detach().greater(cap.clone()));
        per_token = per_token.mask_where(dual.clone(), cap);
        dual
    } else {
        adv.clone().zeros_like().greater_elem(1.0)
    };
    Surrogate {
        per_token,
        clip_high,
        clip_low,
        dual,
    }
}

/// Resolves the constant L of `seq_mean_token_sum_norm`.
fn norm_len(knobs: &PgKnobs, ctx: &LossContext) -> Result<usize> {
    if knobs.aggregation != Aggregation::SeqMeanTokenSumNorm || knobs.norm_len > 0 {
        return Ok(knobs.norm_len);
    }
    ctx.max_response_len
        .filter(|&l| l > 0)
        .ok_or(Error::InvalidConfig {
            field: "norm_len",
            value: "0".into(),
            reason: "0 takes the length from LossContext::with_max_response_len, which was not set",
        })
}

/// The detached quantities a method sees before the surrogate is formed.
pub(crate) struct Prepared<'a> {
    /// The batch.
    pub batch: &'a PolicyBatch,
    /// Detached importance weights (token or sequence level).
    pub weights: Tensor<2>,
}

/// The objective every registry entry runs: the clipped surrogate on `knobs`, with the
/// method's extra terms, TIS, aggregation, the KL and entropy terms, and the metrics.
pub(crate) fn clipped_pg_loss(
    batch: &PolicyBatch,
    knobs: &PgKnobs,
    ctx: &LossContext,
    method: &'static str,
    terms: impl FnOnce(&Prepared) -> Result<MethodTerms>,
) -> Result<LossOutput> {
    knobs.validate()?;
    let l_norm = norm_len(knobs, ctx)?;
    let w = importance_weights(batch, knobs.ratio_level);
    let prepared = Prepared {
        batch,
        weights: w.clone().detach(),
    };
    let extra = terms(&prepared)?;
    let mut metrics: Metrics = extra.metrics;

    // Effective mask: response tokens, minus vetoed ones, minus TIS-masked ones (spec §9).
    let mut mask = batch.mask.clone();
    if let Some(keep) = extra.keep {
        mask = mask * keep;
    }
    let surrogate = clipped_surrogate(w, &batch.advantages, knobs, extra.live_gain, extra.rescued);
    let mut per_token = surrogate.per_token;
    if let Some(weight) = extra.token_weight {
        per_token = per_token * weight;
    }
    if knobs.tis != TisMode::Off {
        let sampler = batch.sampler_logp.as_ref().ok_or(Error::MissingTensor {
            name: "sampler_logp",
            method,
            why: "tis is on; pass the sampler's log-probs or set tis = \"off\"",
        })?;
        let tis = tis_terms(
            &batch.old_logp,
            sampler,
            &batch.mask,
            knobs.tis,
            knobs.tis_level,
            knobs.tis_cap,
        );
        per_token = per_token * tis.weight;
        mask = mask * tis.keep;
        put(
            &mut metrics,
            "tis_weight_mean",
            mean_metric(&tis.raw, &batch.mask),
        );
        put(
            &mut metrics,
            "tis_over_cap_frac",
            frac_metric(&tis.raw.greater_elem(knobs.tis_cap), &batch.mask),
        );
    }
    // DelTA's coefficients reweight the surrogate only (self-normalized); KL and entropy keep
    // the plain aggregation.
    let pg_loss = match &batch.token_coef {
        Some(coef) => {
            aggregate_weighted(per_token, &mask, coef, knobs.aggregation, ctx.batch_totals)?
        }
        None => aggregate_over(
            per_token,
            &mask,
            knobs.aggregation,
            l_norm,
            ctx.batch_totals,
        ),
    };
    put(&mut metrics, "pg_loss", scalar(pg_loss.clone()));
    let mut loss = pg_loss;

    if let Some(ref_logp) = &batch.ref_logp {
        let kl = kl_per_token(batch.logp.clone(), ref_logp.clone(), knobs.kl_estimator);
        put(&mut metrics, "kl_ref", mean_metric(&kl, &batch.mask));
        if knobs.kl_coef > 0.0 && !knobs.kl_in_reward {
            let kl_loss = aggregate_over(kl, &mask, knobs.aggregation, l_norm, ctx.batch_totals);
            put(&mut metrics, "kl_loss", scalar(kl_loss.clone()));
            loss = loss + kl_loss * knobs.kl_coef;
        }
    } else if knobs.kl_coef > 0.0 && !knobs.kl_in_reward {
        return Err(Error::MissingTensor {
            name: "ref_logp",
            method,
            why: "kl_coef > 0 puts a KL term in the loss; keep a reference model or set kl_coef = 0",
        });
    }
    if let Some(entropy) = &batch.entropy {
        put(&mut metrics, "entropy", mean_metric(entropy, &batch.mask));
        if knobs.entropy_coef != 0.0 {
            let ent = aggregate_over(
                entropy.clone(),
                &mask,
                knobs.aggregation,
                l_norm,
                ctx.batch_totals,
            );
            loss = loss - ent * knobs.entropy_coef;
        }
    } else if knobs.entropy_coef != 0.0 {
        return Err(Error::MissingTensor {
            name: "entropy",
            method,
            why: "entropy_coef != 0 needs the per-token entropy; pass it or set entropy_coef = 0",
        });
    }

    put(&mut metrics, "loss", scalar(loss.clone()));
    put(
        &mut metrics,
        "clip_frac_high",
        frac_metric(&surrogate.clip_high, &batch.mask),
    );
    put(
        &mut metrics,
        "clip_frac_low",
        frac_metric(&surrogate.clip_low, &batch.mask),
    );
    put(
        &mut metrics,
        "dual_clip_frac",
        frac_metric(&surrogate.dual, &batch.mask),
    );
    let approx_kl = batch.old_logp.clone() - batch.logp.clone().detach();
    put(
        &mut metrics,
        "approx_kl_old",
        mean_metric(&approx_kl, &batch.mask),
    );
    let (lo, mean, hi) = min_mean_max(&prepared.weights, &batch.mask);
    put(&mut metrics, "ratio_min", lo);
    put(&mut metrics, "ratio_mean", mean);
    put(&mut metrics, "ratio_max", hi);
    if let Some(frac) = ctx.zero_adv_group_frac {
        put(&mut metrics, "zero_adv_group_frac", frac);
    }
    Ok(LossOutput { loss, metrics })
}
