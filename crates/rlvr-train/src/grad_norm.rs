//! Global gradient-norm measurement and clipping over a module's parameters.
//!
//! burn's own `GradientClipping` clips each parameter on its own; PPO-style trainers clip the
//! norm of all gradients together (`torch.nn.utils.clip_grad_norm_`), which is what this does.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

/// The L2 norm of all gradients of `module`'s parameters, as one number.
pub fn global_norm<M: Module>(module: &M, grads: &GradientsParams) -> f64 {
    struct SumSquares<'a> {
        grads: &'a GradientsParams,
        total: Option<Tensor<1>>,
    }
    impl ModuleVisitor for SumSquares<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.get::<D>(param.id) {
                let s = g.square().sum();
                self.total = Some(match self.total.take() {
                    Some(t) => t + s,
                    None => s,
                });
            }
        }
    }
    let mut visitor = SumSquares { grads, total: None };
    module.visit(&mut visitor);
    visitor
        .total
        .map_or(0.0, |t| f64::from(t.into_scalar::<f32>()).sqrt())
}

/// Scales every gradient by `max_norm / norm` when `norm > max_norm`; returns the scale applied.
pub fn clip_global_norm<M: Module>(
    module: &M,
    grads: &mut GradientsParams,
    norm: f64,
    max_norm: f64,
) -> f64 {
    if max_norm <= 0.0 || norm <= max_norm {
        return 1.0;
    }
    struct Scale<'a> {
        grads: &'a mut GradientsParams,
        factor: f64,
    }
    impl ModuleVisitor for Scale<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.remove::<D>(param.id) {
                self.grads.register(param.id, g.mul_scalar(self.factor));
            }
        }
    }
    // The small epsilon matches PyTorch's clip_grad_norm_.
    let factor = max_norm / (norm + 1e-6);
    module.visit(&mut Scale { grads, factor });
    factor
}

/// ‖∇W‖_F of the output projection: `lm_head.weight`, or the tied `embed_tokens.weight` (whose
/// gradient then mixes in the input-side embedding gradient, as DGG's spec notes); 0 when the
/// gradients hold none. DGG's gradient energy is its square (methods-core §7).
pub fn lm_head_grad_norm(model: &rlvr_models::CausalLm, grads: &GradientsParams) -> f64 {
    let id = match &model.lm_head {
        Some(head) => head.weight.id,
        None => model.model.embed_tokens.weight.id,
    };
    grads.get::<2>(id).map_or(0.0, |g| {
        f64::from(g.square().sum().into_scalar::<f32>()).sqrt()
    })
}
