//! Episodes where the run needs samples: a step's rollout groups (G episodes per prompt,
//! turned into [`Sample`]s with their loss masks) and held-out evaluation (the final answers
//! verified as [`PromptEval`]s), with the episode metrics of both.

use std::sync::Arc;

use rlvr_models::{CausalLm, GenerationConfig, Tokenizer};
use rlvr_verifiers::Verifier;

use crate::batch::{Sample, group_rows};
use crate::config::EnvSection;
use crate::data::Example;
use crate::env::tier::{TierConfig, TierParts};
use crate::env::{
    EpisodeSettings, LocalTurns, Trajectory, TurnSampler, new_environment, run_episodes,
};
use crate::error::Result;
use crate::eval::{EvalBatches, PromptEval};
use crate::metrics::Metrics;

/// The episode settings of an `[env]` section.
pub fn settings(section: &EnvSection) -> EpisodeSettings {
    EpisodeSettings {
        max_turns: section.max_turns,
        max_tokens: section.max_tokens,
        observation_template: section.observation_template.clone(),
    }
}

/// How an episode's reward is made from the verifier's score of its answer turn:
/// `answer_weight · verifier + extra`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpisodeReward {
    /// The verifier score's weight (1, or TIER's `w_A`).
    pub answer_weight: f32,
    /// Added: the turn rewards, and under TIER the call checks' part.
    pub extra: f32,
}

impl EpisodeReward {
    /// The episode's reward for a verifier score.
    pub fn apply(&self, verifier: f32) -> f32 {
        self.answer_weight * verifier + self.extra
    }
}

/// An episode's reward terms under `section`'s `reward`.
pub fn episode_reward(section: &EnvSection, t: &Trajectory) -> EpisodeReward {
    match section.tier() {
        None => EpisodeReward {
            answer_weight: 1.0,
            extra: t.env_reward,
        },
        Some(tier) => EpisodeReward {
            answer_weight: tier.answer,
            extra: tier.call_reward(&tier.parts(&t.calls)) + t.env_reward,
        },
    }
}

/// Episode counts over one or more batches, written as the `env/*` metrics.
#[derive(Debug, Clone, Default)]
pub struct EpisodeStats {
    episodes: usize,
    turns: usize,
    tool_calls: usize,
    tool_errors: usize,
    no_answer: usize,
    observation_tokens: usize,
    /// Under TIER: the episodes' `F`, `S`, `E` and failed calls, summed.
    tier: Option<(usize, TierParts)>,
}

impl EpisodeStats {
    /// Counts `trajectories`.
    pub fn add(&mut self, trajectories: &[Trajectory]) {
        for t in trajectories {
            self.episodes += 1;
            self.turns += t.turns;
            self.tool_calls += t.calls.len();
            self.tool_errors += t.failed_calls();
            self.no_answer += usize::from(t.final_text.is_none());
            self.observation_tokens += t.loss_mask.iter().filter(|&&m| !m).count();
        }
    }

    /// Adds TIER's parts of `trajectories` under `tier`.
    pub fn add_tier(&mut self, tier: &TierConfig, trajectories: &[Trajectory]) {
        let (n, sum) = self.tier.get_or_insert_default();
        for t in trajectories {
            let p = tier.parts(&t.calls);
            *n += 1;
            sum.format += p.format;
            sum.schema += p.schema;
            sum.execution += p.execution;
            sum.failed_calls += p.failed_calls;
        }
    }

    /// `env/turns_mean`, `env/tool_calls_mean` (per episode), `env/tool_error_frac` (of
    /// calls), `env/no_answer_frac` (episodes a budget ended) and
    /// `env/observation_tokens_mean`, each under `prefix` (`""` or `"eval/"`).
    pub fn insert_into(&self, m: &mut Metrics, prefix: &str) {
        let per = |x: usize| x as f64 / self.episodes.max(1) as f64;
        m.insert(format!("{prefix}env/turns_mean"), per(self.turns));
        m.insert(format!("{prefix}env/tool_calls_mean"), per(self.tool_calls));
        m.insert(
            format!("{prefix}env/tool_error_frac"),
            self.tool_errors as f64 / self.tool_calls.max(1) as f64,
        );
        m.insert(format!("{prefix}env/no_answer_frac"), per(self.no_answer));
        m.insert(
            format!("{prefix}env/observation_tokens_mean"),
            per(self.observation_tokens),
        );
        if let Some((n, sum)) = &self.tier {
            let per = |x: f32| f64::from(x) / (*n).max(1) as f64;
            m.insert(format!("{prefix}env/tier_format_mean"), per(sum.format));
            m.insert(format!("{prefix}env/tier_schema_mean"), per(sum.schema));
            m.insert(
                format!("{prefix}env/tier_execution_mean"),
                per(sum.execution),
            );
            m.insert(
                format!("{prefix}env/failed_calls_mean"),
                per(sum.failed_calls as f32),
            );
        }
    }
}

