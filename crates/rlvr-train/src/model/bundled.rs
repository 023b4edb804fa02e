//! The base policy of a run: a given HuggingFace directory, or the bundled small model
//! warm-started by supervised fine-tuning on the task's training split and cached.
//!
//! The cache key is a hash of everything the warm start depends on (model shape, SFT settings,
//! `sft.seed`, and the training file's contents), so a changed setting never reuses a stale
//! model, while runs that differ only in the RL `seed` share one warm start.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use burn::tensor::Device;
use rlvr_models::{CausalLm, ModelConfig, Tokenizer, load_pretrained, save_pretrained};

use super::char_tokenizer::{
    ALPHABET, EOS_ID, PAD_ID, tokenizer_config_json, tokenizer_json, vocab_size,
};
use crate::config::RunConfig;
use crate::data::Example;
use crate::error::{Error, Result};
use crate::sft::train_sft;

/// A loaded base policy.
pub struct BasePolicy {
    /// The policy, on the autodiff device it was loaded to.
    pub model: CausalLm,
    /// Its architecture.
    pub config: ModelConfig,
    /// Its tokenizer.
    pub tokenizer: Tokenizer,
    /// The directory it was loaded from.
    pub dir: PathBuf,
}

/// Loads `model.base`, or builds/reuses the warm-started bundled model.
pub fn base_policy(
    config: &RunConfig,
    train_set: &[Example],
    held_out: &[Example],
    device: &Device,
) -> Result<BasePolicy> {
    let dir = base_dir(config)?;
    if config.model.base.as_os_str().is_empty() {
        // One warm start at a time in this process: runs started together (tests, `compare`)
        // then share the first one's cached model instead of training it twice.
        let _one = WARM_START
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !dir.join("model.safetensors").exists() {
            eprintln!(
                "warm start: supervised fine-tuning of the bundled model -> {}",
                dir.display()
            );
            warm_start(config, train_set, held_out, device, &dir)?;
        } else {
            eprintln!("warm start: reusing {}", dir.display());
        }
    }
    load_dir(&dir, device)
}

/// Serializes warm starts within a process (see [`base_policy`]).
static WARM_START: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Where the warm-started bundled model of `config` is (or would be) cached.
pub fn bundled_dir(config: &RunConfig) -> Result<PathBuf> {
    Ok(config
        .sft
        .cache_dir
        .join(format!("bundled-{:016x}", cache_key(config)?)))
}

/// The directory of a run's starting policy: `model.base`, or the cached warm start (which
/// need not exist yet).
pub fn base_dir(config: &RunConfig) -> Result<PathBuf> {
    if config.model.base.as_os_str().is_empty() {
        bundled_dir(config)
    } else {
        Ok(config.model.base.clone())
    }
}

/// Loads a HuggingFace directory (model and tokenizer) onto `device`.
pub fn load_dir(dir: &Path, device: &Device) -> Result<BasePolicy> {
    let (model, config) = load_pretrained(dir, device)?;
    let tokenizer = Tokenizer::from_dir(dir)?;
    Ok(BasePolicy {
        model,
        config,
        tokenizer,
        dir: dir.to_path_buf(),
    })
}

/// The bundled model's characters: `model.alphabet`, or the arithmetic task's.
pub fn alphabet(config: &RunConfig) -> &str {
    if config.model.alphabet.is_empty() {
        ALPHABET
    } else {
        &config.model.alphabet
    }
}

/// The context length the bundled model declares (`max_position_embeddings`). Its positions are
/// rotary, with no learned table, so this bounds nothing locally; an inference server serving
/// it (`rollout.engine = "openai"`) refuses a request longer than this, and multi-turn episodes
/// run to `env.max_tokens` after the prompt.
pub const BUNDLED_CONTEXT: usize = 1024;

/// The architecture of the bundled model (a Qwen2-style decoder with a character vocabulary).
pub fn bundled_model_config(config: &RunConfig) -> Result<ModelConfig> {
    let m = &config.model;
    let hf = serde_json::json!({
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "vocab_size": vocab_size(alphabet(config)),
        "hidden_size": m.hidden_size,
        "intermediate_size": m.intermediate_size,
        "num_hidden_layers": m.num_layers,
        "num_attention_heads": m.num_heads,
        "num_key_value_heads": m.num_kv_heads,
        "max_position_embeddings": BUNDLED_CONTEXT,
        "rope_theta": 10000.0,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": true,
        "hidden_act": "silu",
        "bos_token_id": EOS_ID,
        "eos_token_id": EOS_ID,
        "pad_token_id": PAD_ID,
        "torch_dtype": "float32"
    });
    serde_json::from_value(hf).map_err(|e| Error::Config(format!("bundled model config: {e}")))
}

fn warm_start(
    config: &RunConfig,
    train_set: &[Example],
    held_out: &[Example],
    device: &Device,
    dir: &Path,
) -> Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let tmp = parent.join(format!(
        ".{}.tmp-{}",
        dir.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    for (name, text) in [
        ("tokenizer.json", tokenizer_json(alphabet(config))),
        ("tokenizer_config.json", tokenizer_config_json()),
    ] {
        let p = tmp.join(name);
        std::fs::write(&p, text).map_err(|e| Error::io(&p, e))?;
    }
    let tokenizer = Tokenizer::from_dir(&tmp)?;
    let model_config = bundled_model_config(config)?;
    device.seed(config.sft.seed);
    let model = CausalLm::new(&model_config, device);
    let transcripts = config.env.as_ref().filter(|_| config.sft.mask_observations);
    let model = train_sft(
        model,
        &tokenizer,
        train_set,
        held_out,
        transcripts,
        &config.sft,
        config.sft.seed,
        device,
    )?;
    save_pretrained(&model, &model_config, &tmp)?;
    match std::fs::rename(&tmp, dir) {
        Ok(()) => Ok(()),
        // Another process cached the same warm start first: use that one.
        Err(_) if dir.join("model.safetensors").exists() => {
            std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))
        }
        Err(e) => Err(Error::io(dir, e)),
    }
}

fn cache_key(config: &RunConfig) -> Result<u64> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let model = serde_json::to_string(&config.model).expect("serializes");
    let sft = serde_json::to_string(&(
        &config.sft.steps,
        &config.sft.batch_size,
        config.sft.lr.to_bits(),
    ))
    .expect("serializes");
    // `sft.seed` sits where the run seed was before it had its own field, so the default
    // run's cache key (both 0) is unchanged.
    (model, sft, config.sft.seed, alphabet(config)).hash(&mut h);
    // Hashed only when on, so that the keys of warm starts from before the knob are unchanged.
    if config.sft.mask_observations {
        "mask_observations".hash(&mut h);
    }
    // The saved config.json declares the context: a cache from before it changed is not reused.
    BUNDLED_CONTEXT.hash(&mut h);
    let data = crate::data::train_fingerprint(&config.data)?;
    data.hash(&mut h);
    Ok(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RL seeds share one warm start; a different `sft.seed` gets its own.
    #[test]
    fn the_cache_key_follows_sft_seed_not_the_run_seed() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("train.jsonl");
        std::fs::write(&data, "{\"prompt\": \"1+1=\", \"answer\": \"2\"}\n").unwrap();
        let load = |sets: &[&str]| {
            let mut all = vec![format!("data.train=\"{}\"", data.display())];
            all.extend(sets.iter().map(|s| s.to_string()));
            cache_key(&RunConfig::load(None, &all).unwrap()).unwrap()
        };
        assert_eq!(load(&[]), load(&["seed=3"]));
        assert_ne!(load(&[]), load(&["sft.seed=3"]));
    }
}
