//! Batched autoregressive sampling with a KV cache: left padding, per-row positions and masks,
//! finished rows dropped from the batch, host-side sampling from last-position logits only.

use burn::tensor::{Bool, Int, Tensor, TensorData};
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::error::Result;
use crate::kv_cache::KvCache;
use crate::model::{CausalLm, ForwardArgs, Positions};
use crate::sampler::{Sampler, log_softmax_at, row_seed};
use crate::tokenizer::Tokenizer;

/// Sampling settings of one `generate` call.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationConfig {
    /// Maximum number of tokens generated per prompt.
    pub max_new_tokens: usize,
    /// Softmax temperature; `0` means greedy decoding.
    pub temperature: f32,
    /// Restrict sampling to the `k` most likely tokens.
    pub top_k: Option<usize>,
    /// Nucleus sampling: restrict to the smallest set of tokens with mass ≥ `p`.
    pub top_p: Option<f32>,
    /// A row finishes (with [`FinishReason::Stop`]) after sampling one of these ids; the stop
    /// token is included in [`Generation::tokens`].
    pub stop_token_ids: Vec<u32>,
    /// Id used for left padding of shorter prompts (never attended to; any valid id works).
    pub pad_token_id: u32,
}

impl GenerationConfig {
    /// Greedy decoding of up to `max_new_tokens` tokens, stopping at `stop_token_ids`.
    pub fn greedy(max_new_tokens: usize, stop_token_ids: Vec<u32>) -> Self {
        Self {
            max_new_tokens,
            temperature: 0.0,
            top_k: None,
            top_p: None,
            stop_token_ids,
            pad_token_id: 0,
        }
    }

    /// The [`Sampler`] these settings describe.
    pub fn sampler(&self) -> Sampler {
        Sampler {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
        }
    }
}

/// Why a row stopped generating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// A stop token was sampled or a stop string appeared.
    Stop,
    /// `max_new_tokens` was reached.
    Length,
}

/// The continuation of one prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Generated token ids (a final stop token included).
    pub tokens: Vec<u32>,
    /// `logprobs[i] = log softmax(raw logits)[tokens[i]]` at temperature 1, without top-k/p:
    /// the value a teacher-forced [`token_logprobs`](crate::token_logprobs) pass gives.
    pub logprobs: Vec<f32>,
    /// Why generation ended.
    pub finish_reason: FinishReason,
}

/// Samples a continuation for every prompt, in one batch, with a KV cache.
///
/// Prompts may differ in length: they are left-padded with `pad_token_id`, padded keys are
/// masked out, and each row's RoPE positions start at 0 at its first real token, so a row's
/// result does not depend on the padding (up to float rounding). Each step runs the model on
/// one token per unfinished row and copies only the `[rows, V]` last-position logits to the
/// host, where [`Sampler`] draws the next token; rows that finish are dropped from the batch
/// and cache. Row `i` draws from `StdRng::seed_from_u64(row_seed(seed, i))`, so the same seed
/// gives the same tokens.
///
/// Run it on `model.valid()` (burn-notes §8: a tracked model would record the whole rollout).
///
/// # Panics
/// If a prompt is empty or holds an id `>= vocab_size`.
pub fn generate(
    model: &CausalLm,
    prompts: &[Vec<u32>],
    config: &GenerationConfig,
    seed: u64,
) -> Vec<Generation> {
    generate_until(model, prompts, config, seed, &mut |_, _| false)
}

