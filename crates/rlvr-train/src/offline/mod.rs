//! The offline modes: they work on a policy, a dataset or a run rather than on a training step.
//! `g2d` (preference-set collection and offline DPO), `diagnose` (the unlearnability
//! diagnostic), `relex` (checkpoint extrapolation); `params` flattens parameters and gradients
//! in one fixed order for the last two.

pub mod diagnose;
pub mod g2d;
pub mod params;
pub mod relex;
