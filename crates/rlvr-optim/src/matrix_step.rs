//! The update shared by Muon and Pion: momentum, Newton–Schulz (whole matrix or per head),
//! shape scaling, decoupled weight decay. Muon and Pion differ only in their [`NewtonSchulz`].

use burn::optim::momentum::{Momentum, MomentumConfig};
use burn::optim::{LearningRate, MuonState};
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use crate::newton_schulz::{HeadSplit, NewtonSchulz};

/// How the rows and columns of a stored 2-D weight map to (fan-in, fan-out).
///
/// Only the [`UpdateScale::AspectRatio`] rule and the default head axes depend on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatrixLayout {
    /// `[d_input, d_output]`: burn's `Linear` (the default).
    #[default]
    InOut,
    /// `[d_output, d_input]`: PyTorch's `nn.Linear`.
    OutIn,
}

impl MatrixLayout {
    /// `(fan_out, fan_in)` of a stored `[rows, cols]` matrix.
    pub fn fans(&self, dims: [usize; 2]) -> (usize, usize) {
        match self {
            Self::InOut => (dims[1], dims[0]),
            Self::OutIn => (dims[0], dims[1]),
        }
    }
}

/// The factor that multiplies the Newton–Schulz output (per head block in per-head mode).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum UpdateScale {
    /// Keller Jordan's `sqrt(max(1, fan_out/fan_in))` (PyTorch's `rows/cols`). For a burn
    /// `Linear` `[in, out] = [512, 1024]`: `sqrt(2) ≈ 1.414`.
    AspectRatio,
    /// `factor·sqrt(max(rows, cols))`. `factor = 0.2` is Moonshot's rule ("Muon is Scalable for
    /// LLM Training", arXiv 2502.16982), which matches AdamW's update RMS so AdamW's lr and weight
    /// decay can be reused: `[1024, 512]` gives `0.2·32 = 6.4`. Pion's RLVR recipe uses
    /// `factor = 5.0` on head blocks.
    MaxDim {
        /// The multiplier of `sqrt(max(rows, cols))`.
        factor: f64,
    },
}

impl UpdateScale {
    /// Moonshot's AdamW-matching rule, `0.2·sqrt(max(rows, cols))`.
    pub const MATCH_RMS_ADAMW: UpdateScale = UpdateScale::MaxDim { factor: 0.2 };

    /// The factor for a `[rows, cols]` matrix (or head block) stored in `layout`.
    pub fn factor(&self, dims: [usize; 2], layout: MatrixLayout) -> f64 {
        match self {
            Self::AspectRatio => {
                let (fan_out, fan_in) = layout.fans(dims);
                (fan_out as f64 / fan_in as f64).max(1.0).sqrt()
            }
            Self::MaxDim { factor } => factor * (dims[0].max(dims[1]) as f64).sqrt(),
        }
    }
}

/// The shared Muon/Pion step for one 2-D parameter.
#[derive(Clone)]
pub(crate) struct MatrixStep {
    pub(crate) momentum: Momentum,
    pub(crate) newton_schulz: NewtonSchulz,
    pub(crate) scale: UpdateScale,
    pub(crate) layout: MatrixLayout,
    pub(crate) weight_decay: f64,
    pub(crate) lr_ratio: f64,
    pub(crate) heads: Option<HeadSplit>,
}

/// The momentum of Muon and Pion in burn's SGD form, `v ← β·v + g` and (Nesterov) `u = g + β·v`.
///
/// The reference implementations use the EMA form `B ← β·B + (1−β)·g`, `u = (1−β)·g + β·B`
/// (`B₀ = 0`), which equals `(1−β)` times this one at every step; the Frobenius normalisation of
/// Newton–Schulz removes the factor, so the updates are identical.
pub(crate) fn momentum(beta: f64, nesterov: bool) -> Momentum {
    Momentum::new(&MomentumConfig {
        momentum: beta,
        dampening: 0.0,
        nesterov,
    })
}

impl MatrixStep {
    /// One step (lr is the base lr; the matrix lr is `lr·lr_ratio`):
    ///
    /// 1. `u = momentum(g)`;
    /// 2. `O = NS(u)`, per head block if `heads` is set and divides the matrix;
    /// 3. `W ← W·(1 − lr_m·wd)` (decoupled weight decay, unscaled lr);
    /// 4. `W ← W − lr_m·scale(rows, cols)·O`.
    pub(crate) fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<MuonState<D>>,
    ) -> (Tensor<D>, Option<MuonState<D>>) {
        assert!(
            D == 2,
            "Muon/Pion update 2-D matrices only, got a rank-{D} parameter; route it to AdamW"
        );
        let shape = tensor.shape();
        let dims = [shape[0], shape[1]];

        // Step 1: momentum.
        let (update, momentum) = self.momentum.transform(grad, state.map(|s| s.momentum));

        // Step 2: Newton–Schulz, per head when requested.
        let update: Tensor<2> = update.reshape(dims);
        let split = self
            .heads
            .and_then(|split| split.block_dims(dims).map(|block| (split, block)));
        let (ortho, block) = match split {
            Some((split, block)) => (
                self.newton_schulz
                    .orthogonalize_heads(update, split)
                    .expect("block_dims checked divisibility"),
                block,
            ),
            None => (self.newton_schulz.orthogonalize(update), dims),
        };
        let ortho: Tensor<D> = ortho.reshape(shape);

        // Step 3: decoupled weight decay with the unscaled matrix lr.
        let lr_matrix = lr * self.lr_ratio;
        let tensor = if self.weight_decay > 0.0 {
            tensor.mul_scalar(1.0 - lr_matrix * self.weight_decay)
        } else {
            tensor
        };

        // Step 4: the update, scaled by the (block) shape.
        let step = lr_matrix * self.scale.factor(block, self.layout);
        (
            tensor - ortho.mul_scalar(step),
            Some(MuonState::new(momentum)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MuonConfig;
    use burn::optim::Optimizer;
    use burn::tensor::Device;

    #[test]
    fn scale_rules_match_hand_examples() {
        // burn Linear [in, out] = [512, 1024]: Keller's sqrt(max(1, out/in)) = sqrt(2).
        let keller = UpdateScale::AspectRatio.factor([512, 1024], MatrixLayout::InOut);
        assert!((keller - 2f64.sqrt()).abs() < 1e-12);
        // The transposed matrix has out < in: factor 1.
        assert_eq!(
            UpdateScale::AspectRatio.factor([1024, 512], MatrixLayout::InOut),
            1.0
        );
        // PyTorch layout [out, in] = [1024, 512]: sqrt(2) again.
        let torch = UpdateScale::AspectRatio.factor([1024, 512], MatrixLayout::OutIn);
        assert!((torch - 2f64.sqrt()).abs() < 1e-12);
        // Moonshot: 0.2·sqrt(1024) = 6.4 either way round.
        let moonshot = UpdateScale::MATCH_RMS_ADAMW.factor([1024, 512], MatrixLayout::InOut);
        assert!((moonshot - 6.4).abs() < 1e-12);
    }

    #[test]
    #[should_panic(expected = "route it to AdamW")]
    fn a_bias_given_to_muon_panics_with_the_routing_hint() {
        let device = Device::flex();
        let muon = MuonConfig::default().build(None).unwrap();
        let bias = Tensor::<1>::zeros([4], &device);
        let _ = muon.step(0.1, bias.clone(), bias, None);
    }
}
