//! Bi-NAC's nested rollouts (methods-extra §18, **\[PROPOSED]** loop; the math is
//! `rlvr_objectives::binac`): after the drafts' advantages are assigned, the first
//! `binac.drafts_per_group` drafts of each group get `binac.feedbacks` feedbacks written by the
//! policy in the critic's role (`binac.critic_template`, at most `binac.feedback_max_tokens`
//! tokens), and each feedback `binac.revisions` revisions written by the policy in the actor's
//! role with the feedback in context (`binac.revision_template`). The revisions are verified
//! like the drafts; a feedback's reward is the improvement it caused, less its length and
//! answer-leak penalties. The revisions join the step's batch every step, the feedbacks on the
//! critic's steps only (`binac.actor_steps_per_critic_step`). Actor and critic are the same
//! weights; evaluation stays feedback-free (the actor alone).

use std::time::Instant;

use burn::module::Module;
use rlvr_models::{GenerationConfig, generate};
use rlvr_objectives::binac::placeholders as ph;
use rlvr_objectives::{BinacRollouts, binac_advantages, critic_step};

use super::reflection::{encode, leaks, problem};
use super::rollout::{Rollouts, generation_config, step_seed, to_samples};
use super::token_credit::gold;
use crate::batch::{Sample, group_rows};
use crate::error::Result;
use crate::logprobs::{needs_rescoring, rescore};
use crate::metrics::{Metrics, mean};
use crate::prompt::pad_id;
use crate::trainer::Trainer;
use crate::verify::score;

/// Mixed into the run seed for Bi-NAC's sampling (distinct from the rollouts' seeds).
const BINAC_SEED: u64 = 0x5B1D_7AC0_E3F2_9461;

