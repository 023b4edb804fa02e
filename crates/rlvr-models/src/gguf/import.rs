//! `import_gguf`: a llama.cpp GGUF checkpoint → a Hugging Face directory (`config.json`,
//! `model.safetensors` in f32 with HF names and layouts, `tokenizer.json`,
//! `tokenizer_config.json` with the chat template, `generation_config.json`).

use std::collections::BTreeMap;
use std::path::Path;

use crate::checkpoint::{CONFIG_FILE, WEIGHTS_FILE};
use crate::config::{Architecture, ModelConfig};
use crate::error::{Error, Result};
use crate::gguf::names::{hf_tensor_name, unpermute_qk_rows};
use crate::gguf::reader::GgufFile;
use crate::gguf::value::MetadataValue;
use crate::gguf::vocab::{build_tokenizer, tokenizer_config};

/// Options of [`import_gguf_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOptions {
    /// Undo llama.cpp's q/k row permutation for Llama checkpoints (default `true`). `false`
    /// keeps the GGUF row order, which gives a wrong model; it exists to show that the
    /// permutation matters.
    pub undo_qk_permutation: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            undo_qk_permutation: true,
        }
    }
}

/// What [`import_gguf`] wrote.
#[derive(Debug, Clone)]
pub struct ImportSummary {
    /// The model config written to `config.json`.
    pub config: ModelConfig,
    /// Number of tensors written.
    pub num_tensors: usize,
    /// Number of parameters written.
    pub num_params: usize,
    /// How many GGUF tensors each ggml type held (`"Q4_1" → 210`, ...).
    pub source_types: BTreeMap<String, usize>,
    /// Vocabulary size of the tokenizer.
    pub tokenizer_vocab_size: usize,
}

/// A float metadata value rounded to the shortest decimal of its f32 (so that the f32
/// `1e-5` is written as `1e-05`, not `9.999999747378752e-06`).
fn metadata_float(v: &MetadataValue) -> Option<f64> {
    match v {
        MetadataValue::F32(x) => format!("{x}").parse().ok(),
        other => other.as_f64(),
    }
}

