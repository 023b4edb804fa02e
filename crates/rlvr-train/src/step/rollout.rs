//! Phases 1 and 2 of a step, rollout and verify: sample G responses per prompt with the
//! no-grad policy, score them, and (with DAPO's dynamic sampling) drop groups whose rewards are
//! all equal and draw more prompts until the batch is full or the rounds run out. The kept
//! batch is rescored when the stored log-probs must be the temperature-scaled policy's or the
//! truncated sampler's (`logprobs.rs`).
//!
//! With an `[env]` section each response is a multi-turn episode (`env/`): the policy's turns
//! and the environment's observations in one trajectory, the observations masked out of the
//! loss, the answer turn verified and the environment's turn rewards added; on a remote engine
//! each turn is one request per row, token ids in and out (`rollout_engine/turns.rs`).
//!
//! With `rollout.engine = "openai"` the responses come from inference servers
//! (`rollout_engine`): the weights are synced first when due, each response is requested with
//! the seed its row has locally, and from the samples on the path is the same, except that the
//! kept batch is always rescored by the trainer (the servers' log-probs are only compared with
//! the trainer's, as the `rollout/logp_mismatch_*` metrics, and feed `objective.tis` at T = 1
//! without truncation).

use std::time::Instant;

use burn::module::Module;
use rlvr_models::{CausalLm, FinishReason, Generation, GenerationConfig, Tokenizer, generate};
use rlvr_objectives::TisMode;

use crate::batch::{Sample, group_rows};
use crate::config::{RolloutEngine, RolloutSection, ShortBatch};
use crate::data::Example;
use crate::data::guidance::{Guidance, GuidedPrompts};
use crate::env::groups::{EpisodeReward, EpisodeStats, sample_episode_groups};
use crate::env::{LocalTurns, TurnSampler};
use crate::error::{Error, Result};
use crate::logprobs::{needs_rescoring, rescore};
use crate::metrics::{Metrics, mean};
use crate::prompt::pad_id;
use crate::rollout_engine::{LogpMismatch, OpenAiClient, RemoteEngine, RemoteTurns};
use crate::step::{hard_guidance, prefetch};
use crate::trainer::Trainer;
use crate::verify::score;

/// The verified rollout batch of one step.
#[derive(Debug, Clone)]
pub struct Rollouts {
    /// The kept samples, each group's G samples contiguous, rewards filled in.
    pub samples: Vec<Sample>,
    /// The sampler's log-probs per sample (per response token) when top-k / top-p sampling
    /// makes the sampler differ from the policy; `None` otherwise.
    pub sampler_logp: Option<Vec<Vec<f32>>>,
}

/// Rolls out and verifies `prompts_per_step × stage_batches` groups with the current policy
/// (one policy for all stage batches: Mu-GRPO's large stages); see the module docs.
pub fn collect(tr: &mut Trainer, step: usize, m: &mut Metrics) -> Result<Rollouts> {
    let mut remote = tr.remote.take();
    let collected = collect_with(tr, remote.as_mut(), step, m);
    tr.remote = remote;
    collected
}

