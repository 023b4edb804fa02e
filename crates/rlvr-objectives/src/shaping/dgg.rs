//! DGG: dynamic gradient gating of lm_head gradient-energy spikes during batch reuse.
//!
//! # Paper
//! Miao et al., "When to Stop Reusing" (Dynamic Gradient Gating),
//! [arXiv 2605.19425](https://arxiv.org/abs/2605.19425) (no code). Specification:
//! `methods-core.md` §7.
//!
//! # Formula
//! g_t = ‖∇W_lm_head‖²_F, Δg_t = g_t − g_{t−1}. Over a sliding window of accepted Δg:
//! Z = (Δg_t − mean_W)/(std_W + 1e-12). Armed once the window is full and the reuse index
//! k > 1 (the first pass over a batch is never gated). If Z > τ the update is skipped (zero the
//! gradients before the optimizer step) and the reuse of this batch ends. The Z-score on Δg,
//! the window W = 8 persisting across batches, the population std and "a gated step's
//! statistics do not enter the window" are **\[PROPOSED]**.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::error::{Result, ensure};

/// Guard in the Z-score denominator (spec §7).
const Z_EPS: f64 = 1e-12;

/// DGG knobs (spec §7).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DggConfig {
    /// τ, the Z-score threshold (default 0.5; the paper recommends [0.1, 0.5]).
    pub threshold: f64,
    /// W, the window of accepted Δg (default 8) \[PROPOSED].
    pub window: usize,
    /// K, the most passes over one rollout batch (default 4); the trainer's epoch count.
    pub max_reuse: usize,
}

impl Default for DggConfig {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            window: 8,
            max_reuse: 4,
        }
    }
}

impl DggConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.threshold.is_finite(),
            "dgg.threshold",
            self.threshold,
            "must be finite",
        )?;
        ensure(self.window >= 2, "dgg.window", self.window, "must be >= 2")?;
        ensure(
            self.max_reuse >= 1,
            "dgg.max_reuse",
            self.max_reuse,
            "must be >= 1",
        )
    }
}

/// DGG's running state (checkpointed with the trainer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DggState {
    /// g of the last accepted update.
    pub last_energy: Option<f64>,
    /// The accepted Δg, oldest first.
    pub window: VecDeque<f64>,
    /// Updates skipped so far.
    pub gate_events: u64,
    /// Z of the last call (0 while unarmed).
    pub last_z: f64,
}

impl DggState {
    /// Whether to apply this mini-batch update, given the lm_head gradient norm ‖∇W‖_F (not
    /// squared) and the 0-based pass `epoch` over the current rollout batch. `false` means: zero
    /// the gradients, skip the optimizer step and stop reusing this batch.
    pub fn gate(&mut self, cfg: &DggConfig, lm_head_grad_norm: f64, epoch: usize) -> bool {
        let g = lm_head_grad_norm * lm_head_grad_norm;
        let Some(prev) = self.last_energy else {
            self.last_energy = Some(g);
            self.last_z = 0.0;
            return true;
        };
        let dg = g - prev;
        self.last_z = 0.0;
        if self.window.len() >= cfg.window && epoch >= 1 {
            let n = self.window.len() as f64;
            let m = self.window.iter().sum::<f64>() / n;
            let sd = (self.window.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt();
            self.last_z = (dg - m) / (sd + Z_EPS);
            if self.last_z > cfg.threshold {
                self.gate_events += 1;
                return false;
            }
        }
        self.window.push_back(dg);
        while self.window.len() > cfg.window {
            self.window.pop_front();
        }
        self.last_energy = Some(g);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec §7 toy example: window mean 0.02, std 0.05; at reuse k = 3 (epoch 2), Δg = 0.06
    /// gives Z = 0.8 > 0.5 → gated. The window {−0.03, 0.07} × 4 has mean 0.02 and population
    /// std 0.05.
    #[test]
    fn toy_example_gates() {
        let cfg = DggConfig::default();
        let mut s = DggState {
            last_energy: Some(1.0),
            window: [-0.03, 0.07, -0.03, 0.07, -0.03, 0.07, -0.03, 0.07].into(),
            ..DggState::default()
        };
        let norm = 1.06f64.sqrt();
        // The first pass over a batch is never gated.
        assert!(s.clone().gate(&cfg, norm, 0));
        assert!(!s.gate(&cfg, norm, 2));
        assert!((s.last_z - 0.8).abs() < 1e-9, "{}", s.last_z);
        assert_eq!(s.gate_events, 1);
        // The gated step left the window and g_prev unchanged.
        assert_eq!(s.last_energy, Some(1.0));
        assert_eq!(s.window.len(), 8);
    }

    #[test]
    fn unarmed_until_the_window_fills() {
        let cfg = DggConfig {
            window: 3,
            threshold: 0.1,
            ..DggConfig::default()
        };
        let mut s = DggState::default();
        for (i, n) in [1.0f64, 1.1, 1.3, 2.0].iter().enumerate() {
            assert!(s.gate(&cfg, *n, i), "step {i}");
        }
        assert_eq!(s.window.len(), 3);
        // A large jump on a reuse pass is now gated.
        assert!(!s.gate(&cfg, 10.0, 1));
    }
}
