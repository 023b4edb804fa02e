//! NSR: near-boundary stochastic rescue of tokens just beyond the clip range.

use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::clipped_pg::{Prepared, clipped_pg_loss};
use super::knobs::{PgKnobs, RatioLevel, objective_config};
use super::{LossContext, LossOutput, MethodTerms, put};
use crate::batch::PolicyBatch;
use crate::error::{Error, Result, ensure};
use crate::masked::count_metric;
use crate::rng::uniform_draws;

/// Stream constant mixed into the context seed, so NSR's draws differ from any other use of it.
const NSR_STREAM: u64 = 0x4E53_525F_6472_6177; // "NSR_draw"

/// How NSR decides which clipped tokens to rescue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RescueMode {
    /// The digest's reading of the paper: multiply the ratio by u ~ U(u_min, 1); rescue when the
    /// perturbed ratio is back inside the trust region.
    Uniform,
    /// Third-party ports: rescue with probability `band_prob` inside an explicit band beyond the
    /// boundary of relative width `band_width` [PROPOSED].
    Band,
}

/// Rescue probability across the band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BandDecay {
    /// `band_prob` everywhere in the band.
    Constant,
    /// `band_prob` at the boundary, falling linearly to 0 at the band's far edge.
    Linear,
}

objective_config! {
    /// NSR (Yang et al., "Clipping Bottleneck", arXiv 2605.22703): replace the hard drop of
    /// slightly out-of-range tokens by a stochastic keep decision; deep violations stay clipped.
    /// The mechanism follows a digest of the paper; the lower side and the band mode are
    /// **[PROPOSED]** (spec §5).
    ///
    /// # Formula (`uniform`)
    /// Only where clipping is active. u ~ U(u_min, 1), fresh per token (per sequence with
    /// `ratio_level = "sequence"`), from a seeded RNG.
    /// Upper (Â>0, ρ>1+ε_h): rescue iff u·ρ ≤ 1+ε_h; rescued loss −Â·u·ρ (u constant), so
    /// P(rescue | ρ) = (1+ε_h)/ρ for u_min = 0 and the expected gradient weight decays as
    /// (1+ε_h)²/(2ρ²). Lower (Â<0, ρ<1−ε_l): rescue iff u ≤ ρ/(1−ε_l); rescued loss −Â·ρ.
    /// Not rescued: the usual clipped constant.
    ///
    /// # Formula (`band`)
    /// Upper: ρ ∈ (1+ε_h, (1+ε_h)(1+band_width)]; lower: ρ ∈ [(1−ε_l)/(1+band_width), 1−ε_l);
    /// rescue with probability p (`band_decay`), rescued loss −Â·ρ.
    ///
    /// # Knobs (defaults)
    /// DAPO base ([`PgKnobs::DAPO`]); `uniform` with u_min = 0 (no extra knob, as the paper
    /// claims); band 0.1 / 0.5 / constant [PROPOSED].
    pub struct NsrConfig {
        /// `uniform` (default) or `band`.
        pub rescue_mode: RescueMode,
        /// Lower end of u's range in [0, 1); > 0 bounds the rescue band to ρ ≤ (1+ε_h)/u_min.
        pub u_min: f32,
        /// Band mode: relative width of the band beyond each boundary.
        pub band_width: f32,
        /// Band mode: rescue probability at the boundary.
        pub band_prob: f32,
        /// Band mode: `constant` or `linear` decay across the band.
        pub band_decay: BandDecay,
    }
}

impl Default for NsrConfig {
    fn default() -> Self {
        Self::from_common(
            PgKnobs::DAPO,
            RescueMode::Uniform,
            0.0,
            0.1,
            0.5,
            BandDecay::Constant,
        )
    }
}

impl NsrConfig {
    fn validate(&self) -> Result<()> {
        ensure(
            (0.0..1.0).contains(&self.u_min),
            "u_min",
            self.u_min,
            "must be in [0, 1)",
        )?;
        ensure(
            self.band_width > 0.0 && self.band_width.is_finite(),
            "band_width",
            self.band_width,
            "must be > 0",
        )?;
        ensure(
            (0.0..=1.0).contains(&self.band_prob),
            "band_prob",
            self.band_prob,
            "must be in [0, 1]",
        )
    }
}

