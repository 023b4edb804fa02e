//! Phases 1 and 2 of a step, rollout and verify: sample G responses per prompt with the
//! no-grad policy, score them, and (with DAPO's dynamic sampling) drop groups whose rewards are
//! all equal and draw more prompts until the batch is full or the rounds run out. The kept
//! batch is rescored when the stored log-probs must be the temperature-scaled policy's or the
//! truncated sampler's (`logprobs.rs`).

use std::time::Instant;

use burn::module::Module;
use rlvr_models::{CausalLm, FinishReason, GenerationConfig, Tokenizer, generate};

use crate::batch::Sample;
use crate::config::{RolloutSection, ShortBatch};
use crate::data::Example;
use crate::error::{Error, Result};
use crate::logprobs::{needs_rescoring, rescore};
use crate::metrics::{Metrics, mean};
use crate::prompt::pad_id;
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
    let rollout = tr.config.rollout.clone();
    let seed = tr.config.seed;
    let g = rollout.group_size;
    let want = rollout.prompts_per_step * tr.config.train.stage_batches;
    let rounds = if rollout.dynamic_sampling {
        rollout.max_resample_rounds + 1
    } else {
        1
    };
    let policy = tr.model().valid();
    let gen_cfg = generation_config(&rollout, &tr.tokenizer, false);
    let mut kept: Vec<Sample> = Vec::with_capacity(want * g);
    let (mut rollout_s, mut verify_s) = (0.0, 0.0);
    let mut all_rewards = Vec::new();
    // Every response token generated, dropped groups included.
    let (mut sampled_tokens, mut dropped, mut done_rounds) = (0usize, 0usize, 0usize);
    for round in 0..rounds {
        let examples = tr.next_prompts(want - kept.len() / g);
        let prompt_ids = tr.encode_prompts(&examples)?;
        let t = Instant::now();
        let mut samples = sample_groups(
            &policy,
            &tr.tokenizer,
            &tr.train_set,
            &examples,
            &prompt_ids,
            g,
            &gen_cfg,
            step_seed(seed, step, round),
        )?;
        rollout_s += t.elapsed().as_secs_f64();
        sampled_tokens += samples.iter().map(|s| s.response.len()).sum::<usize>();
        let t = Instant::now();
        all_rewards.extend(score(
            &tr.verifier,
            &tr.config.verifier,
            &tr.train_set,
            &mut samples,
            m,
        ));
        verify_s += t.elapsed().as_secs_f64();
        done_rounds += 1;
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
    let sampler_logp = if needs_rescoring(&rollout) {
        rescore(&policy, &mut kept, &rollout, pad_id(&tr.tokenizer))
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
        mean(all_rewards.iter().map(|&r| f64::from(u8::from(r >= 1.0)))),
    );
    m.insert(
        "response/length_mean".into(),
        mean(kept.iter().map(|s| s.response.len() as f64)),
    );
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
    let mut prompts = Vec::with_capacity(examples.len() * group_size);
    for ids in prompt_ids {
        for _ in 0..group_size {
            prompts.push(ids.clone());
        }
    }
    let outs = generate(policy, &prompts, gen_cfg, seed);
    let mut samples = Vec::with_capacity(outs.len());
    for (i, out) in outs.into_iter().enumerate() {
        let example = examples[i / group_size];
        debug_assert!(example < dataset.len());
        let text = tokenizer.decode_skip_special(&out.tokens)?;
        let (prompt, finish) = (prompts[i].clone(), out.finish_reason);
        samples.push(Sample {
            text,
            ..Sample::unscored(example, prompt, out.tokens, out.logprobs, finish)
        });
    }
    Ok(samples)
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
