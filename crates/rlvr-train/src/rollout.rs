//! Rollout: render prompts, sample G responses per prompt with the policy (no autodiff), and
//! keep what the update needs (token ids, the sampler's log-probs, finish reasons, texts).

use rlvr_models::{CausalLm, FinishReason, GenerationConfig, Tokenizer, generate};

use crate::config::RolloutSection;
use crate::data::{Example, Message};
use crate::error::Result;

/// One sampled response and what the update needs of it.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Index of the example in the dataset.
    pub example: usize,
    /// Prompt token ids.
    pub prompt: Vec<u32>,
    /// Response token ids, including the stop token when it stopped.
    pub response: Vec<u32>,
    /// Log-probs of the response tokens under the sampling policy (temperature 1 logits).
    pub old_logp: Vec<f32>,
    /// Why sampling stopped.
    pub finish: FinishReason,
    /// The decoded response (special tokens removed).
    pub text: String,
    /// Verifier reward, filled by the verify stage.
    pub reward: f32,
    /// Whether the verifier judged the response correct, filled by the verify stage.
    pub passed: bool,
    /// The answer the verifier extracted, if any (EDAS compares wrong answers by it).
    pub extracted: Option<String>,
    /// Advantage, filled by the advantage stage.
    pub advantage: f32,
    /// Per-token additions to `advantage`, one per response token (SRaR's step offsets); empty
    /// when no stage sets them.
    pub token_offsets: Vec<f32>,
}

/// Renders an example's prompt as text: the chat template when the example has `messages` (or
/// when `use_chat_template` wraps a plain prompt as one user turn), else the plain prompt.
pub fn render_prompt(
    tokenizer: &Tokenizer,
    example: &Example,
    use_chat_template: bool,
) -> Result<String> {
    let messages = match (&example.messages, &example.prompt) {
        (Some(m), _) => Some(m.clone()),
        (None, Some(p)) if use_chat_template => Some(vec![Message {
            role: "user".into(),
            content: p.clone(),
        }]),
        _ => None,
    };
    Ok(match messages {
        Some(m) => {
            let turns: Vec<rlvr_models::ChatMessage> = m
                .into_iter()
                .map(|m| rlvr_models::ChatMessage {
                    role: m.role,
                    content: m.content,
                })
                .collect();
            tokenizer.apply_chat_template(&turns, true)?
        }
        None => example.prompt.clone().unwrap_or_default(),
    })
}

/// The padding id: the tokenizer's pad token, else its first end-of-sequence token, else 0.
pub fn pad_id(tokenizer: &Tokenizer) -> u32 {
    tokenizer
        .pad_token_id()
        .or_else(|| tokenizer.eos_token_ids().first().copied())
        .unwrap_or(0)
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
        samples.push(Sample {
            example,
            prompt: prompts[i].clone(),
            response: out.tokens,
            old_logp: out.logprobs,
            finish: out.finish_reason,
            text,
            reward: 0.0,
            passed: false,
            extracted: None,
            advantage: 0.0,
            token_offsets: Vec::new(),
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
