//! Muon: momentum, then Newton–Schulz orthogonalisation with the quintic `(3.4445, −4.7750,
//! 2.0315)`, shape-scaled, with decoupled weight decay.
//!
//! # References
//! - Keller Jordan, "Muon: An optimizer for hidden layers in neural networks" (2024),
//!   <https://kellerjordan.github.io/posts/muon/>, code `KellerJordan/Muon` `muon.py`.
//! - Liu et al., "Muon is Scalable for LLM Training", arXiv 2502.16982 (the `0.2·sqrt(max)` rule).
//!
//! burn-optim ships a `Muon` too; this one exists because its Newton–Schulz must be the one
//! Pion shares ([`NewtonSchulz`]), with a per-head block mode burn's lacks.

use burn::optim::{LearningRate, MuonState, Optimizer};
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::adamw::AdamwConfig;
use crate::error::{Error, Result};
use crate::matrix_step::{MatrixLayout, MatrixStep, UpdateScale, momentum};
use crate::newton_schulz::{HeadSplit, NewtonSchulz, Quintic};
use crate::param_groups::RoutingConfig;

/// Muon knobs, plus the AdamW side optimizer and the routing of the hybrid.
///
/// # Formula (per hidden 2-D parameter `W`, gradient `G`)
/// 1. `v ← β·v + G`; `u = G + β·v` (Nesterov) or `u = v`;
/// 2. `O = NS₅(u)` with [`Quintic::MUON`] (Frobenius-normalised, tall matrices transposed);
/// 3. `W ← W·(1 − lr_m·wd)`, `lr_m = lr·lr_ratio`;
/// 4. `W ← W − lr_m·scale(W)·O`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MuonConfig {
    /// Matrix lr as a multiple of the base (AdamW) lr passed to `step`. Default `1.0` (with the
    /// default AdamW-matching scale one lr serves both groups).
    pub lr_ratio: f64,
    /// Momentum β. Default `0.95`.
    pub momentum: f64,
    /// Nesterov momentum. Default `true` (Keller Jordan).
    pub nesterov: bool,
    /// Newton–Schulz steps. Default `5`.
    pub ns_steps: usize,
    /// The quintic `(a, b, c)` used at every step. Default `(3.4445, −4.7750, 2.0315)`.
    pub coefficients: Quintic,
    /// Floor of the Frobenius norm in the normalisation. Default `1e-7`.
    pub epsilon: f32,
    /// Update scale rule. Default `{ rule = "max_dim", factor = 0.2 }` (Moonshot's AdamW match);
    /// `{ rule = "aspect_ratio" }` is Keller Jordan's `sqrt(max(1, fan_out/fan_in))`.
    pub scale: UpdateScale,
    /// Decoupled weight decay on the matrices. Default `0.01`.
    pub weight_decay: f64,
    /// Storage layout of 2-D weights. Default `"in_out"` (burn `Linear`).
    pub layout: MatrixLayout,
    /// The AdamW side optimizer (embeddings, `lm_head`, norms, biases). Defaults as [`AdamwConfig`].
    pub adamw: AdamwConfig,
    /// Which parameters go to Muon. Defaults as [`RoutingConfig`].
    pub routing: RoutingConfig,
}

impl Default for MuonConfig {
    fn default() -> Self {
        Self {
            lr_ratio: 1.0,
            momentum: 0.95,
            nesterov: true,
            ns_steps: 5,
            coefficients: Quintic::MUON,
            epsilon: 1e-7,
            scale: UpdateScale::MATCH_RMS_ADAMW,
            weight_decay: 0.01,
            layout: MatrixLayout::InOut,
            adamw: AdamwConfig::default(),
            routing: RoutingConfig::default(),
        }
    }
}

/// The Muon optimizer for one 2-D parameter (a burn [`Optimizer`]; wrap it with routing via
/// [`OptimizerConfig::init`](crate::OptimizerConfig::init)).
#[derive(Clone)]
pub struct Muon {
    step: MatrixStep,
}

impl MuonConfig {
    /// Builds [`Muon`], iterating per head block when `heads` is given and divides the matrix.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the bad `muon.*` field.
    pub fn build(&self, heads: Option<HeadSplit>) -> Result<Muon> {
        validate_matrix_knobs(
            &MUON_FIELDS,
            self.lr_ratio,
            self.momentum,
            self.ns_steps,
            self.epsilon,
            self.weight_decay,
            self.scale,
        )?;
        Ok(Muon {
            step: MatrixStep {
                momentum: momentum(self.momentum, self.nesterov),
                newton_schulz: NewtonSchulz::muon(self.coefficients, self.ns_steps, self.epsilon),
                scale: self.scale,
                layout: self.layout,
                weight_decay: self.weight_decay,
                lr_ratio: self.lr_ratio,
                heads,
            },
        })
    }
}

impl Optimizer for Muon {
    type State<const D: usize> = MuonState<D>;

    /// One Muon step ([`MuonConfig`] formula).
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

/// The dotted config names of the knobs Muon and Pion share, for error messages.
pub(crate) struct MatrixFields {
    pub(crate) lr_ratio: &'static str,
    pub(crate) momentum: &'static str,
    pub(crate) ns_steps: &'static str,
    pub(crate) epsilon: &'static str,
    pub(crate) weight_decay: &'static str,
    pub(crate) scale: &'static str,
}

const MUON_FIELDS: MatrixFields = MatrixFields {
    lr_ratio: "muon.lr_ratio",
    momentum: "muon.momentum",
    ns_steps: "muon.ns_steps",
    epsilon: "muon.epsilon",
    weight_decay: "muon.weight_decay",
    scale: "muon.scale.factor",
};

/// Range checks shared by Muon and Pion.
pub(crate) fn validate_matrix_knobs(
    fields: &MatrixFields,
    lr_ratio: f64,
    momentum: f64,
    ns_steps: usize,
    epsilon: f32,
    weight_decay: f64,
    scale: UpdateScale,
) -> Result<()> {
    if !(lr_ratio > 0.0 && lr_ratio.is_finite()) {
        return Err(Error::config(
            fields.lr_ratio,
            lr_ratio,
            "must be finite and > 0",
        ));
    }
    if !(0.0..1.0).contains(&momentum) {
        return Err(Error::config(
            fields.momentum,
            momentum,
            "must be in [0, 1)",
        ));
    }
    if ns_steps == 0 {
        return Err(Error::config(fields.ns_steps, ns_steps, "must be >= 1"));
    }
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::config(fields.epsilon, epsilon, "must be > 0"));
    }
    if !(weight_decay.is_finite() && weight_decay >= 0.0) {
        return Err(Error::config(
            fields.weight_decay,
            weight_decay,
            "must be >= 0",
        ));
    }
    if let UpdateScale::MaxDim { factor } = scale
        && !(factor > 0.0 && factor.is_finite())
    {
        return Err(Error::config(
            fields.scale,
            factor,
            "must be finite and > 0",
        ));
    }
    Ok(())
}