/// Appends step `step`'s revisions (and, on a critic step, feedbacks) with their rewards and
/// advantages to `batch` (drafts' advantages assigned); a no-op without `[binac]`.
///
/// # Errors
/// A prompt the tokenizer rejects, a generation it cannot decode, an example without a gold
/// answer (the leak check needs it), or a non-finite reward.
pub fn extend(tr: &mut Trainer, step: usize, batch: &mut Rollouts, m: &mut Metrics) -> Result<()> {
    let Some(cfg) = tr.config.binac.clone() else {
        return Ok(());
    };
    let t = Instant::now();
    let g = tr.config.rollout.group_size;
    let (n_fb, n_rev) = (cfg.feedbacks, cfg.revisions);
    let drafts: Vec<usize> = (0..batch.samples.len() / g)
        .flat_map(|gi| (0..cfg.drafts_per_group.min(g)).map(move |k| gi * g + k))
        .collect();
    let rollout = tr.config.rollout.clone();
    let policy = tr.model().valid();
    let seed = tr.config.seed ^ BINAC_SEED;
    let sampling = generation_config(&rollout, &tr.tokenizer, false);
    let fill = |template: &str, d: &Sample, feedback: &str| {
        template
            .replace(ph::PROBLEM, &problem(&tr.train_set[d.example]))
            .replace(ph::DRAFT, &d.text)
            .replace(ph::FEEDBACK, feedback.trim())
    };
    // The critic: M feedbacks per draft.
    let critic_ids = drafts
        .iter()
        .map(|&i| {
            let d = &batch.samples[i];
            encode(tr, d, &fill(&cfg.critic_template, d, ""))
        })
        .collect::<Result<Vec<_>>>()?;
    let draft_examples: Vec<usize> = drafts.iter().map(|&i| batch.samples[i].example).collect();
    let rows = group_rows(&critic_ids, n_fb);
    let feedback_cfg = GenerationConfig {
        max_new_tokens: cfg.feedback_max_tokens,
        ..sampling.clone()
    };
    let outs = generate(&policy, &rows, &feedback_cfg, step_seed(seed, step, 0));
    let mut feedbacks = to_samples(&tr.tokenizer, &draft_examples, rows, outs, n_fb)?;
    // The actor: G' revisions per feedback, verified.
    let revision_ids = feedbacks
        .iter()
        .enumerate()
        .map(|(f, fb)| {
            let d = &batch.samples[drafts[f / n_fb]];
            encode(tr, d, &fill(&cfg.revision_template, d, &fb.text))
        })
        .collect::<Result<Vec<_>>>()?;
    let feedback_examples: Vec<usize> = feedbacks.iter().map(|s| s.example).collect();
    let rows = group_rows(&revision_ids, n_rev);
    let outs = generate(&policy, &rows, &sampling, step_seed(seed, step, 1));
    let mut revisions = to_samples(&tr.tokenizer, &feedback_examples, rows, outs, n_rev)?;
    // The verifier's counters stay the drafts' (this step's `verify/*` metrics).
    let mut scratch = Metrics::new();
    let revision_rewards = score(
        &tr.verifier,
        &tr.config.verifier,
        &tr.train_set,
        &mut revisions,
        &mut scratch,
    );
    let leaked = feedbacks
        .iter()
        .map(|f| Ok(leaks(&f.text, &gold(tr, f, "[binac]")?)))
        .collect::<Result<Vec<bool>>>()?;
    let draft_rewards: Vec<f32> = drafts.iter().map(|&i| batch.samples[i].reward).collect();
    let feedback_tokens: Vec<usize> = feedbacks.iter().map(|f| f.response.len()).collect();
    let out = binac_advantages(
        &cfg,
        &tr.config.objective.advantage_config(),
        &BinacRollouts {
            draft_rewards: &draft_rewards,
            feedback_tokens: &feedback_tokens,
            leaked: &leaked,
            revision_rewards: &revision_rewards,
        },
    )?;
    for ((s, &r), &a) in revisions
        .iter_mut()
        .zip(&revision_rewards)
        .zip(&out.revision_advantages)
    {
        s.reward = r;
        s.advantage = a;
        s.policy_version = step;
    }
    for ((s, &r), &a) in feedbacks
        .iter_mut()
        .zip(&out.critic_rewards)
        .zip(&out.feedback_advantages)
    {
        s.reward = r;
        s.advantage = a;
        s.policy_version = step;
    }
    let critic = critic_step(&cfg, step as u64);
    let sampled: usize = feedbacks
        .iter()
        .chain(&revisions)
        .map(|s| s.response.len())
        .sum();
    let mut added = revisions;
    if critic {
        added.append(&mut feedbacks);
    }
    let (trained_revisions, trained_feedbacks) = (
        drafts.len() * n_fb * n_rev,
        added.len() - drafts.len() * n_fb * n_rev,
    );
    // The same log-prob convention as the drafts (`rollout.rs`).
    if needs_rescoring(&rollout) {
        let sampler = rescore(&policy, &mut added, &rollout, pad_id(&tr.tokenizer));
        if let (Some(all), Some(more)) = (batch.sampler_logp.as_mut(), sampler) {
            all.extend(more);
        }
    }
    drop(policy);
    batch.samples.extend(added);
    let f64s = |xs: &[f32]| mean(xs.iter().map(|&x| f64::from(x)));
    m.insert("binac/draft_reward_mean".into(), f64s(&draft_rewards));
    m.insert("binac/revision_reward_mean".into(), f64s(&revision_rewards));
    m.insert("binac/improvement_mean".into(), f64s(&out.improvement));
    m.insert("binac/critic_reward_mean".into(), f64s(&out.critic_rewards));
    m.insert(
        "binac/leak_frac".into(),
        mean(leaked.iter().map(|&l| f64::from(u8::from(l)))),
    );
    m.insert(
        "binac/feedback_tokens_mean".into(),
        mean(feedback_tokens.iter().map(|&n| n as f64)),
    );
    m.insert("binac/critic_step".into(), f64::from(u8::from(critic)));
    m.insert("binac/trained_revisions".into(), trained_revisions as f64);
    m.insert("binac/trained_feedbacks".into(), trained_feedbacks as f64);
    *m.entry("rollout/sampled_tokens".into()).or_default() += sampled as f64;
    m.insert("time/binac_s".into(), t.elapsed().as_secs_f64());
    Ok(())
}