/// Plays `k` episodes for each of `examples` (one environment each, reset on its example).
fn play(
    sampler: &mut dyn TurnSampler,
    tokenizer: &Tokenizer,
    section: &EnvSection,
    examples: &[&Example],
    prompt_ids: &[Vec<u32>],
    k: usize,
    gen_cfg: &GenerationConfig,
    seed: u64,
) -> Result<Vec<Trajectory>> {
    let prompts = group_rows(prompt_ids, k);
    let mut envs = examples
        .iter()
        .flat_map(|&ex| std::iter::repeat_n(ex, k))
        .map(|ex| {
            let mut env = new_environment(section)?;
            env.reset(ex)?;
            Ok(env)
        })
        .collect::<Result<Vec<_>>>()?;
    run_episodes(
        sampler,
        tokenizer,
        &mut envs,
        &prompts,
        gen_cfg,
        &settings(section),
        seed,
    )
}

/// The unscored samples of `group_size` episodes per prompt (row `i` answers
/// `examples[i / group_size]`), and each one's reward terms, which the caller applies to the
/// verifier's score. A sample's `text` is its answer turn, empty when a budget ended the episode
/// (the verifier finds no answer in it). `sampler` samples the turns: [`LocalTurns`] or an
/// inference server's (`rollout_engine::RemoteTurns`).
pub fn sample_episode_groups(
    sampler: &mut dyn TurnSampler,
    tokenizer: &Tokenizer,
    section: &EnvSection,
    dataset: &[Example],
    examples: &[usize],
    prompt_ids: &[Vec<u32>],
    group_size: usize,
    gen_cfg: &GenerationConfig,
    seed: u64,
    stats: &mut EpisodeStats,
) -> Result<(Vec<Sample>, Vec<EpisodeReward>)> {
    let exs: Vec<&Example> = examples.iter().map(|&e| &dataset[e]).collect();
    let trajectories = play(
        sampler, tokenizer, section, &exs, prompt_ids, group_size, gen_cfg, seed,
    )?;
    stats.add(&trajectories);
    if let Some(tier) = section.tier() {
        stats.add_tier(&tier, &trajectories);
    }
    let prompts = group_rows(prompt_ids, group_size);
    let mut env_rewards = Vec::with_capacity(trajectories.len());
    let samples = trajectories
        .into_iter()
        .zip(prompts)
        .enumerate()
        .map(|(i, (t, prompt))| {
            env_rewards.push(episode_reward(section, &t));
            Sample {
                text: t.final_text.unwrap_or_default(),
                loss_mask: t.loss_mask,
                steps: t.steps,
                ..Sample::unscored(
                    examples[i / group_size],
                    prompt,
                    t.response,
                    t.logp,
                    t.finish,
                )
            }
        })
        .collect();
    Ok((samples, env_rewards))
}

/// [`crate::eval::evaluate`] through episodes: `k` episodes per example, their answer turns
/// verified (an episode without one fails).
pub fn evaluate_episodes(
    policy: &CausalLm,
    tokenizer: &Tokenizer,
    section: &EnvSection,
    verifier: &Arc<dyn Verifier>,
    verifier_config: &rlvr_verifiers::VerifierConfig,
    examples: &[Example],
    prompt_ids: &[Vec<u32>],
    gen_cfg: &GenerationConfig,
    batches: EvalBatches,
    stats: &mut EpisodeStats,
) -> Result<Vec<PromptEval>> {
    batches.run(
        verifier,
        verifier_config,
        examples,
        prompt_ids,
        |exs, ids, seed| {
            let refs: Vec<&Example> = exs.iter().collect();
            let mut local = LocalTurns { policy, tokenizer };
            let trajectories = play(
                &mut local, tokenizer, section, &refs, ids, batches.k, gen_cfg, seed,
            )?;
            stats.add(&trajectories);
            Ok(trajectories
                .into_iter()
                .map(|t| t.final_text.unwrap_or_default())
                .collect())
        },
    )
}
