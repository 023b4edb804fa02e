//! rlvr-models throughput: training forward+backward (`token_logprobs` → loss → backward) and
//! KV-cache generation, in tokens per second, for a small and a larger Qwen2-style config.
//!
//! `cargo bench -p rlvr-benches --bench model -- --warm-up-time 1 --measurement-time 3`

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rlvr_models::{CausalLm, GenerationConfig, ModelConfig, generate, token_logprobs};

/// (name, hidden, layers); vocab 2048, head_dim 64, GQA 2:1, SwiGLU 8d/3.
const CONFIGS: [(&str, usize, usize); 2] = [("d256_l4", 256, 4), ("d512_l8", 512, 8)];
const VOCAB: usize = 2048;

fn ids(b: usize, t: usize, device: &Device) -> Tensor<2, Int> {
    let data: Vec<i64> = (0..b * t)
        .map(|i| ((i * 7919 + 13) % VOCAB) as i64)
        .collect();
    Tensor::from_data(TensorData::new(data, [b, t]), device)
}

fn train_step(c: &mut Criterion) {
    let (b, t) = (8, 128);
    let mut group = c.benchmark_group("model/fwd_bwd");
    group.sample_size(10);
    group.throughput(Throughput::Elements((b * t) as u64));
    for (name, hidden, layers) in CONFIGS {
        let device = Device::flex().autodiff();
        device.seed(0);
        let model = CausalLm::new(&ModelConfig::tiny(VOCAB, hidden, layers), &device);
        let input = ids(b, t, &device);
        let mask = Tensor::<2>::ones([b, t], &device);
        group.bench_function(BenchmarkId::new(name, format!("B{b}xT{t}")), |bench| {
            bench.iter(|| {
                let scores = token_logprobs(&model, input.clone(), mask.clone());
                let grads = scores.logp.sum().neg().backward();
                std::hint::black_box(model.lm_head.as_ref().unwrap().weight.grad(&grads));
            });
        });
    }
    group.finish();
}

fn generation(c: &mut Criterion) {
    let (b, prompt_len, new_tokens) = (16, 32, 64);
    let mut group = c.benchmark_group("model/generate");
    group.sample_size(10);
    group.throughput(Throughput::Elements((b * new_tokens) as u64));
    for (name, hidden, layers) in CONFIGS {
        let device = Device::flex();
        device.seed(0);
        let model = CausalLm::new(&ModelConfig::tiny(VOCAB, hidden, layers), &device).valid();
        let prompts: Vec<Vec<u32>> = (0..b)
            .map(|r| {
                (0..prompt_len - r % 4)
                    .map(|i| ((r * 131 + i * 17) % VOCAB) as u32)
                    .collect()
            })
            .collect();
        let config = GenerationConfig {
            max_new_tokens: new_tokens,
            temperature: 1.0,
            top_k: None,
            top_p: Some(0.95),
            stop_token_ids: vec![],
            pad_token_id: 0,
        };
        group.bench_function(
            BenchmarkId::new(name, format!("B{b}_prompt{prompt_len}_new{new_tokens}")),
            |bench| {
                bench.iter(|| std::hint::black_box(generate(&model, &prompts, &config, 0)));
            },
        );
    }
    group.finish();
}

criterion_group!(benches, train_step, generation);
criterion_main!(benches);
