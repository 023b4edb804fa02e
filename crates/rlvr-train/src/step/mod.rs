//! One RL step, in data-flow order, one file per phase:
//!
//! 1. [`rollout`], rollout and verify: prompts → G samples per prompt on the no-grad policy →
//!    verifier rewards (dynamic sampling drops groups whose rewards are all equal and draws
//!    more);
//! 2. [`advantage`]: reward shaping → the `[stages]` pipeline (the objective's own estimator
//!    when every stage is off) → per-sample advantages and token offsets (SRaR's steps; CEPO's
//!    and OPPO's from [`conditioned`] passes of the policy, [`token_credit`]; AMR-SD's hints
//!    from [`reflection`]; the dense code reward's line penalties, [`exec_credit`]);
//!    With `rollout.max_staleness` > 0 the first round may come from [`prefetch`], sampled
//!    during an earlier step's update;
//!    With `[geox]`, [`geox`] first turns the proposers' samples into tasks, has the policy
//!    answer them and rewards each proposal by its learnability;
//! 3. [`binac`] (with `[binac]`): feedback on the drafts and revisions with it in context,
//!    appended to the batch with their own group advantages;
//! 4. [`update`]: per mini-batch (split by [`micro_batch`] for gradient accumulation),
//!    log-probs under autodiff → loss → backward → clip → optimizer step (DGG's gate, OWPO's
//!    ratchet) → metrics.

pub mod advantage;
pub mod binac;
pub mod conditioned;
pub mod exec_credit;
pub mod geox;
pub mod hard_guidance;
pub mod micro_batch;
pub mod prefetch;
pub mod reflection;
pub mod rollout;
pub mod scrl;
pub mod srar_judge;
pub mod token_credit;
pub mod update;

use crate::error::Result;
use crate::metrics::Metrics;
use crate::trainer::Trainer;

/// Runs RL step `step` (0-based) of `trainer` and returns its metrics.
pub fn rl_step(tr: &mut Trainer, step: usize) -> Result<Metrics> {
    rl_step_with_batch(tr, step).map(|(m, _)| m)
}

/// [`rl_step`], also returning the step's kept rollout batch with rewards and advantages (the
/// run's completions table reads it).
pub fn rl_step_with_batch(tr: &mut Trainer, step: usize) -> Result<(Metrics, rollout::Rollouts)> {
    let mut m = Metrics::new();
    let mut batch = rollout::collect(tr, step, &mut m)?;
    let proposed = geox::self_play(tr, step, &mut batch, &mut m)?;
    let zero_group_frac = advantage::assign(tr, &mut batch, &mut m)?;
    batch.samples.extend(proposed);
    binac::extend(tr, step, &mut batch, &mut m)?;
    // Asynchronous rollouts: the next steps' first rounds sample while this step trains.
    prefetch::top_up(tr, step)?;
    update::update(tr, step, &batch, zero_group_frac, &mut m)?;
    Ok((m, batch))
}
