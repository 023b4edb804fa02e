//! Asynchronous rollouts (`rollout.max_staleness = k`): while step t trains, the first rollout
//! round of each of the steps t+1 ..= t+k is sampled in a background thread, on the inference
//! servers (whatever weights they hold when they answer) or locally on a snapshot of the policy
//! as it was before step t's update. The step that takes a prefetched round verifies it, drops
//! the groups drawn by weights more than k steps old (and samples fresh ones in their place),
//! and trains on the rest with the sampler's log-probs as `objective.tis`'s correction, as
//! pipelined RL systems do (PipelineRL, AReaL, prime-rl). With k = 0 nothing is prefetched: the
//! synchronous loop.
//!
//! A prefetched round is drawn with the prompts and the seed the synchronous loop would give
//! that step's first round, so with unchanged weights both loops sample the same tokens.

use std::thread::JoinHandle;

use burn::module::Module;
use rlvr_models::generate;

use super::rollout::{Drawn, generation_config, sample_groups_remote, step_seed, to_samples};
use crate::batch::group_rows;
use crate::error::Result;
use crate::trainer::Trainer;

/// The first rollout round of a later step, being sampled in a background thread.
pub struct Prefetch {
    /// The (0-based) step whose first round this is.
    pub step: usize,
    /// The data cursor before its prompts were drawn: a checkpoint rewinds to it, so a resumed
    /// run draws these prompts again.
    pub cursor: usize,
    handle: JoinHandle<Result<Drawn>>,
}

impl Prefetch {
    /// Waits for the round to be sampled.
    ///
    /// # Errors
    /// The sampling's error (e.g. a server that failed after its retries).
    pub fn join(self) -> Result<Drawn> {
        // A panic in the sampling thread is a bug: it continues in the caller.
        self.handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// Takes the prefetched round of step `step`, if one was started; rounds prefetched for other
/// steps (none in a well-formed run) are abandoned.
pub fn take(tr: &mut Trainer, step: usize) -> Option<Prefetch> {
    while let Some(p) = tr.prefetched.pop_front() {
        if p.step == step {
            return Some(p);
        }
    }
    None
}

/// During step `step`, before its update: starts sampling the first rounds of the steps up to
/// `step + rollout.max_staleness` that are not started yet and exist (`< train.steps`). The
/// local sampler gets a snapshot of the policy as it is now (the weights of step `step`).
///
/// # Errors
/// A prompt that cannot be rendered or tokenized.
pub fn top_up(tr: &mut Trainer, step: usize) -> Result<()> {
    let k = tr.config.rollout.max_staleness;
    let last = (step + k).min(tr.config.train.steps.saturating_sub(1));
    let first = tr.prefetched.back().map_or(step + 1, |p| p.step + 1);
    for next in first..=last {
        let p = start(tr, next, step)?;
        tr.prefetched.push_back(p);
    }
    Ok(())
}

/// Starts sampling the first round of step `next` with the weights of step `now`.
fn start(tr: &mut Trainer, next: usize, now: usize) -> Result<Prefetch> {
    let rollout = &tr.config.rollout;
    let (g, want) = (
        rollout.group_size,
        rollout.prompts_per_step * tr.config.train.stage_batches,
    );
    let cursor = tr.state.data_cursor;
    let examples = tr.next_prompts(want);
    let (prompt_ids, _) = tr.encode_rollout_prompts(&examples)?;
    let gen_cfg = generation_config(&tr.config.rollout, &tr.tokenizer, false);
    let seed = step_seed(tr.config.seed, next, 0);
    let tokenizer = tr.tokenizer.clone();
    let handle = match &tr.remote {
        Some(engine) => {
            let client = engine.client.clone();
            std::thread::spawn(move || {
                sample_groups_remote(
                    &client,
                    &tokenizer,
                    &examples,
                    &prompt_ids,
                    g,
                    &gen_cfg,
                    seed,
                )
            })
        }
        None => {
            let policy = tr.model().valid();
            std::thread::spawn(move || {
                let prompts = group_rows(&prompt_ids, g);
                let outs = generate(&policy, &prompts, &gen_cfg, seed);
                let mut samples = to_samples(&tokenizer, &examples, prompts, outs, g)?;
                samples.iter_mut().for_each(|s| s.policy_version = now);
                Ok(Drawn::local(samples))
            })
        }
    };
    Ok(Prefetch {
        step: next,
        cursor,
        handle,
    })
}
