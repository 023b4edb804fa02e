//! AdamW: burn's own optimizer, configured from a serde config with the RLVR defaults.

use burn::optim::{AdamW, AdamWConfig};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// AdamW knobs (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", arXiv 1711.05101).
///
/// The step is burn's [`AdamW`]; this struct only adds serde defaults and validation. The
/// defaults are those of the Pion RLVR recipe (betas `(0.9, 0.999)`, eps `1e-8`, wd `0.01`).
/// Used alone (`kind = "adamw"`) and as the side optimizer of the Muon/Pion hybrids
/// (embeddings, `lm_head`, norms, biases).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdamwConfig {
    /// First-moment decay β₁. Default `0.9`.
    pub beta1: f32,
    /// Second-moment decay β₂. Default `0.999`.
    pub beta2: f32,
    /// Denominator epsilon. Default `1e-8`.
    pub epsilon: f32,
    /// Decoupled weight decay λ (`W ← W·(1 − lr·λ)`). Default `0.01`.
    pub weight_decay: f32,
}

impl Default for AdamwConfig {
    fn default() -> Self {
        Self {
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            weight_decay: 0.01,
        }
    }
}

impl AdamwConfig {
    /// Checks ranges: betas in `[0, 1)`, epsilon `> 0`, weight decay `≥ 0`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        if !(0.0..1.0).contains(&self.beta1) {
            return Err(Error::config(
                "adamw.beta1",
                self.beta1,
                "must be in [0, 1)",
            ));
        }
        if !(0.0..1.0).contains(&self.beta2) {
            return Err(Error::config(
                "adamw.beta2",
                self.beta2,
                "must be in [0, 1)",
            ));
        }
        if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return Err(Error::config("adamw.epsilon", self.epsilon, "must be > 0"));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(Error::config(
                "adamw.weight_decay",
                self.weight_decay,
                "must be >= 0",
            ));
        }
        Ok(())
    }

    /// burn's [`AdamW`] with these knobs (no gradient clipping: the training loop clips).
    ///
    /// # Errors
    /// As [`validate`](Self::validate).
    pub fn build(&self) -> Result<AdamW> {
        self.validate()?;
        Ok(AdamWConfig::new()
            .with_beta_1(self.beta1)
            .with_beta_2(self.beta2)
            .with_epsilon(self.epsilon)
            .with_weight_decay(self.weight_decay)
            .build())
    }
}
