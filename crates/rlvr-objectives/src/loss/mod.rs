//! Policy losses: the clipped surrogate shared by the GRPO family and the methods built on it.

pub mod clipped_pg;
pub mod grpo;
pub mod gspo;
pub(crate) mod knobs;
pub mod mu_grpo;
pub mod nfpo;
pub mod nsr;
pub mod owpo;

use std::collections::BTreeMap;

use burn::tensor::{Bool, Tensor};

/// What a loss needs besides the batch: the seed of its random draws (NSR) and a few run values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossContext {
    /// Seed of this mini-batch's random draws; the caller derives it from (run seed, step,
    /// mini-batch), so a resumed run replays the same draws.
    pub seed: u64,
    /// The optimizer step (0-based), for the caller's bookkeeping; no loss reads it (mix it
    /// into `seed` to vary draws per step).
    pub step: usize,
    /// Maximum response length of the run, used as the constant L of `seq_mean_token_sum_norm`
    /// when the config's `norm_len` is 0.
    pub max_response_len: Option<usize>,
    /// Fraction of groups with zero advantage in this batch, copied into the metrics.
    pub zero_adv_group_frac: Option<f64>,
    /// The denominators of the whole optimizer mini-batch when the batch is one micro-batch of
    /// it (gradient accumulation): the micro-batch losses then sum to the mini-batch loss.
    pub batch_totals: Option<crate::aggregate::BatchTotals>,
}

impl LossContext {
    /// A context with the given seed and step and no optional values.
    pub fn new(seed: u64, step: usize) -> Self {
        Self {
            seed,
            step,
            max_response_len: None,
            zero_adv_group_frac: None,
            batch_totals: None,
        }
    }

    /// Sets the run's maximum response length.
    pub fn with_max_response_len(mut self, len: usize) -> Self {
        self.max_response_len = Some(len);
        self
    }

    /// Marks the batch as a micro-batch of a mini-batch with these denominators
    /// ([`crate::BatchTotals`]).
    pub fn with_batch_totals(mut self, totals: crate::aggregate::BatchTotals) -> Self {
        self.batch_totals = Some(totals);
        self
    }

    /// Sets the zero-advantage group fraction reported as `objective/zero_adv_group_frac`.
    pub fn with_zero_adv_group_frac(mut self, frac: f64) -> Self {
        self.zero_adv_group_frac = Some(frac);
        self
    }
}

/// Metrics of one loss evaluation, keyed `objective/...`.
pub type Metrics = BTreeMap<String, f64>;

/// The scalar loss (to call `.backward()` on) and its metrics.
#[derive(Debug, Clone)]
pub struct LossOutput {
    /// One-element loss tensor, to minimise.
    pub loss: Tensor<1>,
    /// `objective/...` metrics: clip fractions, KL, ratio statistics, method counters.
    pub metrics: Metrics,
}

/// What a method adds to the shared clipped surrogate, computed from detached values.
#[derive(Default)]
pub(crate) struct MethodTerms {
    /// Detached factor on the live (unclipped) branch: NFPO's forward trace, NSR's u.
    pub live_gain: Option<Tensor<2>>,
    /// Tokens exempt from clipping (NSR's rescued tokens).
    pub rescued: Option<Tensor<2, Bool>>,
    /// Detached positive weight on each token's policy loss (OWPO).
    pub token_weight: Option<Tensor<2>>,
    /// 0/1 factor on the loss mask (Mu-GRPO's veto): 0 removes a token from every term and
    /// from the denominators.
    pub keep: Option<Tensor<2>>,
    /// Method counters.
    pub metrics: Metrics,
}

/// Inserts `objective/<key>`.
pub(crate) fn put(metrics: &mut Metrics, key: &str, value: f64) {
    metrics.insert(format!("objective/{key}"), value);
}
