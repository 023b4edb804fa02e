//! Generation: KV-cache greedy decoding equals full-prefix recomputation; sampled log-probs
//! equal teacher-forced log-probs; seeding; stop tokens and strings.

use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use rlvr_models::{
    CausalLm, FinishReason, GenerationConfig, Tokenizer, generate, generate_with_stop_strings,
    load_pretrained, token_logprobs,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn model(name: &str) -> CausalLm {
    load_pretrained(&fixture(name), &Device::flex())
        .expect("fixture loads")
        .0
        .valid()
}

/// Prompts of different lengths (1 to 12 tokens) with ids below 256.
fn prompts() -> Vec<Vec<u32>> {
    vec![
        vec![17, 200, 3],
        (0..12).map(|i| (i * 37 + 5) % 256).collect(),
        vec![99],
        vec![250, 1, 2, 3, 4, 5, 6],
    ]
}

/// Reference greedy decoding: each prompt alone, the whole prefix recomputed at every step.
fn greedy_recompute(model: &CausalLm, prompt: &[u32], steps: usize) -> Vec<u32> {
    let device = model.device();
    let mut seq: Vec<u32> = prompt.to_vec();
    for _ in 0..steps {
        let t = seq.len();
        let ids = Tensor::<2, Int>::from_data(
            TensorData::new(seq.iter().map(|&x| i64::from(x)).collect(), [1, t]),
            &device,
        );
        let logits = model
            .forward(ids)
            .narrow(1, t - 1, 1)
            .into_data()
            .try_into_vec::<f32>()
            .unwrap();
        let best = (0..logits.len()).fold(0, |b, i| if logits[i] > logits[b] { i } else { b });
        seq.push(best as u32);
    }
    seq[prompt.len()..].to_vec()
}

fn check_cache_matches_recompute(name: &str) {
    let model = model(name);
    let config = GenerationConfig::greedy(10, vec![]);
    let out = generate(&model, &prompts(), &config, 0);
    for (prompt, g) in prompts().iter().zip(&out) {
        assert_eq!(g.finish_reason, FinishReason::Length);
        assert_eq!(
            g.tokens,
            greedy_recompute(&model, prompt, 10),
            "{name}: prompt {prompt:?}"
        );
    }
}

#[test]
fn greedy_with_cache_equals_recompute_qwen2() {
    check_cache_matches_recompute("tiny-qwen2");
}

#[test]
fn greedy_with_cache_equals_recompute_llama() {
    check_cache_matches_recompute("tiny-llama");
}

#[test]
fn sampled_logprobs_equal_teacher_forced() {
    let model = model("tiny-qwen2");
    let config = GenerationConfig {
        max_new_tokens: 9,
        temperature: 0.9,
        top_k: Some(40),
        top_p: Some(0.9),
        stop_token_ids: vec![7],
        pad_token_id: 0,
    };
    let prompts = prompts();
    let out = generate(&model, &prompts, &config, 1234);

    // Right-padded prompt + response, mask = 1 on response tokens.
    let t = prompts
        .iter()
        .zip(&out)
        .map(|(p, g)| p.len() + g.tokens.len())
        .max()
        .unwrap();
    let (mut ids, mut mask) = (Vec::new(), Vec::new());
    for (p, g) in prompts.iter().zip(&out) {
        let row: Vec<u32> = p.iter().chain(&g.tokens).copied().collect();
        ids.extend(
            row.iter()
                .map(|&x| i64::from(x))
                .chain(std::iter::repeat_n(0, t - row.len())),
        );
        mask.extend((0..t).map(|i| {
            if i >= p.len() && i < row.len() {
                1.0f32
            } else {
                0.0
            }
        }));
    }
    let device = model.device();
    let b = prompts.len();
    let scores = token_logprobs(
        &model,
        Tensor::from_data(TensorData::new(ids, [b, t]), &device),
        Tensor::from_data(TensorData::new(mask, [b, t]), &device),
    );
    let logp = scores.logp.into_data().try_into_vec::<f32>().unwrap();
    let mut worst = 0.0f32;
    for (row, (p, g)) in prompts.iter().zip(&out).enumerate() {
        assert!(!g.tokens.is_empty());
        for (i, &lp) in g.logprobs.iter().enumerate() {
            assert!(lp <= 0.0);
            worst = worst.max((logp[row * t + p.len() + i] - lp).abs());
        }
    }
    assert!(worst <= 1e-4, "max |sampled - teacher-forced| = {worst}");
}

#[test]
fn sampling_is_seeded_and_reproducible() {
    let model = model("tiny-llama");
    let config = GenerationConfig {
        max_new_tokens: 8,
        temperature: 1.0,
        top_k: None,
        top_p: None,
        stop_token_ids: vec![],
        pad_token_id: 0,
    };
    let a = generate(&model, &prompts(), &config, 7);
    let b = generate(&model, &prompts(), &config, 7);
    let c = generate(&model, &prompts(), &config, 8);
    assert_eq!(a, b);
    assert_ne!(
        a.iter().map(|g| &g.tokens).collect::<Vec<_>>(),
        c.iter().map(|g| &g.tokens).collect::<Vec<_>>()
    );
    // A row's sample depends on (seed, row) only, not on the rest of the batch.
    let alone = generate(&model, &prompts()[..1], &config, 7);
    assert_eq!(alone[0].tokens, a[0].tokens);
}

#[test]
fn stop_token_ends_a_row_and_is_kept() {
    let model = model("tiny-qwen2");
    let free = generate(&model, &prompts(), &GenerationConfig::greedy(8, vec![]), 0);
    let stop = free[1].tokens[3];
    let first = free[1].tokens.iter().position(|&x| x == stop).unwrap();
    let out = generate(
        &model,
        &prompts(),
        &GenerationConfig::greedy(8, vec![stop]),
        0,
    );
    assert_eq!(out[1].tokens, free[1].tokens[..=first]);
    assert_eq!(out[1].finish_reason, FinishReason::Stop);
    // Other rows are unaffected unless they also emit `stop`.
    for (f, o) in free.iter().zip(&out) {
        let cut = f
            .tokens
            .iter()
            .position(|&x| x == stop)
            .map_or(f.tokens.len(), |i| i + 1);
        assert_eq!(o.tokens, f.tokens[..cut]);
    }
}

#[test]
fn stop_strings_cut_generation() {
    let model = model("tiny-qwen2");
    let tok = Tokenizer::from_dir(&fixture("tokenizer")).unwrap();
    let free = generate(&model, &prompts(), &GenerationConfig::greedy(8, vec![]), 0);
    // Stop at the text of the 3rd generated token of row 0.
    let text = tok.decode(&free[0].tokens[2..3]).unwrap();
    assert!(!text.is_empty());
    let out = generate_with_stop_strings(
        &model,
        &tok,
        &prompts(),
        &GenerationConfig::greedy(8, vec![]),
        std::slice::from_ref(&text),
        0,
    )
    .unwrap();
    assert_eq!(out[0].finish_reason, FinishReason::Stop);
    assert!(out[0].tokens.len() <= 3);
    assert!(tok.decode(&out[0].tokens).unwrap().contains(&text));
    assert_eq!(out[0].tokens[..], free[0].tokens[..out[0].tokens.len()]);
}

#[test]
fn zero_new_tokens_and_empty_batch() {
    let model = model("tiny-qwen2");
    assert!(generate(&model, &[], &GenerationConfig::greedy(4, vec![]), 0).is_empty());
    let out = generate(&model, &prompts(), &GenerationConfig::greedy(0, vec![]), 0);
    assert!(
        out.iter()
            .all(|g| g.tokens.is_empty() && g.finish_reason == FinishReason::Length)
    );
}
