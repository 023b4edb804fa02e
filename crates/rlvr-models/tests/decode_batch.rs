//! `DecodeBatch` (continuous batching: rows join and leave between steps) against `generate`:
//! with each row's RNG seeded `row_seed(seed, i)`, the step-level path samples the same tokens
//! with the same log-probs, whether the rows start together or join at different steps.

use burn::tensor::Device;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rlvr_models::{
    CausalLm, DecodeBatch, Generation, GenerationConfig, ModelConfig, Sampler, generate,
    log_softmax_at, row_seed,
};

const VOCAB: usize = 48;

/// A tiny random model; the device RNG is seeded under a lock (tests run in parallel).
fn model() -> CausalLm {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let device = Device::flex();
    device.seed(2024);
    CausalLm::new(&ModelConfig::tiny(VOCAB, 64, 2), &device)
}

fn prompts() -> Vec<Vec<u32>> {
    vec![
        vec![5, 6, 7],
        (0..11).map(|i| (i * 7 + 3) % VOCAB as u32).collect(),
        vec![40],
        vec![1, 2, 3, 4, 5, 6],
    ]
}

fn config(temperature: f32) -> GenerationConfig {
    GenerationConfig {
        max_new_tokens: 12,
        temperature,
        top_k: Some(30),
        top_p: Some(0.95),
        // Row lengths differ: some rows stop early, so rows leave the batch mid-way.
        stop_token_ids: vec![9, 17],
        pad_token_id: 0,
    }
}

/// Runs the prompts through a `DecodeBatch`; prompt `i` joins before decode step `join[i]`.
fn decode_batch(
    model: &CausalLm,
    prompts: &[Vec<u32>],
    join: &[usize],
    config: &GenerationConfig,
    seed: u64,
) -> Vec<Generation> {
    let vocab = model.vocab_size();
    let sampler = Sampler {
        temperature: config.temperature,
        top_k: config.top_k,
        top_p: config.top_p,
    };
    let mut out: Vec<Generation> = prompts
        .iter()
        .map(|_| Generation {
            tokens: vec![],
            logprobs: vec![],
            finish_reason: rlvr_models::FinishReason::Length,
        })
        .collect();
    let mut rngs: Vec<StdRng> = (0..prompts.len())
        .map(|i| StdRng::seed_from_u64(row_seed(seed, i as u64)))
        .collect();
    let mut batch = DecodeBatch::new(model.num_layers());
    let mut rows: Vec<usize> = Vec::new(); // batch row -> prompt index
    let mut logits: Vec<f32> = Vec::new();
    let mut waiting: Vec<usize> = (0..prompts.len()).collect();
    let mut step = 0;
    loop {
        let joining: Vec<usize> = waiting
            .iter()
            .copied()
            .filter(|&i| join[i] <= step)
            .collect();
        waiting.retain(|i| !joining.contains(i));
        if !joining.is_empty() {
            let new: Vec<Vec<u32>> = joining.iter().map(|&i| prompts[i].clone()).collect();
            logits.extend(batch.prefill(model, &new, config.pad_token_id));
            rows.extend(joining);
        }
        if rows.is_empty() && waiting.is_empty() {
            break;
        }
        let (mut keep, mut next) = (Vec::new(), Vec::new());
        for (slot, &i) in rows.iter().enumerate() {
            let row = &logits[slot * vocab..(slot + 1) * vocab];
            let token = sampler.sample(row, &mut rngs[i]);
            out[i].tokens.push(token);
            out[i].logprobs.push(log_softmax_at(row, token));
            if config.stop_token_ids.contains(&token) {
                out[i].finish_reason = rlvr_models::FinishReason::Stop;
            } else if out[i].tokens.len() < config.max_new_tokens {
                keep.push(slot);
                next.push(token);
            }
        }
        batch.retain(&keep);
        rows = keep.iter().map(|&s| rows[s]).collect();
        logits = if rows.is_empty() {
            Vec::new()
        } else {
            batch.step(model, &next)
        };
        step += 1;
    }
    out
}

fn assert_same(expected: &[Generation], got: &[Generation]) {
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        assert_eq!(e.tokens, g.tokens, "prompt {i}: tokens");
        assert_eq!(
            e.finish_reason, g.finish_reason,
            "prompt {i}: finish reason"
        );
        for (a, b) in e.logprobs.iter().zip(&g.logprobs) {
            assert!((a - b).abs() <= 1e-4, "prompt {i}: log-prob {a} vs {b}");
        }
    }
}

#[test]
fn all_rows_joining_at_once_equal_generate() {
    let model = model();
    for temperature in [0.0, 1.0] {
        let config = config(temperature);
        let expected = generate(&model, &prompts(), &config, 77);
        let got = decode_batch(&model, &prompts(), &[0, 0, 0, 0], &config, 77);
        assert_same(&expected, &got);
    }
}

#[test]
fn staggered_joins_equal_generate() {
    let model = model();
    let config = config(1.0);
    let expected = generate(&model, &prompts(), &config, 5);
    // Prompt 1 (the longest) joins late, so earlier rows get padded when it arrives; prompt 3
    // joins later still.
    let got = decode_batch(&model, &prompts(), &[0, 3, 1, 6], &config, 5);
    assert_same(&expected, &got);
    // The runs are long enough to overlap (otherwise the joins test nothing).
    assert!(expected.iter().filter(|g| g.tokens.len() > 6).count() >= 2);
}
