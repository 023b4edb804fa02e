//! RLVR objectives over masked burn tensors: GRPO and its DAPO / Dr. GRPO / GSPO knobs, RLOO,
//! NFPO, OWPO, Mu-GRPO, NSR.
//!
//! The data flow of one update: per-sequence rewards `[prompts, G]` →
//! [`ObjectiveConfig::shape_rewards`] (overlong penalty, KL-in-reward) → [`compute_advantages`]
//! (group-relative, host side) → [`broadcast_advantages`] → [`PolicyBatch::new`] (shapes checked
//! once) → [`ObjectiveConfig::loss`] → [`LossOutput`] (`loss.backward()`, `objective/...`
//! metrics). Every objective is a pure function over the batch and its config (`loss/*.rs`);
//! the registry enum only dispatches.
//!
//! [`shaping`] holds the optional per-step stages (ACR/AVSPO, CurveRL, LamPO, TMN, POW3R, SRaR,
//! EDAS, DGG, and the token-credit stages CEPO and OPPO) behind one entry point,
//! [`StagesConfig::apply`], and the offline RELEX fit.
//! [`g2d`] builds G2D's static preference pairs from rollout groups and [`dpo`] is the offline
//! DPO objective that trains on them. [`binac`] is Bi-NAC's critic reward (the actor's improvement
//! after the critic's feedback) and its feedback and revision group advantages; [`geox`] is
//! GeoX-style self-play's proposer reward (learnability) and solver group advantages.
//!
//! ```
//! use burn::tensor::Device;
//! use rlvr_objectives::{LossContext, ObjectiveConfig, PolicyBatch, broadcast_advantages,
//!     compute_advantages, tensor_from_rows};
//!
//! let objective: ObjectiveConfig = toml::from_str("kind = \"dapo\"").unwrap();
//! let adv = compute_advantages(&objective.advantage_config(), &[1.0, 0.0], 2).unwrap();
//! let device = Device::flex().autodiff();
//! let logp = tensor_from_rows(&[-1.0, -2.0, -0.5, -0.7], [2, 2], &device).require_grad();
//! let old = tensor_from_rows(&[-1.1, -2.0, -0.4, -0.7], [2, 2], &device);
//! let mask = tensor_from_rows(&[1.0, 1.0, 1.0, 0.0], [2, 2], &device);
//! let batch = PolicyBatch::new(logp.clone(), old, None, None,
//!     broadcast_advantages(&adv.values, 2, &device), mask, None).unwrap();
//! let out = objective.loss(&batch, &LossContext::new(0, 0)).unwrap();
//! let grads = out.loss.backward();
//! assert!(logp.grad(&grads).is_some());
//! assert!(out.metrics.contains_key("objective/clip_frac_high"));
//! ```
#![warn(missing_docs)]

pub mod advantage;
pub mod aggregate;
pub mod batch;
pub mod binac;
pub mod config;
pub mod dpo;
pub mod error;
pub mod g2d;
pub mod geox;
pub mod kl;
pub mod loss;
pub mod masked;
pub mod reward_shaping;
pub mod rng;
pub mod shaping;
mod tis;

pub use advantage::{AdvantageConfig, AdvantageEstimator, Advantages, compute_advantages};
pub use aggregate::{Aggregation, BatchTotals, aggregate, aggregate_over, aggregate_weighted};
pub use batch::{PolicyBatch, broadcast_advantages, tensor_from_rows};
pub use binac::{BinacAdvantages, BinacConfig, BinacRollouts, binac_advantages, critic_step};
pub use config::ObjectiveConfig;
pub use dpo::{DpoConfig, dpo_loss, sequence_logp};
pub use error::{Error, Result};
pub use g2d::{Candidate, G2dConfig, select_pairs};
pub use geox::{GeoxConfig, GeoxRewards, geox_rewards, learnability};
pub use kl::{KlEstimator, kl_per_token, sequence_kl};
pub use loss::grpo::{DapoConfig, DrGrpoConfig, GrpoConfig, RlooConfig, clipped_loss};
pub use loss::gspo::GspoConfig;
pub use loss::knobs::{PgKnobs, RatioLevel, TisMode};
pub use loss::mu_grpo::{MuGrpoConfig, mu_grpo_loss};
pub use loss::nfpo::{NfpoConfig, nfpo_loss};
pub use loss::nsr::{BandDecay, NsrConfig, RescueMode, nsr_loss, nsr_loss_with_draws};
pub use loss::owpo::{OwpoConfig, owpo_loss, reference_update_due};
pub use loss::{LossContext, LossOutput, Metrics};
pub use reward_shaping::{ShapingInput, ShapingStats, overlong_penalty};
pub use shaping::{ShapingState, StageInput, StageOutput, StagesConfig, StepCredit};
