//! Pion: Muon's pipeline with a spectral high-pass Newton–Schulz schedule (promotion steps, then
//! suppression steps), usually per attention head.
//!
//! # References
//! - "Pion: sPectral hIgh-pass Optimization on momeNtum", arXiv 2605.19282; code
//!   `OPTML-Group/Pion` (`pion.py`, `RL/verl/verl/utils/muon.py` `PerHeadPionAdamW`).
//!   Not to be confused with the spectrum-preserving "Pion" of Sphere-AI-Lab.

use burn::optim::{LearningRate, MuonState, Optimizer};
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::adamw::AdamwConfig;
use crate::error::Result;
use crate::matrix_step::{MatrixLayout, MatrixStep, UpdateScale, momentum};
use crate::muon::{MatrixFields, validate_matrix_knobs};
use crate::newton_schulz::{HeadSplit, NewtonSchulz};
use crate::param_groups::RoutingConfig;

/// Pion knobs, plus the AdamW side optimizer and the routing of the hybrid. Defaults are the
/// official RLVR recipe (`PerHeadPionAdamW` in the Pion repository's verl fork).
///
/// # Formula (per hidden 2-D parameter or head block `W`, gradient `G`)
/// 1. `v ← β·v + G`; `u = G + β·v` (Nesterov) or `u = v`;
/// 2. `X = u/‖u‖_F`; `k_p` steps of `f_p(σ) = 1.875σ − 1.25σ³ + 0.375σ⁵`, then `k − k_p` steps of
///    `f_s(σ) = 2.5σ³ − 1.5σ⁵` (high-pass: σ above ≈0.8 go to 1, below go to 0 when `k_p = 0`);
/// 3. `W ← W·(1 − lr_m·wd)`, `lr_m = lr·lr_ratio`;
/// 4. `W ← W − lr_m·scale_factor·sqrt(max(rows, cols))·O` (rows, cols of the head block).
///
/// With `k_p = 0` at most one direction can exceed ≈0.8 after normalisation (Σσ² = 1), so the
/// update is nearly rank-1, and ≈0 when the spectrum is flat: intended by the method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PionConfig {
    /// Matrix lr as a multiple of the base (AdamW) lr passed to `step`. Default `1.0` (the recipe
    /// uses one lr, 1e-6, for both groups).
    pub lr_ratio: f64,
    /// Momentum β. Default `0.95`.
    pub momentum: f64,
    /// Nesterov momentum. Default `false` (RLVR recipe; the standalone `pion.py` uses `true`).
    pub nesterov: bool,
    /// Total Newton–Schulz steps `k`. Default `5`.
    pub ns_steps: usize,
    /// Promotion steps `k_p` (the filter-strength knob: more promotion lowers the cut-off,
    /// σ_c ≈ 0.798 / 0.492 / 0.263 for `k_p` = 0 / 1 / 2). Default `0` (pure suppression, the
    /// RLVR setting). Must be `≤ ns_steps`.
    pub promotion_steps: usize,
    /// Floor of the Frobenius norm in the normalisation. Default `1e-7`.
    pub epsilon: f32,
    /// Update scale rule. Default `{ rule = "max_dim", factor = 5.0 }` (the recipe's
    /// `scale_factor`, meant for head blocks; whole matrices get the same rule).
    pub scale: UpdateScale,
    /// Decoupled weight decay on the matrices. Default `0.01`.
    pub weight_decay: f64,
    /// Storage layout of 2-D weights. Default `"in_out"` (burn `Linear`).
    pub layout: MatrixLayout,
    /// The AdamW side optimizer (embeddings, `lm_head`, norms, biases). Defaults as [`AdamwConfig`].
    pub adamw: AdamwConfig,
    /// Which parameters go to Pion and which are split per head. Defaults as [`RoutingConfig`]
    /// (per-head mode needs the head counts: set `routing.per_head`).
    pub routing: RoutingConfig,
}

impl Default for PionConfig {
    fn default() -> Self {
        Self {
            lr_ratio: 1.0,
            momentum: 0.95,
            nesterov: false,
            ns_steps: 5,
            promotion_steps: 0,
            epsilon: 1e-7,
            scale: UpdateScale::MaxDim { factor: 5.0 },
            weight_decay: 0.01,
            layout: MatrixLayout::InOut,
            adamw: AdamwConfig::default(),
            routing: RoutingConfig::default(),
        }
    }
}

const PION_FIELDS: MatrixFields = MatrixFields {
    lr_ratio: "pion.lr_ratio",
    momentum: "pion.momentum",
    ns_steps: "pion.ns_steps",
    epsilon: "pion.epsilon",
    weight_decay: "pion.weight_decay",
    scale: "pion.scale.factor",
};

/// The Pion optimizer for one 2-D parameter (a burn [`Optimizer`]; wrap it with routing via
/// [`OptimizerConfig::init`](crate::OptimizerConfig::init)).
#[derive(Clone)]
pub struct Pion {
    step: MatrixStep,
}

impl PionConfig {
    /// Builds [`Pion`], iterating per head block when `heads` is given and divides the matrix.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) naming the bad `pion.*` field
    /// (including `promotion_steps > ns_steps`).
    pub fn build(&self, heads: Option<HeadSplit>) -> Result<Pion> {
        validate_matrix_knobs(
            &PION_FIELDS,
            self.lr_ratio,
            self.momentum,
            self.ns_steps,
            self.epsilon,
            self.weight_decay,
            self.scale,
        )?;
        Ok(Pion {
            step: MatrixStep {
                momentum: momentum(self.momentum, self.nesterov),
                newton_schulz: NewtonSchulz::pion(
                    self.ns_steps,
                    self.promotion_steps,
                    self.epsilon,
                )?,
                scale: self.scale,
                layout: self.layout,
                weight_decay: self.weight_decay,
                lr_ratio: self.lr_ratio,
                heads,
            },
        })
    }
}

impl Optimizer for Pion {
    type State<const D: usize> = MuonState<D>;

    /// One Pion step ([`PionConfig`] formula).
    ///
    /// # Panics
    /// If `D != 2` (routing sends such parameters to AdamW).
    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<D>, Option<Self::State<D>>) {
        self.step.step(lr, tensor, grad, state)
    }

    fn to_device<const D: usize>(mut state: Self::State<D>, device: &Device) -> Self::State<D> {
        state.momentum = state.momentum.to_device(device);
        state
    }
}