/// [`generate`], also stopping a row when its decoded continuation contains one of
/// `stop_strings`. The row's tokens end with the token that completed the stop string
/// (finish reason [`FinishReason::Stop`]); cut the decoded text at the string with `str::find`.
///
/// # Errors
/// [`Error::Tokenizer`](crate::Error::Tokenizer) when decoding fails.
pub fn generate_with_stop_strings(
    model: &CausalLm,
    tokenizer: &Tokenizer,
    prompts: &[Vec<u32>],
    config: &GenerationConfig,
    stop_strings: &[String],
    seed: u64,
) -> Result<Vec<Generation>> {
    let stops: Vec<&str> = stop_strings
        .iter()
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .collect();
    if stops.is_empty() {
        return Ok(generate(model, prompts, config, seed));
    }
    // A stop string of n bytes is completed within the last n tokens (each token adds >= 1 byte
    // once decoded), so decoding a short tail suffices; 8 extra tokens cover multi-token characters.
    let window = stops.iter().map(|s| s.len()).max().unwrap_or(0) + 8;
    let mut error = None;
    let out = generate_until(model, prompts, config, seed, &mut |_, tokens| {
        let tail = &tokens[tokens.len().saturating_sub(window)..];
        match tokenizer.decode(tail) {
            Ok(text) => stops.iter().any(|s| text.contains(s)),
            Err(e) => {
                error.get_or_insert(e);
                true
            }
        }
    });
    match error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The generation loop; `stop(row, tokens_so_far)` may end a row early (finish reason `Stop`).
pub(crate) fn generate_until(
    model: &CausalLm,
    prompts: &[Vec<u32>],
    config: &GenerationConfig,
    seed: u64,
    stop: &mut dyn FnMut(usize, &[u32]) -> bool,
) -> Vec<Generation> {
    let vocab = model.vocab_size();
    for (i, p) in prompts.iter().enumerate() {
        assert!(!p.is_empty(), "generate: prompt {i} is empty");
        if let Some(&bad) = p.iter().find(|&&t| t as usize >= vocab) {
            panic!("generate: prompt {i} holds token id {bad} >= vocab_size {vocab}");
        }
    }
    let mut results: Vec<Generation> = prompts
        .iter()
        .map(|_| Generation {
            tokens: Vec::new(),
            logprobs: Vec::new(),
            finish_reason: FinishReason::Length,
        })
        .collect();
    if prompts.is_empty() || config.max_new_tokens == 0 {
        return results;
    }
    let device = model.device();
    let sampler = config.sampler();
    let mut rngs: Vec<StdRng> = (0..prompts.len())
        .map(|i| StdRng::seed_from_u64(row_seed(seed, i as u64)))
        .collect();

    // Prefill: left-pad to the longest prompt.
    let t = prompts.iter().map(Vec::len).max().unwrap_or(0);
    let mut pads: Vec<usize> = prompts.iter().map(|p| t - p.len()).collect();
    let mut ids = Vec::with_capacity(prompts.len() * t);
    for (p, &pad) in prompts.iter().zip(&pads) {
        ids.extend(std::iter::repeat_n(i64::from(config.pad_token_id), pad));
        ids.extend(p.iter().map(|&x| i64::from(x)));
    }
    let any_pad = pads.iter().any(|&p| p > 0);
    let (positions, mask) = if any_pad {
        let positions = pads
            .iter()
            .flat_map(|&pad| (0..t).map(move |i| i.saturating_sub(pad) as i64))
            .collect();
        // Row b, query q, key k is blocked when k > q (future) or k is padding; a padding query
        // keeps itself so that no softmax row is empty.
        let mut blocked = Vec::with_capacity(pads.len() * t * t);
        for &pad in &pads {
            for q in 0..t {
                blocked.extend((0..t).map(|k| k > q || (k < pad && k != q)));
            }
        }
        let mask =
            Tensor::<4, Bool>::from_data(TensorData::new(blocked, [pads.len(), 1, t, t]), &device);
        (Positions::PerToken(positions), Some(mask))
    } else {
        (Positions::Range(0), None)
    };
    let mut cache = KvCache::new(model.num_layers());
    let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [prompts.len(), t]), &device);
    let hidden = model.hidden(
        ids,
        ForwardArgs {
            positions,
            mask,
            cache: Some(&mut cache),
        },
    );
    let mut logits = last_logits(model, hidden);

    let mut active: Vec<usize> = (0..prompts.len()).collect(); // batch slot -> prompt index
    let mut cache_len = t;
    loop {
        let mut next = Vec::with_capacity(active.len());
        let mut keep = Vec::with_capacity(active.len());
        for (slot, &row) in active.iter().enumerate() {
            let row_logits = &logits[slot * vocab..(slot + 1) * vocab];
            let token = sampler.sample(row_logits, &mut rngs[row]);
            let r = &mut results[row];
            r.tokens.push(token);
            r.logprobs.push(log_softmax_at(row_logits, token));
            if config.stop_token_ids.contains(&token) || stop(row, &r.tokens) {
                r.finish_reason = FinishReason::Stop;
            } else if r.tokens.len() >= config.max_new_tokens {
                r.finish_reason = FinishReason::Length;
            } else {
                keep.push(slot);
                next.push(i64::from(token));
            }
        }
        if keep.is_empty() {
            break;
        }
        if keep.len() < active.len() {
            let rows = Tensor::<1, Int>::from_data(
                TensorData::new(
                    keep.iter().map(|&s| s as i64).collect::<Vec<_>>(),
                    [keep.len()],
                ),
                &device,
            );
            cache.select_rows(&rows);
            active = keep.iter().map(|&s| active[s]).collect();
            pads = keep.iter().map(|&s| pads[s]).collect();
        }
        // Decode step: one token per active row at position cache_len - pad.
        let b = active.len();
        let positions = if pads.iter().any(|&p| p > 0) {
            Positions::PerToken(pads.iter().map(|&pad| (cache_len - pad) as i64).collect())
        } else {
            Positions::Range(cache_len)
        };
        let mask = pads.iter().any(|&p| p > 0).then(|| {
            let blocked: Vec<bool> = pads
                .iter()
                .flat_map(|&pad| (0..=cache_len).map(move |k| k < pad))
                .collect();
            Tensor::<4, Bool>::from_data(
                TensorData::new(blocked, [b, 1, 1, cache_len + 1]),
                &device,
            )
        });
        let ids = Tensor::<2, Int>::from_data(TensorData::new(next, [b, 1]), &device);
        let hidden = model.hidden(
            ids,
            ForwardArgs {
                positions,
                mask,
                cache: Some(&mut cache),
            },
        );
        logits = last_logits(model, hidden);
        cache_len += 1;
    }
    results
}

/// Logits of the last position, copied to the host: `[B, T, hidden]` → row-major `[B, V]`.
fn last_logits(model: &CausalLm, hidden: Tensor<3>) -> Vec<f32> {
    let [_, t, _] = hidden.dims();
    let logits = model.logits(hidden.narrow(1, t - 1, 1)); // [B, 1, V]
    logits
        .into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .expect("f32 logits")
}
