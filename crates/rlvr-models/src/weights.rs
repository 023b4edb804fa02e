//! Where parameters come from while a model is built: a checkpoint (by HF name) or a random
//! initialiser.

use burn::tensor::{Device, Distribution, Tensor};

use crate::error::Result;

/// How a parameter is initialised when it is not loaded from a checkpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Init {
    /// N(0, 0.02), the HF `initializer_range` default.
    Normal,
    /// All ones (norm gains).
    Ones,
    /// All zeros (biases).
    Zeros,
}

/// Where parameters come from: a checkpoint (by HF name) or a random initialiser.
pub(crate) trait WeightSource {
    /// The tensor `name` with HF shape `hf_shape`; with `transpose` (2-D only) it is returned as
    /// `[hf_shape[1], hf_shape[0]]`.
    fn tensor<const D: usize>(
        &mut self,
        name: &str,
        hf_shape: [usize; D],
        init: Init,
        transpose: bool,
    ) -> Result<Tensor<D>>;
}

/// Random initialisation (N(0, 0.02) matrices, unit norm gains, zero biases) with the device's RNG.
pub(crate) struct RandomInit(pub Device);

impl WeightSource for RandomInit {
    fn tensor<const D: usize>(
        &mut self,
        _name: &str,
        mut shape: [usize; D],
        init: Init,
        transpose: bool,
    ) -> Result<Tensor<D>> {
        if transpose {
            shape.reverse();
        }
        Ok(match init {
            Init::Normal => Tensor::random(shape, Distribution::Normal(0.0, 0.02), &self.0),
            Init::Ones => Tensor::ones(shape, &self.0),
            Init::Zeros => Tensor::zeros(shape, &self.0),
        })
    }
}
