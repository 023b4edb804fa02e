//! Model workloads: the training step (forward + backward + AdamW) and batched KV-cache sampling.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, TensorData};
use rlvr_models::{
    CausalLm, GenerationConfig, ModelConfig, generate as sample, load_pretrained,
    token_logprobs_only,
};
use rlvr_optim::{AdamwConfig, OptimizerConfig};
use serde_json::{Value, json};

use crate::median;

/// The HF `config.json` of a named shape: `bundled` is the default run's model
/// (`configs/default.toml`: d128, 4 layers, character vocabulary of 51, tied head); `d256l4` and
/// `d512l8` are [`ModelConfig::tiny`] with vocab 2048 (the criterion benches' shapes); `smollm2`
/// is SmolLM2-135M's architecture.
pub fn named_config(name: &str) -> Result<Value> {
    let config = match name {
        "bundled" => serde_json::from_value(json!({
            "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
            "vocab_size": 51, "hidden_size": 128, "intermediate_size": 384,
            "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
            "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": true,
            "max_position_embeddings": 64, "hidden_act": "silu"
        }))?,
        "d256l4" => ModelConfig::tiny(2048, 256, 4),
        "d512l8" => ModelConfig::tiny(2048, 512, 8),
        "smollm2" => serde_json::from_value(json!({
            "architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
            "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
            "rope_theta": 100000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": true,
            "max_position_embeddings": 8192, "attention_bias": false, "mlp_bias": false,
            "hidden_act": "silu"
        }))?,
        other => bail!("unknown shape `{other}` (bundled, d256l4, d512l8, smollm2)"),
    };
    Ok(serde_json::to_value(config)?)
}

/// Deterministic token ids `[b, t]`, `id = (i·7919 + 13) mod vocab` over the flattened index
/// (`benches/compare/common.py` builds the same tensor).
fn ids(b: usize, t: usize, vocab: usize, device: &Device) -> Tensor<2, Int> {
    let data: Vec<i64> = (0..b * t)
        .map(|i| ((i * 7919 + 13) % vocab) as i64)
        .collect();
    Tensor::from_data(TensorData::new(data, [b, t]), device)
}

/// The CPU device of a backend name: `flex` (burn's pure-Rust backend), or `tch` (libtorch's
/// CPU kernels through burn-tch, in a build with `--features tch`).
fn cpu_device(backend: &str) -> Result<Device> {
    match backend {
        "flex" => Ok(Device::flex()),
        // burn-tch is deprecated upstream; it stays here as the libtorch point of comparison.
        #[cfg(feature = "tch")]
        #[allow(deprecated)]
        "tch" => Ok(Device::libtorch()),
        #[cfg(not(feature = "tch"))]
        "tch" => bail!("backend `tch` needs bench_worker built with `--features tch`"),
        other => bail!("unknown backend `{other}` (flex, tch)"),
    }
}

fn read_config(path: &Path) -> Result<ModelConfig> {
    ModelConfig::from_file(path).with_context(|| format!("reading {}", path.display()))
}

/// `iters` timed training steps after `warmup` untimed ones: per-token log-probs of the batch
/// ([`token_logprobs_only`]: LM head on positions `0..T-1`, log-softmax, gather), mean negative
/// log-likelihood, `backward`, AdamW (lr 1e-4, betas 0.9/0.999, eps 1e-8, wd 0.01), on the
/// CPU backend named by `backend` ([`cpu_device`]).
pub fn train_step(
    config: &Path,
    batch: usize,
    seq: usize,
    warmup: usize,
    iters: usize,
    backend: &str,
) -> Result<Value> {
    let config = read_config(config)?;
    let device = cpu_device(backend)?.autodiff();
    device.seed(0);
    let mut model = CausalLm::try_new(&config, &device)?;
    let mut optim = OptimizerConfig::Adamw(AdamwConfig::default()).init(&model)?;
    let input = ids(batch, seq, config.vocab_size, &device);
    let mask = Tensor::<2>::ones([batch, seq], &device);
    let scored = (batch * (seq - 1)) as f64;
    let mut times = Vec::new();
    let mut losses = Vec::new();
    for i in 0..warmup + iters {
        let start = Instant::now();
        let logp = token_logprobs_only(&model, input.clone(), mask.clone());
        let loss = logp.sum().neg().div_scalar(scored);
        let loss_value: f32 = loss.clone().into_scalar();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-4, model, grads);
        let secs = start.elapsed().as_secs_f64();
        if i >= warmup {
            times.push(secs);
        }
        losses.push(loss_value);
    }
    let step_s = median(&times);
    let tokens = (batch * seq) as f64;
    let flops_per_token = model.flops_per_token(seq);
    Ok(json!({
        "workload": "train_step",
        "value": tokens / step_s,
        "unit": "tokens/s",
        "step_s": times,
        "flops_per_token": flops_per_token,
        "flops_per_s": flops_per_token * tokens / step_s,
        "params": model.num_params(),
        "batch": batch, "seq": seq,
        "backend": backend,
        "loss": losses,
    }))
}

/// `iters` timed batched generations of exactly `new_tokens` tokens per prompt (temperature 1,
/// no top-k/top-p, no stop tokens) after one untimed 8-token run.
pub fn generate(
    model_dir: Option<&Path>,
    config: Option<&Path>,
    batch: usize,
    prompt_len: usize,
    new_tokens: usize,
    iters: usize,
) -> Result<Value> {
    let device = Device::flex();
    device.seed(0);
    let model = match (model_dir, config) {
        (Some(dir), _) => {
            load_pretrained(dir, &device)
                .with_context(|| format!("loading {}", dir.display()))?
                .0
        }
        (None, Some(config)) => CausalLm::try_new(&read_config(config)?, &device)?,
        (None, None) => bail!("generate needs --model DIR or --config FILE"),
    }
    .valid();
    let vocab = model.vocab_size();
    let prompts: Vec<Vec<u32>> = (0..batch)
        .map(|r| {
            (0..prompt_len)
                .map(|i| ((r * prompt_len + i) * 7919 + 13) as u32 % vocab as u32)
                .collect()
        })
        .collect();
    let config = |n: usize| GenerationConfig {
        max_new_tokens: n,
        temperature: 1.0,
        top_k: None,
        top_p: None,
        stop_token_ids: vec![],
        pad_token_id: 0,
    };
    let _ = sample(&model, &prompts, &config(8), 1);
    let mut times = Vec::new();
    let mut produced = 0;
    for i in 0..iters {
        let start = Instant::now();
        let out = sample(&model, &prompts, &config(new_tokens), i as u64);
        times.push(start.elapsed().as_secs_f64());
        produced = out.iter().map(|g| g.tokens.len()).sum::<usize>();
    }
    let secs = median(&times);
    Ok(json!({
        "workload": "generate",
        "value": produced as f64 / secs,
        "unit": "new tokens/s",
        "run_s": times,
        "new_tokens_total": produced,
        "params": model.num_params(),
        "batch": batch, "prompt_len": prompt_len, "new_tokens": new_tokens,
    }))
}
