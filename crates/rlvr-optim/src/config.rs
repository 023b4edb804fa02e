//! `OptimizerConfig`: the serde-tagged registry of optimizers, read from the run's TOML
//! (`[optimizer] kind = "pion"` plus knobs), and its `init` for any burn module.

use burn::module::Module;
use burn::optim::ModuleOptimizer;
use serde::{Deserialize, Serialize};

use crate::adamw::AdamwConfig;
use crate::error::Result;
use crate::hybrid::RlvrOptimizer;
use crate::matrix_step::MatrixLayout;
use crate::muon::MuonConfig;
use crate::param_groups::{PerHeadConfig, RoutingConfig, hybrid};
use crate::pion::PionConfig;

/// The optimizer of a run. Every knob has a default, so `kind` alone is a valid config.
///
/// ```toml
/// [optimizer]
/// kind = "pion"          # "adamw" | "muon" | "pion"
/// promotion_steps = 0
/// [optimizer.adamw]
/// weight_decay = 0.01
/// [optimizer.routing.per_head]
/// num_heads = 16
/// num_kv_heads = 8
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OptimizerConfig {
    /// burn's AdamW on every parameter.
    Adamw(AdamwConfig),
    /// Muon on hidden matrices, AdamW on the rest.
    Muon(MuonConfig),
    /// Pion on hidden matrices (per head if configured), AdamW on the rest.
    Pion(PionConfig),
}

impl Default for OptimizerConfig {
    /// AdamW with its defaults.
    fn default() -> Self {
        Self::Adamw(AdamwConfig::default())
    }
}

impl OptimizerConfig {
    /// Builds the optimizer for `module`. For Muon and Pion this is the hybrid: 2-D hidden
    /// matrices go to the matrix optimizer, embeddings, `lm_head`, norms and biases to AdamW
    /// (rule in [`param_groups`](crate::param_groups)).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) naming the first bad field.
    pub fn init<M: Module>(&self, module: &M) -> Result<RlvrOptimizer> {
        match self {
            Self::Adamw(config) => {
                let routes = RoutingConfig {
                    adamw_patterns: vec![String::new()],
                    ..RoutingConfig::default()
                }
                .route(module, MatrixLayout::InOut)?;
                Ok(RlvrOptimizer::new(
                    ModuleOptimizer::from(config.build()?),
                    routes,
                ))
            }
            Self::Muon(config) => {
                let routes = config.routing.route(module, config.layout)?;
                let optim = hybrid(&routes, config.adamw.build()?, |heads| config.build(heads))?;
                Ok(RlvrOptimizer::new(optim, routes))
            }
            Self::Pion(config) => {
                let routes = config.routing.route(module, config.layout)?;
                let optim = hybrid(&routes, config.adamw.build()?, |heads| config.build(heads))?;
                Ok(RlvrOptimizer::new(optim, routes))
            }
        }
    }

    /// Turns on per-head Newton–Schulz with the model's head counts (keeping any configured
    /// patterns); no effect for AdamW. The training loop calls this with the model config.
    pub fn with_attention_heads(mut self, num_heads: usize, num_kv_heads: usize) -> Self {
        let routing = match &mut self {
            Self::Adamw(_) => return self,
            Self::Muon(c) => &mut c.routing,
            Self::Pion(c) => &mut c.routing,
        };
        let per_head = routing.per_head.get_or_insert_with(PerHeadConfig::default);
        per_head.num_heads = num_heads;
        per_head.num_kv_heads = num_kv_heads;
        self
    }
}