/// The HF model config implied by the GGUF metadata (`{arch}.block_count`,
/// `.embedding_length`, `.feed_forward_length`, `.attention.head_count[_kv]`,
/// `.attention.key_length`, `.rope.freq_base`, `.attention.layer_norm_rms_epsilon`,
/// `.context_length`) and tensors (vocabulary size from `token_embd.weight`, tied embeddings
/// when `output.weight` is absent, q/k/v bias when `blk.0.attn_q.bias` is present).
///
/// # Errors
/// [`Error::Gguf`] naming the metadata key or tensor that is missing or unsupported
/// (architectures other than `llama` / `qwen2`, RoPE scaling, partial rotary dimensions).
pub fn model_config(file: &GgufFile) -> Result<ModelConfig> {
    let err = |message: String| Error::Gguf {
        path: file.path().to_owned(),
        message,
    };
    let arch = file
        .get_str("general.architecture")?
        .ok_or_else(|| err("missing metadata key `general.architecture`".into()))?;
    let (architecture, hf_class) = match arch {
        "llama" => (Architecture::Llama, "LlamaForCausalLM"),
        "qwen2" => (Architecture::Qwen2, "Qwen2ForCausalLM"),
        other => {
            return Err(err(format!(
                "metadata `general.architecture` = {other:?} is not supported (supported: llama, qwen2)"
            )));
        }
    };
    let key = |k: &str| format!("{arch}.{k}");
    let int = |k: &str| -> Result<usize> { Ok(file.require_u64(&key(k))? as usize) };
    let opt_int = |k: &str| -> Result<Option<usize>> {
        match file.get(&key(k)) {
            None => Ok(None),
            Some(_) => int(k).map(Some),
        }
    };
    let opt_float = |k: &str| -> Result<Option<f64>> {
        file.get(&key(k))
            .map(|v| {
                metadata_float(v)
                    .ok_or_else(|| err(format!("metadata `{}` = {v:?} is not a number", key(k))))
            })
            .transpose()
    };
    if let Some(kind) = file.get_str(&key("rope.scaling.type"))?
        && kind != "none"
    {
        return Err(err(format!(
            "metadata `{}` = {kind:?}: RoPE scaling is not supported",
            key("rope.scaling.type")
        )));
    }
    let hidden = int("embedding_length")?;
    let heads = int("attention.head_count")?;
    let kv_heads = opt_int("attention.head_count_kv")?.unwrap_or(heads);
    let head_dim = opt_int("attention.key_length")?;
    let eff_head_dim = head_dim.unwrap_or(hidden / heads.max(1));
    if let Some(rot) = opt_int("rope.dimension_count")?
        && rot != eff_head_dim
    {
        return Err(err(format!(
            "metadata `{}` = {rot}: partial rotary embeddings (head_dim {eff_head_dim}) are not supported",
            key("rope.dimension_count")
        )));
    }
    let embd = file
        .tensor_info("token_embd.weight")
        .ok_or_else(|| err("missing tensor `token_embd.weight`".into()))?;
    let vocab_size = embd.shape()[0];
    let special = |name: &str| {
        file.get(&format!("tokenizer.ggml.{name}_token_id"))
            .and_then(MetadataValue::as_u64)
            .map(serde_json::Value::from)
    };
    let mut extra = serde_json::Map::new();
    extra.insert("torch_dtype".into(), "float32".into());
    if let Some(pad) = special("padding") {
        extra.insert("pad_token_id".into(), pad);
    }
    let config = ModelConfig {
        architectures: vec![hf_class.to_owned()],
        model_type: arch.to_owned(),
        vocab_size,
        hidden_size: hidden,
        intermediate_size: int("feed_forward_length")?,
        num_hidden_layers: int("block_count")?,
        num_attention_heads: heads,
        num_key_value_heads: Some(kv_heads),
        head_dim: head_dim.filter(|&d| d != hidden / heads.max(1)),
        rope_theta: Some(opt_float("rope.freq_base")?.unwrap_or(10_000.0)),
        rope_parameters: None,
        rope_scaling: None,
        rms_norm_eps: opt_float("attention.layer_norm_rms_epsilon")?.unwrap_or(1e-5),
        tie_word_embeddings: file.tensor_info("output.weight").is_none(),
        max_position_embeddings: opt_int("context_length")?.unwrap_or(2048),
        attention_bias: architecture == Architecture::Llama
            && file.tensor_info("blk.0.attn_q.bias").is_some(),
        mlp_bias: false,
        hidden_act: "silu".into(),
        bos_token_id: special("bos"),
        eos_token_id: special("eos"),
        extra,
    };
    config.validate()?;
    Ok(config)
}

/// [`import_gguf_with`] with default options: the faithful conversion.
///
/// # Errors
/// See [`import_gguf_with`].
pub fn import_gguf(gguf_path: &Path, out_dir: &Path) -> Result<ImportSummary> {
    import_gguf_with(gguf_path, out_dir, &ImportOptions::default())
}

