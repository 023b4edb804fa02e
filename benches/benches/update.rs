//! The cost of the update's memory paths at equal batch: one forward+backward of the RL loss's
//! log-probs over the whole batch, the same split into micro-batches (gradients accumulated),
//! the chunked LM head (`chunked_token_logprobs` + `ChunkedScores::backward`), and LoRA
//! (rank-16 adapters on every projection, base frozen).
//!
//! A SmolLM2-shaped head (vocabulary 49,152, tied embeddings) on a smaller decoder (hidden 256,
//! 4 layers), 8 sequences of 256 tokens whose last 192 are scored, as an RL batch of
//! GSM8K-length responses.
//!
//! `update_smollm2_shape` runs one pass and the chunked head on SmolLM2-135M's own shape.
//!
//! `cargo bench -p rlvr-benches --bench update -- --warm-up-time 1 --measurement-time 20`

use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::{Device, Int, Tensor, TensorData};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rlvr_models::{CausalLm, LoraConfig, ModelConfig, chunked_token_logprobs, token_logprobs_at};

const VOCAB: usize = 49_152;
/// Sequences, tokens per sequence, prompt tokens (not scored).
const B: usize = 8;
const T: usize = 256;
const PROMPT: usize = 64;

fn batch(rows: std::ops::Range<usize>, device: &Device) -> (Tensor<2, Int>, Tensor<2>) {
    let n = rows.len();
    let ids: Vec<i64> = rows
        .clone()
        .flat_map(|r| (0..T).map(move |i| ((r * 7919 + i * 131 + 13) % VOCAB) as i64))
        .collect();
    let mask: Vec<f32> = (0..n * T)
        .map(|i| if i % T >= PROMPT { 1.0 } else { 0.0 })
        .collect();
    (
        Tensor::from_data(TensorData::new(ids, [n, T]), device),
        Tensor::from_data(TensorData::new(mask, [n, T]), device),
    )
}

/// The policy-gradient surrogate with an entropy term: `-Σ A·logp·mask - 0.01·Σ H·mask`,
/// A = ±1 by row.
fn loss(logp: Tensor<2>, entropy: Tensor<2>, mask: &Tensor<2>) -> Tensor<1> {
    let [n, _] = logp.dims();
    let adv: Vec<f32> = (0..n)
        .map(|r| if r % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let adv = Tensor::<1>::from_data(TensorData::new(adv, [n]), &logp.device()).unsqueeze_dim(1);
    -(logp * adv * mask.clone()).sum() - (entropy * mask.clone()).sum() * 0.01
}

fn one_pass(model: &CausalLm, rows: std::ops::Range<usize>, device: &Device) -> GradientsParams {
    let (ids, mask) = batch(rows, device);
    let scores = token_logprobs_at(model, ids, mask.clone(), 1.0);
    GradientsParams::from_grads(loss(scores.logp, scores.entropy, &mask).backward(), model)
}

fn update(c: &mut Criterion) {
    let mut group = c.benchmark_group("update/fwd_bwd");
    group.sample_size(10);
    group.throughput(Throughput::Elements((B * (T - PROMPT)) as u64));
    let device = Device::flex().autodiff();
    device.seed(0);
    let mut config = ModelConfig::tiny(VOCAB, 256, 4);
    config.tie_word_embeddings = true;
    let model = CausalLm::new(&config, &device);
    let id = |name: &str| BenchmarkId::new(name, format!("B{B}xT{T}"));

    group.bench_function(id("one_pass"), |bench| {
        bench.iter(|| std::hint::black_box(one_pass(&model, 0..B, &device)));
    });
    group.bench_function(id("micro_batches_4x2"), |bench| {
        bench.iter(|| {
            let mut acc = GradientsAccumulator::new();
            for start in (0..B).step_by(2) {
                acc.accumulate(&model, one_pass(&model, start..start + 2, &device));
            }
            std::hint::black_box(acc.grads())
        });
    });
    group.bench_function(id("chunked_head_64"), |bench| {
        bench.iter(|| {
            let (ids, mask) = batch(0..B, &device);
            let scores = chunked_token_logprobs(&model, ids, mask.clone(), 1.0, 64).unwrap();
            let grads = loss(scores.logp.clone(), scores.entropy.clone(), &mask).backward();
            std::hint::black_box(scores.backward(&model, &grads))
        });
    });
    let lora = model.clone().with_lora(&LoraConfig::default()).unwrap();
    group.bench_function(id("lora_r16_all_linear"), |bench| {
        bench.iter(|| std::hint::black_box(one_pass(&lora, 0..B, &device)));
    });
    group.finish();
}

/// The same one pass and chunked head on SmolLM2-135M's own shape (hidden 576, 30 layers, 9
/// query and 3 kv heads, SwiGLU 1536, tied 49,152-token head; random weights), 2 sequences of
/// 256 tokens: the head is a smaller share of the work than in `update`'s head-heavy shape.
fn update_smollm2_shape(c: &mut Criterion) {
    const ROWS: usize = 2;
    let mut group = c.benchmark_group("update_smollm2_shape/fwd_bwd");
    group.sample_size(10);
    group.throughput(Throughput::Elements((ROWS * (T - PROMPT)) as u64));
    let device = Device::flex().autodiff();
    device.seed(0);
    let mut config = ModelConfig::tiny(VOCAB, 576, 30);
    config.intermediate_size = 1536;
    config.num_attention_heads = 9;
    config.num_key_value_heads = Some(3);
    config.tie_word_embeddings = true;
    let model = CausalLm::new(&config, &device);
    let id = |name: &str| BenchmarkId::new(name, format!("B{ROWS}xT{T}"));
    group.bench_function(id("one_pass"), |bench| {
        bench.iter(|| std::hint::black_box(one_pass(&model, 0..ROWS, &device)));
    });
    for chunk in [64, 256] {
        group.bench_function(id(&format!("chunked_head_{chunk}")), |bench| {
            bench.iter(|| {
                let (ids, mask) = batch(0..ROWS, &device);
                let scores = chunked_token_logprobs(&model, ids, mask.clone(), 1.0, chunk).unwrap();
                let grads = loss(scores.logp.clone(), scores.entropy.clone(), &mask).backward();
                std::hint::black_box(scores.backward(&model, &grads))
            });
        });
    }
    group.finish();
}

criterion_group!(benches, update, update_smollm2_shape);
criterion_main!(benches);