/// [`collect`] with the trainer's remote engine taken out of it (`None`: local sampling).
fn collect_with(
    tr: &mut Trainer,
    mut remote: Option<&mut RemoteEngine>,
    step: usize,
    m: &mut Metrics,
) -> Result<Rollouts> {
    let rollout = tr.config.rollout.clone();
    if rollout.engine == RolloutEngine::Openai && remote.is_none() {
        return Err(Error::Config(
            "rollout.engine = \"openai\" and this trainer has no remote engine (run::train \
             connects it from rollout.endpoints; a caller of step::rl_step sets Trainer::remote)"
                .into(),
        ));
    }
    if let Some(RemoteEngine { client, sync }) = remote.as_deref_mut() {
        let steps = tr.state.optimizer_steps;
        let sync_s = if sync.due(steps) {
            sync.sync(
                client,
                tr.model(),
                &tr.model_config,
                &tr.tokenizer,
                steps,
                step,
            )?
        } else {
            0.0
        };
        m.insert("time/weight_sync_s".into(), sync_s);
        let version = client.expected_versions().into_iter().flatten().max();
        m.insert(
            "rollout/weights_version".into(),
            version.map_or(0.0, |v| v as f64),
        );
    }
    let seed = tr.config.seed;
    let g = rollout.group_size;
    let max_staleness = rollout.max_staleness;
    let want = rollout.prompts_per_step * tr.config.train.stage_batches;
    let mut rounds = if rollout.dynamic_sampling {
        rollout.max_resample_rounds + 1
    } else {
        1
    };
    let policy = tr.model().valid();
    let gen_cfg = generation_config(&rollout, &tr.tokenizer, false);
    let mut kept: Vec<Sample> = Vec::with_capacity(want * g);
    let (mut rollout_s, mut verify_s) = (0.0, 0.0);
    let mut all_rewards = Vec::new();
    // Whether the verifier passed each sample (dropped groups included), for `reward/pass_rate`:
    // a reward of 1 is not a pass under shaped rewards (K2V's checklist and format terms, DAPO's
    // length penalty), and a pass is not a reward of 1.
    let mut all_passed = Vec::new();
    // Every response token generated, dropped groups included.
    let (mut sampled_tokens, mut dropped, mut done_rounds) = (0usize, 0usize, 0usize);
    // Asynchronous rollouts: the first round may have been sampled during an earlier step.
    let mut prefetched = prefetch::take(tr, step);
    let (mut staleness, mut stale_dropped, mut refilled) = (Vec::new(), 0usize, false);
    let mut round = 0;
    // Multi-turn episodes (`[env]`): their counts over all rounds, and a round's turn rewards.
    let mut episodes = EpisodeStats::default();
    let mut answers = Vec::new();
    // SMEPO's guidance of this step's freshly encoded prompts (`[smepo]`), and whether only
    // the hard ones are guided (`smepo.prompts = "hard"`).
    let mut guided = Vec::new();
    let hard_only = tr
        .config
        .smepo
        .as_ref()
        .is_some_and(|s| s.prompts == GuidedPrompts::Hard);
    let mut hard_rounds = hard_guidance::HardGuidance::default();
    while round < rounds {
        let t = Instant::now();
        let drawn = match prefetched.take() {
            Some(p) => (p.join()?, None),
            None => {
                let examples = tr.next_prompts(want - kept.len() / g);
                let (prompt_ids, guidance) = if hard_only {
                    (tr.encode_prompts(&examples)?, Vec::new())
                } else {
                    tr.encode_rollout_prompts(&examples)?
                };
                guided.extend(guidance.into_iter().flatten());
                let round_seed = step_seed(seed, step, round);
                let (drawn, terms) = draw(
                    tr,
                    &policy,
                    remote.as_deref(),
                    &gen_cfg,
                    &examples,
                    &prompt_ids,
                    step,
                    round_seed,
                    &mut episodes,
                )?;
                (drawn, Some((examples, round_seed, terms)))
            }
        };
        let (drawn, mut fresh) = drawn;
        let mut samples = drawn.into_versioned(remote.as_deref())?;
        rollout_s += t.elapsed().as_secs_f64();
        sampled_tokens += samples.iter().map(Sample::policy_tokens).sum::<usize>();
        if max_staleness > 0 {
            staleness.extend(samples.iter().map(|s| step - s.policy_version.min(step)));
            let stale = drop_stale_groups(&mut samples, g, step, max_staleness);
            stale_dropped += stale;
            // One more round draws fresh groups in place of the stale ones.
            if stale > 0 && !refilled && round + 1 == rounds {
                rounds += 1;
                refilled = true;
            }
        }
        let t = Instant::now();
        let terms = fresh.as_mut().and_then(|(.., terms)| terms.take());
        let mut rewards = score_drawn(tr, &mut samples, terms, &mut answers, m);
        verify_s += t.elapsed().as_secs_f64();
        // SMEPO on hard prompts only: a plain group without a passing sample is drawn again
        // with its guidance and takes the plain group's place.
        if let (true, Some((examples, round_seed, _))) = (hard_only, &fresh) {
            let t = Instant::now();
            let hard = hard_guidance::redraw_hard_groups(
                tr,
                &policy,
                remote.as_deref(),
                &gen_cfg,
                examples,
                &mut samples,
                step,
                *round_seed,
                &mut episodes,
                &mut answers,
                m,
            )?;
            sampled_tokens += hard.sampled_tokens;
            hard_rounds.add(hard);
            rewards = samples.iter().map(|s| s.reward).collect();
            rollout_s += t.elapsed().as_secs_f64();
        }
        all_rewards.extend(rewards);
        all_passed.extend(samples.iter().map(|s| s.passed));
        done_rounds += 1;
        round += 1;
        for group in samples.chunks(g) {
            let all_equal = group.windows(2).all(|w| w[0].reward == w[1].reward);
            if rollout.dynamic_sampling && all_equal {
                dropped += 1;
            } else {
                kept.extend_from_slice(group);
            }
        }
        if kept.len() / g >= want {
            break;
        }
    }
    if hard_only {
        hard_rounds.insert_into(m);
        guided.append(&mut hard_rounds.guidance);
    }
    if tr.config.smepo.is_some() {
        guidance_metrics(&guided, m);
    }
    if max_staleness > 0 {
        m.insert(
            "rollout/staleness_mean".into(),
            mean(staleness.iter().map(|&s| s as f64)),
        );
        m.insert(
            "rollout/staleness_max".into(),
            staleness.iter().copied().max().unwrap_or(0) as f64,
        );
        m.insert("rollout/stale_dropped_groups".into(), stale_dropped as f64);
    }
    if kept.len() / g < want && rollout.short_batch == ShortBatch::Error {
        return Err(Error::Config(format!(
            "step {}: dynamic sampling kept {} of {want} groups after {done_rounds} rounds \
             (the others had all-equal rewards) and rollout.short_batch = \"error\"; raise \
             rollout.max_resample_rounds, use data closer to the policy's level, or set \
             rollout.short_batch = \"train\"",
            step + 1,
            kept.len() / g
        )));
    }
    let t = Instant::now();
    let pad = pad_id(&tr.tokenizer);
    let sampler_logp = if remote.is_some() || max_staleness > 0 {
        let tis = tr.config.objective.common().tis != TisMode::Off;
        rescore_served(&policy, &mut kept, &rollout, pad, tis, m)
    } else if needs_rescoring(&rollout) {
        rescore(&policy, &mut kept, &rollout, pad)
    } else {
        None
    };
    rollout_s += t.elapsed().as_secs_f64();
    drop(policy);

    let reward_mean = mean(all_rewards.iter().map(|&r| f64::from(r)));
    let reward_var = mean(
        all_rewards
            .iter()
            .map(|&r| (f64::from(r) - reward_mean).powi(2)),
    );
    m.insert("reward/mean".into(), reward_mean);
    m.insert("reward/std".into(), reward_var.sqrt());
    m.insert(
        "reward/pass_rate".into(),
        mean(all_passed.iter().map(|&p| f64::from(u8::from(p)))),
    );
    m.insert(
        "response/length_mean".into(),
        mean(kept.iter().map(|s| s.policy_tokens() as f64)),
    );
    if tr.config.env.is_some() {
        episodes.insert_into(m, "");
        // The verifier's own score of the answer turns, before the episode's reward terms.
        m.insert(
            "env/answer_mean".into(),
            mean(answers.iter().map(|&r| f64::from(r))),
        );
    }
    m.insert(
        "response/truncated_frac".into(),
        mean(
            kept.iter()
                .map(|s| f64::from(u8::from(s.finish == FinishReason::Length))),
        ),
    );
    m.insert("rollout/sampled_tokens".into(), sampled_tokens as f64);
    m.insert("rollout/rounds".into(), done_rounds as f64);
    m.insert("rollout/wanted_groups".into(), want as f64);
    m.insert("rollout/kept_groups".into(), (kept.len() / g) as f64);
    m.insert("rollout/dropped_groups".into(), dropped as f64);
    m.insert("time/rollout_s".into(), rollout_s);
    m.insert("time/verify_s".into(), verify_s);
    Ok(Rollouts {
        samples: kept,
        sampler_logp,
    })
}

