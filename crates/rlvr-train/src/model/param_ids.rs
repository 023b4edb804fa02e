//! Stable parameter ids: burn gives each parameter a random `ParamId`, and the optimizer keys
//! its state (moments, momenta) by that id. A model loaded from a checkpoint in a new process
//! would get new ids and silently start from an empty optimizer state. Deriving every id from
//! the parameter's path (`layers.0.self_attn.q_proj.weight`) makes a resumed optimizer find its
//! state again.

use burn::module::{Module, ModuleMapper, Param, ParamId};
use burn::tensor::Tensor;

/// Returns `module` with every float parameter's id set to a hash of its path.
pub fn with_path_ids<M: Module>(module: M) -> M {
    module.map(&mut PathIds { path: Vec::new() })
}

struct PathIds {
    path: Vec<String>,
}

impl ModuleMapper for PathIds {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn map_float<const D: usize>(&mut self, mut param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        param.id = ParamId::from(fnv1a(&self.path.join(".")));
        param
    }
}

/// 64-bit FNV-1a: stable across platforms, processes and Rust versions.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::ModuleVisitor;
    use burn::tensor::Device;
    use rlvr_models::{CausalLm, ModelConfig};

    fn ids(model: &CausalLm) -> Vec<u64> {
        struct Ids(Vec<u64>);
        impl ModuleVisitor for Ids {
            fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
                self.0.push(p.id.val());
            }
        }
        let mut v = Ids(Vec::new());
        model.visit(&mut v);
        v.0
    }

    #[test]
    fn two_separately_built_models_get_the_same_unique_ids() {
        let device = Device::flex();
        let config = ModelConfig::tiny(16, 8, 2);
        let a = ids(&with_path_ids(CausalLm::new(&config, &device)));
        let b = ids(&with_path_ids(CausalLm::new(&config, &device)));
        assert_eq!(a, b);
        let unique: std::collections::HashSet<_> = a.iter().collect();
        assert_eq!(unique.len(), a.len(), "paths must give distinct ids");
        assert_ne!(
            ids(&CausalLm::new(&config, &device)),
            ids(&CausalLm::new(&config, &device))
        );
    }

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
