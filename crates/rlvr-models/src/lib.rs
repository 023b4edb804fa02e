//! Qwen2/Llama-family decoder on burn: HF checkpoints in and out, tokenizer and chat templates,
//! KV-cache sampling, per-token log-probs.
//!
//! The policy model of rlvr-rs: a decoder-only transformer (token embedding, RMSNorm, HF-style
//! rotary embeddings, grouped-query attention with optional q/k/v bias, SwiGLU MLP, tied or
//! untied LM head) that loads and saves Hugging Face directories unchanged, samples batched
//! rollouts with a KV cache, and scores tokens for the policy-gradient loss.
//!
//! ```no_run
//! use burn::module::Module;
//! use burn::tensor::Device;
//! use rlvr_models::{ChatMessage, GenerationConfig, Tokenizer, generate, load_pretrained};
//!
//! # fn main() -> rlvr_models::Result<()> {
//! let dir = std::path::Path::new("Qwen2.5-0.5B-Instruct");
//! let (model, _config) = load_pretrained(dir, &Device::flex())?;
//! let tok = Tokenizer::from_dir(dir)?;
//! let prompt = tok.apply_chat_template(&[ChatMessage::new("user", "2 + 2 = ?")], true)?;
//! let config = GenerationConfig { max_new_tokens: 64, temperature: 1.0, top_k: None, top_p: Some(0.95),
//!     stop_token_ids: tok.eos_token_ids(), pad_token_id: tok.pad_token_id().unwrap_or(0) };
//! let out = generate(&model.valid(), &[tok.encode(&prompt)?], &config, 42);
//! println!("{}", tok.decode_skip_special(&out[0].tokens)?);
//! # Ok(()) }
//! ```
//!
//! What is inside:
//! - [`ModelConfig`]: `config.json` with HF field names; [`CausalLm`]: the model.
//! - [`load_pretrained`] / [`save_pretrained`]: safetensors (single or sharded) in, f32 out, atomic.
//! - [`Tokenizer`]: `tokenizer.json` + chat template (minijinja) + special tokens.
//! - [`generate`] / [`generate_with_stop_strings`]: batched KV-cache sampling ([`Sampler`]).
//! - [`token_logprobs`]: teacher-forced log-probs and entropies for training.
//! - [`lora`]: LoRA adapters ([`CausalLm::with_lora`]), saved and loaded in PEFT's layout,
//!   merged with [`CausalLm::merge_lora`].
//! - [`gguf`]: llama.cpp GGUF checkpoints (dequantization, tokenizer from metadata) imported
//!   into a HF directory ([`gguf::import_gguf`]).
//!
//! # Feature flags
//! - default: burn's `flex` CPU backend (`Device::flex()`).
//! - `cuda`: burn-cuda (needs network access at build time for its LLVM bundle, and a CUDA driver).
//! - `tch`: burn-tch / libtorch 2.9 (deprecated upstream; needs `LIBTORCH_USE_PYTORCH=1` or `LIBTORCH`).
#![warn(missing_docs)]

mod allocator;
mod checkpoint;
mod chunked;
mod config;
mod decode_batch;
mod error;
mod generate;
pub mod gguf;
mod kv_cache;
mod logprobs;
pub mod lora;
mod model;
mod projection;
mod rope;
mod sampler;
mod tokenizer;
mod weight_dtype;
mod weights;

pub use allocator::retain_freed_memory;
pub use checkpoint::{
    CONFIG_FILE, WEIGHTS_FILE, WEIGHTS_INDEX_FILE, hf_tensors, load_pretrained, save_pretrained,
};
pub use chunked::{ChunkedScores, chunked_token_logprobs};
pub use config::{Architecture, ModelConfig};
pub use decode_batch::DecodeBatch;
pub use error::{Error, Result};
pub use generate::{
    FinishReason, Generation, GenerationConfig, generate, generate_with_stop_strings,
};
pub use kv_cache::KvCache;
pub use logprobs::{
    TokenScores, pad_front, scored_log_softmax, token_logprobs, token_logprobs_at,
    token_logprobs_only,
};
pub use lora::LoraConfig;
pub use model::{Attention, CausalLm, DecoderLayer, DecoderModel, Mlp, RmsNorm};
pub use projection::Projection;
pub use sampler::{Sampler, log_softmax_at, row_seed, splitmix64};
pub use tokenizer::{ChatMessage, Tokenizer};
pub use weight_dtype::{WeightDtype, store_weights_as, weight_bytes};
