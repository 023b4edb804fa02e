//! GeoX-style self-play (methods-extra §21, **\[PROPOSED]** loop; the rewards are
//! `rlvr_objectives::geox`), text only on the grid-program tasks of
//! `rlvr_verifiers::grid_program`: the rollout's proposer prompts (`P D=`, records whose mode
//! is `propose_*`) make the policy write tasks as programs; each proposal that runs becomes a
//! solver prompt (`D RRU 23=`), which the same policy answers `geox.solver_samples` times,
//! scored by execution. A proposal's reward is its learnability for the current solver (an
//! invalid one earns `geox.invalid_reward`), replacing the verifier's validity reward before
//! the group advantages; the answers to proposed tasks join the step's batch with their own
//! group advantages. Both roles train; evaluation is the solver on held-out tasks.

use std::time::Instant;

use burn::module::Module;
use rlvr_models::generate;
use rlvr_objectives::geox_rewards;
use rlvr_verifiers::Reference;
use rlvr_verifiers::grid_program::task::{GridTask, answer_of, propose};

use super::reflection::encode;
use super::rollout::{Rollouts, generation_config, step_seed, to_samples};
use crate::batch::{Sample, group_rows};
use crate::error::Result;
use crate::logprobs::{needs_rescoring, rescore};
use crate::metrics::{Metrics, mean};
use crate::prompt::pad_id;
use crate::trainer::Trainer;
use crate::verify::reference_of;

/// Mixed into the run seed for the solver's answers to proposed tasks.
const GEOX_SEED: u64 = 0x6E0C_5E1F_9A7D_2B43;

/// The answers to step `step`'s proposed tasks, rewarded and with their advantages, after the
/// proposers' rewards in `batch` are set to their learnability; nothing without `[geox]`.
/// Append them to the batch after its advantages are assigned.
///
/// # Errors
/// A prompt the tokenizer rejects, a generation it cannot decode, or a non-finite reward.
pub fn self_play(
    tr: &Trainer,
    step: usize,
    batch: &mut Rollouts,
    m: &mut Metrics,
) -> Result<Vec<Sample>> {
    let Some(cfg) = tr.config.geox.clone() else {
        return Ok(Vec::new());
    };
    let t = Instant::now();
    let n = cfg.solver_samples;
    // The proposals: samples of proposer records, each read and run.
    let mut proposers: Vec<usize> = Vec::new();
    let mut tasks: Vec<Option<GridTask>> = Vec::new();
    for (i, s) in batch.samples.iter().enumerate() {
        let reference = reference_of(&tr.config.verifier, &tr.train_set[s.example])?;
        let Reference::GridProgram { mode, .. } = reference else {
            continue;
        };
        let Some(solver_mode) = mode.proposed() else {
            continue;
        };
        proposers.push(i);
        tasks.push(answer_of(&s.text).and_then(|a| propose(solver_mode, a)));
    }
    let valid: Vec<bool> = tasks.iter().map(Option::is_some).collect();
    let solvable: Vec<(usize, &GridTask)> = proposers
        .iter()
        .zip(&tasks)
        .filter_map(|(&i, t)| t.as_ref().map(|t| (i, t)))
        .collect();
    // The solver: n answers per proposed task, scored by execution.
    let rollout = tr.config.rollout.clone();
    let policy = tr.model().valid();
    let prompt_ids = solvable
        .iter()
        .map(|&(i, task)| encode(tr, &batch.samples[i], &task.prompt()))
        .collect::<Result<Vec<_>>>()?;
    let examples: Vec<usize> = solvable
        .iter()
        .map(|&(i, _)| batch.samples[i].example)
        .collect();
    let rows = group_rows(&prompt_ids, n);
    let mut answers = if rows.is_empty() {
        Vec::new()
    } else {
        let sampling = generation_config(&rollout, &tr.tokenizer, false);
        let outs = generate(
            &policy,
            &rows,
            &sampling,
            step_seed(tr.config.seed ^ GEOX_SEED, step, 0),
        );
        to_samples(&tr.tokenizer, &examples, rows, outs, n)?
    };
    let solver_rewards: Vec<f32> = answers
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let solved = answer_of(&a.text).is_some_and(|x| solvable[k / n].1.solved_by(x));
            f32::from(u8::from(solved))
        })
        .collect();
    let out = geox_rewards(
        &cfg,
        &tr.config.objective.advantage_config(),
        &valid,
        &solver_rewards,
    )?;
    for (&i, &r) in proposers.iter().zip(&out.proposer_rewards) {
        batch.samples[i].reward = r;
    }
    for ((a, &r), &adv) in answers
        .iter_mut()
        .zip(&solver_rewards)
        .zip(&out.solver_advantages)
    {
        a.reward = r;
        a.passed = r >= 1.0;
        a.advantage = adv;
        a.policy_version = step;
    }
    // The same log-prob convention as the rollout's samples (`rollout.rs`).
    if needs_rescoring(&rollout) {
        let sampler = rescore(&policy, &mut answers, &rollout, pad_id(&tr.tokenizer));
        if let (Some(all), Some(more)) = (batch.sampler_logp.as_mut(), sampler) {
            all.extend(more);
        }
    }
    drop(policy);
    let f64s = |xs: &[f32]| mean(xs.iter().map(|&x| f64::from(x)));
    m.insert("geox/proposals".into(), proposers.len() as f64);
    m.insert(
        "geox/valid_frac".into(),
        mean(valid.iter().map(|&v| f64::from(u8::from(v)))),
    );
    m.insert(
        "geox/proposer_reward_mean".into(),
        f64s(&out.proposer_rewards),
    );
    m.insert("geox/solve_rate_mean".into(), f64s(&out.solve_rates));
    m.insert(
        "geox/learnable_frac".into(),
        mean(
            out.solve_rates
                .iter()
                .map(|&s| f64::from(u8::from(s > 0.0 && s < 1.0))),
        ),
    );
    m.insert("geox/solver_samples".into(), answers.len() as f64);
    let sampled: usize = answers.iter().map(|s| s.response.len()).sum();
    *m.entry("rollout/sampled_tokens".into()).or_default() += sampled as f64;
    m.insert("time/geox_s".into(), t.elapsed().as_secs_f64());
    Ok(answers)
}