/// The rescue decision for given uniform draws `u01` in [0, 1) (`[B, T]`).
fn rescue_terms(p: &Prepared, knobs: &PgKnobs, cfg: &NsrConfig, u01: Tensor<2>) -> MethodTerms {
    let w = &p.weights;
    let adv = &p.batch.advantages;
    let (hi, lo) = (1.0 + knobs.eps_high, 1.0 - knobs.eps_low);
    let cand_hi = adv
        .clone()
        .greater_elem(0.0)
        .bool_and(w.clone().greater_elem(hi));
    let cand_lo = adv
        .clone()
        .lower_elem(0.0)
        .bool_and(w.clone().lower_elem(lo));
    let ones = w.ones_like();
    let (rescued_hi, rescued_lo, gain) = match cfg.rescue_mode {
        RescueMode::Uniform => {
            let u = u01 * (1.0 - cfg.u_min) + cfg.u_min;
            let r_hi = cand_hi
                .clone()
                .bool_and((u.clone() * w.clone()).lower_equal_elem(hi));
            let r_lo = cand_lo
                .clone()
                .bool_and((u.clone() * lo).lower_equal(w.clone()));
            let gain = ones.mask_where(r_hi.clone(), u);
            (r_hi, r_lo, gain)
        }
        RescueMode::Band => {
            let far_hi = hi * (1.0 + cfg.band_width);
            let far_lo = lo / (1.0 + cfg.band_width);
            let (p_hi, p_lo) = match cfg.band_decay {
                BandDecay::Constant => (ones.clone() * cfg.band_prob, ones.clone() * cfg.band_prob),
                BandDecay::Linear => (
                    (w.clone().neg() + far_hi).clamp_min(0.0) * (cfg.band_prob / (far_hi - hi)),
                    (w.clone() - far_lo).clamp_min(0.0) * (cfg.band_prob / (lo - far_lo)),
                ),
            };
            let r_hi = cand_hi
                .clone()
                .bool_and(w.clone().lower_equal_elem(far_hi))
                .bool_and(u01.clone().lower(p_hi));
            let r_lo = cand_lo
                .clone()
                .bool_and(w.clone().greater_equal_elem(far_lo))
                .bool_and(u01.lower(p_lo));
            (r_hi, r_lo, ones)
        }
    };
    let rescued = rescued_hi.bool_or(rescued_lo);
    let mut terms = MethodTerms::default();
    let m = &p.batch.mask;
    let candidates = count_metric(&cand_hi.bool_or(cand_lo), m);
    let rescued_n = count_metric(&rescued, m);
    put(&mut terms.metrics, "rescue_candidates", candidates);
    put(&mut terms.metrics, "rescued_tokens", rescued_n);
    put(
        &mut terms.metrics,
        "rescue_rate",
        rescued_n / candidates.max(1.0),
    );
    terms.live_gain = Some(gain);
    terms.rescued = Some(rescued);
    terms
}

/// NSR loss with explicit uniform draws `u01` in [0, 1), row-major `[B, T]` (pure; used by the
/// golden tests). See [`NsrConfig`].
pub fn nsr_loss_with_draws(
    batch: &PolicyBatch,
    cfg: &NsrConfig,
    ctx: &LossContext,
    u01: &[f32],
) -> Result<LossOutput> {
    cfg.validate()?;
    let [b, t] = batch.dims();
    if u01.len() != b * t {
        return Err(Error::LengthMismatch {
            name: "u01",
            expected: b * t,
            got: u01.len(),
        });
    }
    let knobs = cfg.common();
    let u = Tensor::<2>::from_data(TensorData::new(u01.to_vec(), [b, t]), &batch.device());
    clipped_pg_loss(batch, &knobs, ctx, "nsr", |p| {
        Ok(rescue_terms(p, &knobs, cfg, u))
    })
}

/// NSR loss (arXiv 2605.22703, spec §5) with draws from the context seed: one per token, or one
/// per sequence (broadcast) at sequence level.
pub fn nsr_loss(batch: &PolicyBatch, cfg: &NsrConfig, ctx: &LossContext) -> Result<LossOutput> {
    let [b, t] = batch.dims();
    let seed = ctx.seed ^ NSR_STREAM;
    let u01 = match cfg.ratio_level {
        RatioLevel::Token => uniform_draws(seed, b * t),
        RatioLevel::Sequence => uniform_draws(seed, b)
            .into_iter()
            .flat_map(|u| std::iter::repeat_n(u, t))
            .collect(),
    };
    nsr_loss_with_draws(batch, cfg, ctx, &u01)
}