/// One round's samples for `examples` (G each) from their encoded prompts: multi-turn
/// episodes with `[env]` (then also each episode's reward terms), else one-turn responses,
/// from the remote engine when there is one (episodes too: one request per row and turn).
pub(crate) fn draw(
    tr: &Trainer,
    policy: &CausalLm,
    remote: Option<&RemoteEngine>,
    gen_cfg: &GenerationConfig,
    examples: &[usize],
    prompt_ids: &[Vec<u32>],
    step: usize,
    seed: u64,
    episodes: &mut EpisodeStats,
) -> Result<(Drawn, Option<Vec<EpisodeReward>>)> {
    let g = tr.config.rollout.group_size;
    if let Some(section) = &tr.config.env {
        // Episodes: their turns sampled here or on the servers, in the same way.
        let mut on_servers = remote.map(|e| RemoteTurns::new(&e.client, examples.len() * g));
        let mut here = LocalTurns {
            policy,
            tokenizer: &tr.tokenizer,
        };
        let sampler: &mut dyn TurnSampler = match on_servers.as_mut() {
            Some(turns) => turns,
            None => &mut here,
        };
        let (mut samples, rewards) = sample_episode_groups(
            sampler,
            &tr.tokenizer,
            section,
            &tr.train_set,
            examples,
            prompt_ids,
            g,
            gen_cfg,
            seed,
            episodes,
        )?;
        let drawn = match on_servers {
            Some(turns) => Drawn {
                samples,
                served: Some(turns.into_served()),
            },
            None => {
                samples.iter_mut().for_each(|s| s.policy_version = step);
                Drawn::local(samples)
            }
        };
        return Ok((drawn, Some(rewards)));
    }
    Ok(match remote {
        None => {
            let mut samples = sample_groups(
                policy,
                &tr.tokenizer,
                &tr.train_set,
                examples,
                prompt_ids,
                g,
                gen_cfg,
                seed,
            )?;
            samples.iter_mut().for_each(|s| s.policy_version = step);
            (Drawn::local(samples), None)
        }
        Some(engine) => (
            sample_groups_remote(
                &engine.client,
                &tr.tokenizer,
                examples,
                prompt_ids,
                g,
                gen_cfg,
                seed,
            )?,
            None,
        ),
    })
}

