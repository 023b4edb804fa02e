//! The linear layers of the decoder: `x · W + b`, with an optional LoRA adapter on top.

use burn::module::{Module, Param};
use burn::tensor::{Distribution, Tensor};

use crate::error::Result;
use crate::lora::LoraAdapter;
use crate::weight_dtype::compute;
use crate::weights::{Init, WeightSource};

/// A linear projection `y = x · W + b (+ LoRA)`, the counterpart of a HF `nn.Linear`.
///
/// `weight` is stored in burn's `[in, out]` layout (HF's `[out, in]` transposed); the field
/// names equal the HF ones, so a checkpoint maps onto it directly. With an adapter, the output
/// gains `scale · dropout(x) · A · B` (see [`LoraAdapter`]); `W` and `b` are then frozen.
#[derive(Module, Debug)]
pub struct Projection {
    /// `[in, out]`.
    pub weight: Param<Tensor<2>>,
    /// `[out]`, when the layer has a bias.
    pub bias: Option<Param<Tensor<1>>>,
    /// The low-rank adapter, when LoRA is attached to this layer.
    pub lora: Option<LoraAdapter>,
}

impl Projection {
    /// Loads `{name}.weight` (`[d_out, d_in]` in HF, transposed) and, with `bias`, `{name}.bias`.
    pub(crate) fn load<W: WeightSource>(
        w: &mut W,
        name: &str,
        d_in: usize,
        d_out: usize,
        bias: bool,
    ) -> Result<Self> {
        let weight = w.tensor(&format!("{name}.weight"), [d_out, d_in], Init::Normal, true)?;
        let bias = if bias {
            Some(Param::from_tensor(w.tensor(
                &format!("{name}.bias"),
                [d_out],
                Init::Zeros,
                false,
            )?))
        } else {
            None
        };
        Ok(Self {
            weight: Param::from_tensor(weight),
            bias,
            lora: None,
        })
    }

    /// `(d_in, d_out)`.
    pub fn dims(&self) -> (usize, usize) {
        let [d_in, d_out] = self.weight.shape().dims::<2>();
        (d_in, d_out)
    }

    /// `x · W + b` for `x: [B, T, in]` as one `[B·T, in] · [in, out]` product, plus the adapter's
    /// `scale · (dropout(x) · A) · B` when one is attached.
    ///
    /// burn's `Linear::forward` keeps `[B, T, in] · [1, in, out]` batched when T fills its row
    /// tiles, and then the backward pass forms one `[in, out]` weight gradient per batch row and
    /// sums them; folding B into the rows gives the weight gradient as a single product with
    /// K = B·T (docs/benchmarks.md, "Hot paths"). The reshape is a view for contiguous `x`.
    ///
    /// The adapter path never forms `A · B` nor a gradient of `W`: with `W` frozen, the backward
    /// pass computes only `∂x` through `W` and the small `∂A`, `∂B` (as PEFT's `lora.Linear`).
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [b, t, d_in] = x.dims();
        let (_, d_out) = self.dims();
        let x = x.reshape([b * t, d_in]);
        let mut y = x.clone().matmul(compute(self.weight.val()));
        if let Some(bias) = &self.bias {
            y = y + compute(bias.val()).unsqueeze_dim::<2>(0);
        }
        if let Some(lora) = &self.lora {
            let x = if lora.dropout > 0.0 && x.device().is_autodiff() {
                // Inverted dropout on the adapter's input only, during training (an autodiff
                // device); rollouts and evaluation run on `model.valid()` and see no noise.
                let keep = 1.0 - lora.dropout;
                x.clone().random_like(Distribution::Bernoulli(keep)) * x / keep
            } else {
                x
            };
            y = y + x
                .matmul(compute(lora.lora_a.val()))
                .matmul(compute(lora.lora_b.val()))
                .mul_scalar(lora.scale);
        }
        y.reshape([b, t, d_out])
    }

    /// The weight with the adapter folded in: `W + scale · A · B` (`[in, out]`), or `W`; in f32
    /// whatever `W` is stored in.
    pub fn merged_weight(&self) -> Tensor<2> {
        match &self.lora {
            Some(lora) => {
                let delta = compute(lora.lora_a.val()).matmul(compute(lora.lora_b.val()));
                compute(self.weight.val()) + delta.mul_scalar(lora.scale)
            }
            None => compute(self.weight.val()),
        }
    }
}
