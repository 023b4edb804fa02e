//! Optimizers for burn modules: AdamW (burn), Muon and Pion over one Newton–Schulz mechanism, and parameter routing.
//!
//! ```ignore
//! use rlvr_optim::OptimizerConfig;
//! let config: OptimizerConfig = toml::from_str(r#"kind = "pion""#)?;
//! let mut optim = config.with_attention_heads(16, 8).init(&model)?;
//! let grads = GradientsParams::from_grads(loss.backward(), &model);
//! model = optim.step(1e-6, model, grads);
//! let state: Vec<u8> = optim.to_bytes()?;   // resume with `optim.load_bytes(&state)`
//! ```
//!
//! - [`OptimizerConfig`]: `adamw` | `muon` | `pion`, serde-tagged by `kind`.
//! - [`NewtonSchulz`]: the one iteration both Muon and Pion run (coefficient schedule, per-head
//!   blocks).
//! - [`Muon`], [`Pion`]: burn [`Optimizer`](burn::optim::Optimizer)s for 2-D parameters.
//! - [`param_groups`]: the routing rule (matrices → Muon/Pion; embeddings, `lm_head`, norms,
//!   biases → AdamW).
//! - AdamW is burn's ([`burn::optim::AdamW`]), configured by [`AdamwConfig`].
#![warn(missing_docs)]

mod adamw;
mod config;
mod error;
mod hybrid;
mod matrix_step;
mod muon;
pub mod newton_schulz;
pub mod param_groups;
mod pion;

pub use adamw::AdamwConfig;
pub use burn::optim::AdamW;
pub use config::OptimizerConfig;
pub use error::{Error, Result};
pub use hybrid::RlvrOptimizer;
pub use matrix_step::{MatrixLayout, UpdateScale};
pub use muon::{Muon, MuonConfig};
pub use newton_schulz::{HeadAxis, HeadSplit, NewtonSchulz, Quintic};
pub use param_groups::{PerHeadConfig, Route, RoutingConfig, Target};
pub use pion::{Pion, PionConfig};