/// The verifier's rewards of `samples`, with an episode's reward terms (turn rewards, TIER's
/// call checks) added when there are any; the verifier's own scores of such answer turns go to
/// `answers`.
pub(crate) fn score_drawn(
    tr: &Trainer,
    samples: &mut [Sample],
    terms: Option<Vec<EpisodeReward>>,
    answers: &mut Vec<f32>,
    m: &mut Metrics,
) -> Vec<f32> {
    let mut rewards = score(&tr.verifier, &tr.config.verifier, &tr.train_set, samples, m);
    if let Some(terms) = terms {
        answers.extend(rewards.iter().copied());
        for ((s, r), terms) in samples.iter_mut().zip(&mut rewards).zip(terms) {
            *r = terms.apply(*r);
            s.reward = *r;
        }
    }
    rewards
}

/// Generation settings of the rollout section.
pub fn generation_config(
    cfg: &RolloutSection,
    tokenizer: &Tokenizer,
    greedy: bool,
) -> GenerationConfig {
    GenerationConfig {
        max_new_tokens: cfg.max_new_tokens,
        temperature: if greedy { 0.0 } else { cfg.temperature },
        top_k: (cfg.top_k > 0).then_some(cfg.top_k),
        top_p: (cfg.top_p < 1.0).then_some(cfg.top_p),
        stop_token_ids: tokenizer.eos_token_ids(),
        pad_token_id: pad_id(tokenizer),
    }
}

