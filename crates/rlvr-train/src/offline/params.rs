//! A model's float parameters (or their gradients) as flat host vectors in a fixed order, each
//! under its module path (`model.layers.0.self_attn.q_proj.weight`), and back.
//!
//! The order is burn's visiting order, the same for every model of one architecture, so the
//! vectors of two checkpoints line up tensor by tensor (RELEX), and gradients of two prompts
//! line up element by element (the unlearnability diagnostic).

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};

/// One parameter: its path, shape and values.
#[derive(Debug, Clone, PartialEq)]
pub struct FlatParam {
    /// Module path joined by dots.
    pub path: String,
    /// Tensor shape.
    pub shape: Vec<usize>,
    /// Row-major values.
    pub values: Vec<f32>,
}

fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("f32 data")
}

/// Every float parameter of `module`, in visiting order.
pub fn flatten<M: Module>(module: &M) -> Vec<FlatParam> {
    struct Collect {
        path: Vec<String>,
        out: Vec<FlatParam>,
    }
    impl ModuleVisitor for Collect {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.path.push(name.to_string());
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.path.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let t = param.val();
            self.out.push(FlatParam {
                path: self.path.join("."),
                shape: t.dims().to_vec(),
                values: host(t),
            });
        }
    }
    let mut c = Collect {
        path: Vec::new(),
        out: Vec::new(),
    };
    module.visit(&mut c);
    c.out
}

/// The gradients of the parameters of `module` whose path satisfies `keep`, concatenated in
/// visiting order (a parameter without a gradient contributes zeros).
pub fn flat_grads<M: Module>(
    module: &M,
    grads: &GradientsParams,
    keep: impl Fn(&str) -> bool,
) -> Vec<f32> {
    struct Collect<'a, F> {
        path: Vec<String>,
        grads: &'a GradientsParams,
        keep: F,
        out: Vec<f32>,
    }
    impl<F: Fn(&str) -> bool> ModuleVisitor for Collect<'_, F> {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.path.push(name.to_string());
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.path.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if !(self.keep)(&self.path.join(".")) {
                return;
            }
            match self.grads.get::<D>(param.id) {
                Some(g) => self.out.extend(host(g)),
                None => self.out.extend(std::iter::repeat_n(
                    0.0,
                    param.val().dims().iter().product(),
                )),
            }
        }
    }
    let mut c = Collect {
        path: Vec::new(),
        grads,
        keep,
        out: Vec::new(),
    };
    module.visit(&mut c);
    c.out
}

/// `module` with its float parameters replaced, in visiting order, by `values` (which must
/// match [`flatten`]'s shapes; checked by the caller).
pub fn replace<M: Module>(module: M, values: Vec<Vec<f32>>) -> M {
    struct Set {
        values: std::vec::IntoIter<Vec<f32>>,
    }
    impl ModuleMapper for Set {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let v = self.values.next().expect("one value vector per parameter");
            param.map(|t| {
                let shape = t.shape();
                let device = t.device();
                Tensor::from_data(TensorData::new(v, shape), &device)
            })
        }
    }
    module.map(&mut Set {
        values: values.into_iter(),
    })
}
