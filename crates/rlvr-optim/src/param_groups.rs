//! Parameter routing: which parameter the matrix optimizer (Muon/Pion) gets, which AdamW gets,
//! and which matrices are split per attention head. Decided here, in one place, from each
//! parameter's path and shape, then applied with burn's `ModuleOptimizer::with_group`.
//!
//! # Rule (first match wins)
//! 1. A parameter of rank ≠ 2 (biases, norm gains, scalars, conv kernels) → AdamW. Not
//!    overridable: Muon and Pion are defined on matrices only.
//! 2. A path containing one of `matrix_patterns` → matrix optimizer (the override).
//! 3. A path containing one of `adamw_patterns` (default `embed`, `lm_head`) → AdamW.
//! 4. Any other 2-D parameter → matrix optimizer.
//!
//! A matrix parameter is split per head when `per_head` is set, its path contains one of the
//! query, key/value or output patterns, and the head count divides its head axis; otherwise it
//! is iterated whole. Paths are burn module paths, e.g. `layers.0.self_attn.q_proj.weight`.

use burn::module::{Module, ModuleVisitor, Param, ParamGroup};
use burn::optim::{AdamW, ModuleOptimizer, Optimizer};
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::matrix_step::MatrixLayout;
use crate::newton_schulz::{HeadAxis, HeadSplit};

/// The routing knobs of the Muon/Pion hybrids. Patterns are substrings of the parameter path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoutingConfig {
    /// 2-D parameters whose path contains one of these go to AdamW. Default
    /// `["embed", "lm_head"]` (input embedding and output head, as in Muon and Pion).
    pub adamw_patterns: Vec<String>,
    /// 2-D parameters whose path contains one of these go to the matrix optimizer even if they
    /// match `adamw_patterns`. Default `[]`.
    pub matrix_patterns: Vec<String>,
    /// Per-head Newton–Schulz for attention projections. Default `None` (whole matrices).
    pub per_head: Option<PerHeadConfig>,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        Self {
            adamw_patterns: vec!["embed".into(), "lm_head".into()],
            matrix_patterns: Vec::new(),
            per_head: None,
        }
    }
}

/// Which attention projections are split into head blocks, and into how many.
///
/// Query, key and value projections are split along their output axis (`num_heads` blocks for
/// queries, `num_kv_heads` for keys and values), the output projection along its input axis
/// (`num_heads` blocks). In burn's `[in, out]` layout that is the columns of `q/k/v_proj` and the
/// rows of `o_proj` (spec: PyTorch's `head_split_dim` 0 and 1, swapped).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PerHeadConfig {
    /// Number of query heads (required, ≥ 1).
    pub num_heads: usize,
    /// Number of key/value heads (GQA). Default `0`, meaning `num_heads`.
    pub num_kv_heads: usize,
    /// Paths of query projections. Default `["q_proj"]`.
    pub query_patterns: Vec<String>,
    /// Paths of key and value projections. Default `["k_proj", "v_proj"]`.
    pub key_value_patterns: Vec<String>,
    /// Paths of output projections. Default `["o_proj"]`.
    pub output_patterns: Vec<String>,
}

impl Default for PerHeadConfig {
    fn default() -> Self {
        Self {
            num_heads: 0,
            num_kv_heads: 0,
            query_patterns: vec!["q_proj".into()],
            key_value_patterns: vec!["k_proj".into(), "v_proj".into()],
            output_patterns: vec!["o_proj".into()],
        }
    }
}

impl PerHeadConfig {
    /// Per-head routing for a model with `num_heads` query and `num_kv_heads` key/value heads,
    /// with the default HF projection names.
    pub fn new(num_heads: usize, num_kv_heads: usize) -> Self {
        Self {
            num_heads,
            num_kv_heads,
            ..Self::default()
        }
    }
}

/// Where one parameter goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// burn's AdamW.
    Adamw,
    /// The matrix optimizer (Muon or Pion), whole matrix (`None`) or per head block.
    Matrix(Option<HeadSplit>),
}