/// Rescores a batch sampled by a server or by older weights (asynchronous rollouts), whose
/// log-probs, in `old_logp`, are the sampler's at T = 1 without truncation (rlvr-serve's
/// convention and local generation's): the trainer's own T = 1 log-probs are compared with the
/// sampler's (`rollout/logp_mismatch_*`, `rollout/is_ratio_*`, `rollout/sampler_kl`), then
/// `old_logp` becomes the trainer's at the rollout temperature as on the local path. Returns
/// the sampler's log-probs: the truncated sampler's when sampling truncates (as locally), else
/// the served ones when `tis` is on (validation allows it only at T = 1, where they are the
/// sampler's), else `None`.
fn rescore_served(
    policy: &CausalLm,
    kept: &mut [Sample],
    rollout: &RolloutSection,
    pad: u32,
    tis: bool,
    m: &mut Metrics,
) -> Option<Vec<Vec<f32>>> {
    let served: Vec<Vec<f32>> = kept.iter().map(|s| s.old_logp.clone()).collect();
    let at_t1 = RolloutSection {
        temperature: 1.0,
        top_p: 1.0,
        top_k: 0,
        ..rollout.clone()
    };
    // At T = 1 one pass gives both the T = 1 log-probs and the truncated sampler's.
    let t1 = rollout.temperature == 1.0;
    let mut sampler = rescore(policy, kept, if t1 { rollout } else { &at_t1 }, pad);
    let trainer: Vec<Vec<f32>> = kept.iter().map(|s| s.old_logp.clone()).collect();
    // Compared on the policy's own tokens: an episode's observation tokens have no sampler
    // log-prob (the servers' 0 there is a placeholder).
    let policy_tokens = |logp: &[Vec<f32>]| -> Vec<Vec<f32>> {
        logp.iter()
            .zip(kept.iter())
            .map(|(lp, s)| {
                if s.loss_mask.is_empty() {
                    lp.clone()
                } else {
                    lp.iter()
                        .zip(&s.loss_mask)
                        .filter_map(|(&x, &own)| own.then_some(x))
                        .collect()
                }
            })
            .collect()
    };
    LogpMismatch::of(&policy_tokens(&served), &policy_tokens(&trainer)).insert_into(m);
    if !t1 {
        sampler = rescore(policy, kept, rollout, pad);
    }
    match sampler {
        None if tis => Some(served),
        other => other,
    }
}

/// The unscored samples of generated rows (row `i` is a response to `examples[i / group_size]`).
pub(crate) fn to_samples(
    tokenizer: &Tokenizer,
    examples: &[usize],
    prompts: Vec<Vec<u32>>,
    outs: Vec<Generation>,
    group_size: usize,
) -> Result<Vec<Sample>> {
    let mut samples = Vec::with_capacity(outs.len());
    for (i, (prompt, out)) in prompts.into_iter().zip(outs).enumerate() {
        let text = tokenizer.decode_skip_special(&out.tokens)?;
        samples.push(Sample {
            text,
            ..Sample::unscored(
                examples[i / group_size],
                prompt,
                out.tokens,
                out.logprobs,
                out.finish_reason,
            )
        });
    }
    Ok(samples)
}

/// Samples of one rollout round before verification, with the weights that drew them.
#[derive(Debug)]
pub struct Drawn {
    /// The samples; `policy_version` is set when they were drawn locally.
    pub samples: Vec<Sample>,
    /// Per sample, the (endpoint, weights version) of the server that drew it; `None` for local
    /// samples.
    pub served: Option<Vec<(usize, u64)>>,
}

impl Drawn {
    /// Samples drawn in this process (their `policy_version` set).
    pub fn local(samples: Vec<Sample>) -> Self {
        Self {
            samples,
            served: None,
        }
    }

    /// The samples with `policy_version` set from the servers' weights versions, which the
    /// weight syncs of `remote` map to RL steps.
    ///
    /// # Errors
    /// [`Error::Engine`] for a version that no sync of this process reported.
    pub fn into_versioned(self, remote: Option<&RemoteEngine>) -> Result<Vec<Sample>> {
        let (Some(served), Some(engine)) = (self.served, remote) else {
            return Ok(self.samples);
        };
        let mut samples = self.samples;
        for (s, (endpoint, version)) in samples.iter_mut().zip(served) {
            s.policy_version = engine
                .sync
                .policy_version(endpoint, version)
                .ok_or_else(|| {
                    engine.client.error(
                        endpoint,
                        format!(
                            "a reply carries weights_version {version}, which no sync reported"
                        ),
                    )
                })?;
        }
        Ok(samples)
    }
}

