//! Weights stored in a narrower float type than they are computed in: a model whose weights are
//! not trained (a KL reference, the frozen base under LoRA) can keep them as bf16 or f16, half
//! the memory of f32, while every forward pass still computes in f32: each weight is cast to
//! f32 where it is used ([`compute`]), so the result equals the f32 model's with its weights
//! rounded to the storage type.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{DType, Tensor};
use serde::{Deserialize, Serialize};

use crate::model::CausalLm;

/// The float type weights are stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightDtype {
    /// 32-bit IEEE float (4 bytes a weight); computation's own type.
    #[default]
    F32,
    /// bfloat16 (2 bytes; f32's exponent range, 8 significant bits).
    Bf16,
    /// IEEE half (2 bytes; 11 significant bits, range up to 65,504).
    F16,
}

impl WeightDtype {
    /// The name configs use: `"f32"`, `"bf16"`, `"f16"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::Bf16 => "bf16",
            Self::F16 => "f16",
        }
    }

    /// burn's dtype.
    pub fn dtype(self) -> DType {
        match self {
            Self::F32 => DType::F32,
            Self::Bf16 => DType::BF16,
            Self::F16 => DType::F16,
        }
    }
}

/// `t` in f32, the type forward passes compute in: a no-op for f32 weights, a cast for weights
/// stored narrower.
pub(crate) fn compute<const D: usize>(t: Tensor<D>) -> Tensor<D> {
    if t.dtype() == DType::F32 {
        t
    } else {
        t.cast(DType::F32)
    }
}

/// `model` with every float parameter that does not require a gradient stored as `dtype`
/// (rounded to nearest): all of a no-grad model (`model.valid()`, a reference), the frozen base
/// of a LoRA model on an autodiff device (its adapters stay f32). Parameter ids and flags are
/// kept. Forward passes, log-probs and generation work unchanged, in f32. Trainable weights are
/// left as they are: an optimizer step on a narrowed weight would round every update away.
pub fn store_weights_as(model: CausalLm, dtype: WeightDtype) -> CausalLm {
    struct Cast(DType);
    impl ModuleMapper for Cast {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let to = self.0;
            let t = param.val();
            if t.dtype() == to || t.is_require_grad() {
                return param;
            }
            param.map(|t| t.cast(to))
        }
    }
    model.map(&mut Cast(dtype.dtype()))
}

/// Bytes the float parameters of `module` occupy in their stored types.
pub fn weight_bytes<M: Module>(module: &M) -> usize {
    struct Bytes(usize);
    impl ModuleVisitor for Bytes {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let t = param.val();
            self.0 += t.shape().num_elements() * t.dtype().size();
        }
    }
    let mut bytes = Bytes(0);
    module.visit(&mut bytes);
    bytes.0
}