/// The routing decision for one parameter (for logs and tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The burn module path, e.g. `layers.0.mlp.gate_proj.weight`.
    pub path: String,
    /// The parameter's shape.
    pub dims: Vec<usize>,
    /// Where it goes.
    pub target: Target,
}

impl RoutingConfig {
    /// Checks the per-head counts.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `routing.per_head.num_heads` when it is 0.
    pub fn validate(&self) -> Result<()> {
        if let Some(per_head) = &self.per_head
            && per_head.num_heads == 0
        {
            return Err(Error::config(
                "routing.per_head.num_heads",
                0,
                "must be >= 1 when per_head is set",
            ));
        }
        Ok(())
    }

    /// Routes every float parameter of `module` (see the module docs for the rule).
    ///
    /// # Errors
    /// As [`validate`](Self::validate).
    pub fn route<M: Module>(&self, module: &M, layout: MatrixLayout) -> Result<Vec<Route>> {
        self.validate()?;
        let mut visitor = ShapeVisitor::default();
        module.visit(&mut visitor);
        Ok(visitor
            .params
            .into_iter()
            .map(|(path, dims)| {
                let target = self.target(&path, &dims, layout);
                Route { path, dims, target }
            })
            .collect())
    }

    fn target(&self, path: &str, dims: &[usize], layout: MatrixLayout) -> Target {
        let contains = |patterns: &[String]| patterns.iter().any(|p| path.contains(p.as_str()));
        if dims.len() != 2 {
            return Target::Adamw;
        }
        if !contains(&self.matrix_patterns) && contains(&self.adamw_patterns) {
            return Target::Adamw;
        }
        let Some(per_head) = &self.per_head else {
            return Target::Matrix(None);
        };
        let (out_axis, in_axis) = match layout {
            MatrixLayout::InOut => (HeadAxis::Cols, HeadAxis::Rows),
            MatrixLayout::OutIn => (HeadAxis::Rows, HeadAxis::Cols),
        };
        let kv_heads = if per_head.num_kv_heads == 0 {
            per_head.num_heads
        } else {
            per_head.num_kv_heads
        };
        let split = if contains(&per_head.query_patterns) {
            Some(HeadSplit {
                heads: per_head.num_heads,
                axis: out_axis,
            })
        } else if contains(&per_head.key_value_patterns) {
            Some(HeadSplit {
                heads: kv_heads,
                axis: out_axis,
            })
        } else if contains(&per_head.output_patterns) {
            Some(HeadSplit {
                heads: per_head.num_heads,
                axis: in_axis,
            })
        } else {
            None
        };
        // A head count that does not divide the axis falls back to the whole matrix.
        Target::Matrix(split.filter(|s| s.block_dims([dims[0], dims[1]]).is_some()))
    }
}

/// Builds the hybrid: `adamw` is the fallback for every parameter; each distinct matrix target
/// gets its own group of exact paths with the optimizer `matrix(heads)`.
pub(crate) fn hybrid<O: Optimizer>(
    routes: &[Route],
    adamw: AdamW,
    matrix: impl Fn(Option<HeadSplit>) -> Result<O>,
) -> Result<ModuleOptimizer> {
    let mut groups: Vec<(Option<HeadSplit>, Vec<String>)> = Vec::new();
    for route in routes {
        if let Target::Matrix(heads) = route.target {
            match groups.iter_mut().find(|(h, _)| *h == heads) {
                Some((_, paths)) => paths.push(route.path.clone()),
                None => groups.push((heads, vec![route.path.clone()])),
            }
        }
    }
    let mut optim = ModuleOptimizer::from(adamw);
    for (heads, paths) in groups {
        optim = optim.with_group(ParamGroup::from_paths(paths), matrix(heads)?, None);
    }
    Ok(optim)
}

/// Collects `(path, shape)` of every float parameter, with the paths burn's `ModuleOptimizer`
/// uses (module names joined by `.`).
#[derive(Default)]
struct ShapeVisitor {
    stack: Vec<String>,
    params: Vec<(String, Vec<usize>)>,
}

impl ModuleVisitor for ShapeVisitor {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let dims = param.shape().to_vec();
        self.params.push((self.stack.join("."), dims));
    }
}