/// Drops, in place, every group (of `group_size` contiguous samples) holding a sample drawn by
/// weights more than `max_staleness` steps older than step `step`'s; returns how many groups
/// it dropped.
pub fn drop_stale_groups(
    samples: &mut Vec<Sample>,
    group_size: usize,
    step: usize,
    max_staleness: usize,
) -> usize {
    let mut all = std::mem::take(samples).into_iter();
    let mut dropped = 0;
    loop {
        let group: Vec<Sample> = all.by_ref().take(group_size).collect();
        if group.is_empty() {
            return dropped;
        }
        let fresh = group
            .iter()
            .all(|s| step.saturating_sub(s.policy_version) <= max_staleness);
        if fresh {
            samples.extend(group);
        } else {
            dropped += 1;
        }
    }
}

/// [`sample_groups`] on inference servers: row `i` is requested with the seed it has in
/// `sample_groups`' batch, so a seeded server returns the same tokens.
///
/// # Errors
/// The client's [`Error::Engine`], or a response the tokenizer cannot decode.
pub fn sample_groups_remote(
    client: &OpenAiClient,
    tokenizer: &Tokenizer,
    examples: &[usize],
    prompt_ids: &[Vec<u32>],
    group_size: usize,
    gen_cfg: &GenerationConfig,
    seed: u64,
) -> Result<Drawn> {
    let prompts = group_rows(prompt_ids, group_size);
    let served = client.generate(&prompts, gen_cfg, seed)?;
    let versions = served
        .iter()
        .map(|s| (s.endpoint, s.weights_version))
        .collect();
    let outs = served.into_iter().map(|s| s.generation).collect();
    Ok(Drawn {
        samples: to_samples(tokenizer, examples, prompts, outs, group_size)?,
        served: Some(versions),
    })
}

/// Samples `group_size` responses for each of `examples` (given as dataset indices) in one batch.
pub fn sample_groups(
    policy: &CausalLm,
    tokenizer: &Tokenizer,
    dataset: &[Example],
    examples: &[usize],
    prompt_ids: &[Vec<u32>],
    group_size: usize,
    gen_cfg: &GenerationConfig,
    seed: u64,
) -> Result<Vec<Sample>> {
    debug_assert!(examples.iter().all(|&e| e < dataset.len()));
    let prompts = group_rows(prompt_ids, group_size);
    let outs = generate(policy, &prompts, gen_cfg, seed);
    to_samples(tokenizer, examples, prompts, outs, group_size)
}

/// The device-independent part of a sampling seed: a stable mix of (run seed, step, round).
pub fn step_seed(run_seed: u64, step: usize, round: usize) -> u64 {
    let mut z = run_seed ^ 0x9E37_79B9_7F4A_7C15;
    for v in [step as u64, round as u64] {
        z = (z ^ v).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z ^= z >> 31;
    }
    z
}

/// `smepo/*`: the share of this step's prompts shown guidance, withheld for leaking the
/// answer, or without a trace, and the guidance's mean length in characters (0 when none was
/// shown). Prompts of a prefetched round are not counted.
fn guidance_metrics(guided: &[Guidance], m: &mut Metrics) {
    let n = guided.len().max(1) as f64;
    let count = |f: fn(&Guidance) -> bool| guided.iter().filter(|g| f(g)).count() as f64 / n;
    m.insert(
        "smepo/guided_frac".into(),
        count(|g| matches!(g, Guidance::Shown(_))),
    );
    m.insert(
        "smepo/leaked_frac".into(),
        count(|g| matches!(g, Guidance::Leaked)),
    );
    m.insert(
        "smepo/no_trace_frac".into(),
        count(|g| matches!(g, Guidance::NoTrace)),
    );
    let lengths = guided.iter().filter_map(|g| match g {
        Guidance::Shown(c) => Some(*c as f64),
        _ => None,
    });
    m.insert("smepo/guidance_chars_mean".into(), mean(lengths));
}