/// Converts a GGUF checkpoint into a HF directory at `out_dir` (created if needed; other files
/// in it are kept): every tensor is dequantized to f32, renamed to its HF name, and for Llama
/// the q/k rows are put back into HF's `rotate_half` order ([`unpermute_qk_rows`]). The
/// directory then opens with [`load_pretrained`](crate::load_pretrained) and
/// [`Tokenizer::from_dir`](crate::Tokenizer::from_dir). `config.json` is written last, so an
/// interrupted import leaves no loadable directory behind.
///
/// # Errors
/// Those of [`GgufFile::open`], [`model_config`] and [`build_tokenizer`]; [`Error::Gguf`] for a
/// tensor without an HF counterpart or a q/k shape the heads do not divide;
/// [`Error::GgufUnsupportedType`]; [`Error::Io`] / [`Error::Safetensors`] when writing fails.
pub fn import_gguf_with(
    gguf_path: &Path,
    out_dir: &Path,
    options: &ImportOptions,
) -> Result<ImportSummary> {
    let file = GgufFile::open(gguf_path)?;
    let config = model_config(&file)?;
    let err = |message: String| Error::Gguf {
        path: gguf_path.to_owned(),
        message,
    };
    let permute = options.undo_qk_permutation && config.architecture()? == Architecture::Llama;

    let mut tensors: Vec<(String, Vec<usize>, Vec<f32>)> = Vec::new();
    let mut source_types = BTreeMap::new();
    for info in file.tensors() {
        let hf = hf_tensor_name(&info.name).ok_or_else(|| {
            err(format!(
                "tensor `{}` has no Hugging Face counterpart",
                info.name
            ))
        })?;
        *source_types.entry(info.ggml_type.name()).or_insert(0) += 1;
        let shape = info.shape();
        let mut data = file.tensor_f32(&info.name)?;
        let heads = if hf.ends_with("q_proj.weight") || hf.ends_with("q_proj.bias") {
            Some(config.num_attention_heads)
        } else if hf.ends_with("k_proj.weight") || hf.ends_with("k_proj.bias") {
            Some(config.num_kv_heads())
        } else {
            None
        };
        if let (true, Some(n_head)) = (permute, heads) {
            data = unpermute_qk_rows(&data, shape[0], n_head).ok_or_else(|| {
                err(format!(
                    "tensor `{}`: {} rows are not a multiple of 2 × {n_head} heads",
                    info.name, shape[0]
                ))
            })?;
        }
        tensors.push((hf, shape, data));
    }
    let num_params = tensors.iter().map(|t| t.2.len()).sum();

    std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, e))?;
    let config_path = out_dir.join(CONFIG_FILE);
    if config_path.exists() {
        std::fs::remove_file(&config_path).map_err(|e| Error::io(&config_path, e))?;
    }
    let tmp = out_dir.join(format!(".{WEIGHTS_FILE}.tmp-{}", std::process::id()));
    crate::checkpoint::write_safetensors(&tensors, &tmp)?;
    drop(tensors);
    let weights = out_dir.join(WEIGHTS_FILE);
    std::fs::rename(&tmp, &weights).map_err(|e| Error::io(&weights, e))?;

    let tokenizer = build_tokenizer(&file)?;
    let tok_path = out_dir.join("tokenizer.json");
    tokenizer
        .save(&tok_path, false)
        .map_err(|e| Error::Tokenizer {
            path: Some(tok_path.clone()),
            message: e.to_string(),
        })?;
    let tok_config = tokenizer_config(&file, Some(config.max_position_embeddings as u64))?;
    write_json(
        &out_dir.join("tokenizer_config.json"),
        &serde_json::Value::Object(tok_config),
    )?;
    let mut generation = serde_json::Map::new();
    for (key, value) in [
        ("bos_token_id", config.bos_token_id.clone()),
        ("eos_token_id", config.eos_token_id.clone()),
        ("pad_token_id", config.extra.get("pad_token_id").cloned()),
    ] {
        if let Some(v) = value {
            generation.insert(key.into(), v);
        }
    }
    write_json(
        &out_dir.join("generation_config.json"),
        &serde_json::Value::Object(generation),
    )?;
    config.save(&config_path)?;
    Ok(ImportSummary {
        num_tensors: file.tensors().len(),
        num_params,
        source_types,
        tokenizer_vocab_size: tokenizer.get_vocab_size(true),
        config,
    })
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|source| Error::Json {
        path: path.to_owned(),
        source,
    })?;
    std::fs::write(path, text + "\n").map_err(|e| Error::io(path, e))
}
