//! `ModelConfig`: a serde mirror of a Hugging Face `config.json` for the Qwen2 / Llama family.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The decoder families this crate implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// `Qwen2ForCausalLM`: q/k/v projections always carry a bias.
    Qwen2,
    /// `LlamaForCausalLM`: q/k/v/o bias only when `attention_bias` is true.
    Llama,
}

/// A Hugging Face `config.json` of a Qwen2 or Llama causal LM, with HF field names unchanged.
///
/// Fields HF may omit have `#[serde(default)]` with the HF default. Fields this crate does not
/// use are kept in [`ModelConfig::extra`] so that [`ModelConfig::save`] writes them back.
/// Both the transformers v4 layout (`rope_theta` at top level) and the v5 layout
/// (`rope_parameters.rope_theta`) are read; see [`ModelConfig::rope_theta`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// HF class names, e.g. `["Qwen2ForCausalLM"]`.
    #[serde(default)]
    pub architectures: Vec<String>,
    /// `"qwen2"` or `"llama"`.
    pub model_type: String,
    /// Vocabulary size V (rows of `embed_tokens`, may exceed the tokenizer's vocabulary).
    pub vocab_size: usize,
    /// Model width d.
    pub hidden_size: usize,
    /// SwiGLU inner width.
    pub intermediate_size: usize,
    /// Number of decoder blocks.
    pub num_hidden_layers: usize,
    /// Number of query heads H.
    pub num_attention_heads: usize,
    /// Number of key/value heads (grouped-query attention); HF default: `num_attention_heads`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_key_value_heads: Option<usize>,
    /// Per-head width; HF default: `hidden_size / num_attention_heads`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_dim: Option<usize>,
    /// RoPE base θ (transformers v4 layout). See [`ModelConfig::rope_theta`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_theta: Option<f64>,
    /// RoPE parameters (transformers v5 layout: `{"rope_theta": .., "rope_type": "default"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_parameters: Option<serde_json::Value>,
    /// RoPE scaling (v4 layout). Only `null` / `"default"` is supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_scaling: Option<serde_json::Value>,
    /// RMSNorm epsilon; HF default 1e-6.
    #[serde(default = "default_rms_norm_eps")]
    pub rms_norm_eps: f64,
    /// Whether `lm_head` shares the embedding matrix; HF default false.
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Longest context the model was trained for; informational (RoPE is computed on the fly).
    #[serde(default = "default_max_position_embeddings")]
    pub max_position_embeddings: usize,
    /// Llama: bias on q/k/v/o projections; HF default false. Qwen2 ignores it (q/k/v bias always).
    #[serde(default)]
    pub attention_bias: bool,
    /// Llama: bias on the MLP projections; only `false` is supported.
    #[serde(default)]
    pub mlp_bias: bool,
    /// MLP activation; only `"silu"` (SwiGLU) is supported.
    #[serde(default = "default_hidden_act")]
    pub hidden_act: String,
    /// Beginning-of-sequence token id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bos_token_id: Option<serde_json::Value>,
    /// End-of-sequence token id: an integer or a list of integers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eos_token_id: Option<serde_json::Value>,
    /// Every other field of config.json, written back unchanged by [`ModelConfig::save`].
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

fn default_rms_norm_eps() -> f64 {
    1e-6
}
fn default_max_position_embeddings() -> usize {
    2048
}
fn default_hidden_act() -> String {
    "silu".to_owned()
}

impl ModelConfig {
    /// Reads and validates a `config.json`.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::Json`] (names a missing field), [`Error::UnknownArchitecture`],
    /// [`Error::InvalidConfig`] (names the field).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let config: Self = serde_json::from_str(&text).map_err(|source| Error::Json {
            path: path.to_owned(),
            source,
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Writes this config as pretty JSON (HF field names, unknown fields preserved).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let text = serde_json::to_string_pretty(self).map_err(|source| Error::Json {
            path: path.to_owned(),
            source,
        })?;
        std::fs::write(path, text + "\n").map_err(|e| Error::io(path, e))
    }

    /// A small Qwen2-style config for tests, benchmarks and the bundled task: `hidden_size`
    /// d, `num_hidden_layers` L, head_dim 64 (at least one head), two query heads per kv head
    /// when possible, SwiGLU width `round_up(8d/3, 8)`, θ = 1e4, untied `lm_head`.
    pub fn tiny(vocab_size: usize, hidden_size: usize, num_hidden_layers: usize) -> Self {
        let heads = (hidden_size / 64).max(1);
        let kv_heads = if heads.is_multiple_of(2) {
            heads / 2
        } else {
            heads
        };
        let intermediate = (8 * hidden_size / 3).div_ceil(8) * 8;
        Self {
            architectures: vec!["Qwen2ForCausalLM".to_owned()],
            model_type: "qwen2".to_owned(),
            vocab_size,
            hidden_size,
            intermediate_size: intermediate,
            num_hidden_layers,
            num_attention_heads: heads,
            num_key_value_heads: Some(kv_heads),
            head_dim: None,
            rope_theta: Some(10_000.0),
            rope_parameters: None,
            rope_scaling: None,
            rms_norm_eps: 1e-6,
            tie_word_embeddings: false,
            max_position_embeddings: 4096,
            attention_bias: false,
            mlp_bias: false,
            hidden_act: default_hidden_act(),
            bos_token_id: None,
            eos_token_id: None,
            extra: serde_json::Map::new(),
        }
    }

    /// The decoder family, from `architectures` (first match) or else `model_type`.
    ///
    /// # Errors
    /// [`Error::UnknownArchitecture`] when neither names Qwen2 or Llama.
    pub fn architecture(&self) -> Result<Architecture> {
        let from_arch = self.architectures.iter().find_map(|a| match a.as_str() {
            "Qwen2ForCausalLM" => Some(Architecture::Qwen2),
            "LlamaForCausalLM" => Some(Architecture::Llama),
            _ => None,
        });
        let from_type = match self.model_type.as_str() {
            "qwen2" => Some(Architecture::Qwen2),
            "llama" => Some(Architecture::Llama),
            _ => None,
        };
        // An `architectures` list naming something else (e.g. a reward-model head) is rejected
        // even when `model_type` matches: the checkpoint would not hold a causal LM.
        let arch = if self.architectures.is_empty() {
            from_type
        } else {
            from_arch
        };
        arch.ok_or_else(|| Error::UnknownArchitecture {
            architectures: self.architectures.clone(),
            model_type: self.model_type.clone(),
        })
    }

    /// Number of key/value heads (`num_key_value_heads`, default `num_attention_heads`).
    pub fn num_kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    /// Per-head width (`head_dim`, default `hidden_size / num_attention_heads`).
    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or(self.hidden_size / self.num_attention_heads.max(1))
    }

    /// Whether q/k/v projections carry a bias (always for Qwen2; `attention_bias` for Llama).
    pub fn qkv_bias(&self) -> bool {
        matches!(self.architecture(), Ok(Architecture::Qwen2)) || self.attention_bias
    }

    /// Whether `o_proj` carries a bias (Llama with `attention_bias`; never for Qwen2).
    pub fn o_bias(&self) -> bool {
        matches!(self.architecture(), Ok(Architecture::Llama)) && self.attention_bias
    }

    /// RoPE base θ: `rope_parameters.rope_theta` (v5), else `rope_theta` (v4), else 10000.
    pub fn rope_theta(&self) -> f64 {
        self.rope_parameters
            .as_ref()
            .and_then(|p| p.get("rope_theta"))
            .and_then(serde_json::Value::as_f64)
            .or(self.rope_theta)
            .unwrap_or(10_000.0)
    }

    /// Checks that the model this config describes can be built.
    ///
    /// # Errors
    /// [`Error::UnknownArchitecture`], or [`Error::InvalidConfig`] naming the offending field.
    pub fn validate(&self) -> Result<()> {
        self.architecture()?;
        for (field, value) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("num_key_value_heads", self.num_kv_heads()),
            ("head_dim", self.head_dim()),
        ] {
            if value == 0 {
                return Err(Error::config(field, "must be positive"));
            }
        }
        if self.head_dim.is_none() && !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(Error::config(
                "num_attention_heads",
                format!(
                    "{} does not divide hidden_size {}",
                    self.num_attention_heads, self.hidden_size
                ),
            ));
        }
        if !self.num_attention_heads.is_multiple_of(self.num_kv_heads()) {
            return Err(Error::config(
                "num_key_value_heads",
                format!(
                    "{} does not divide num_attention_heads {}",
                    self.num_kv_heads(),
                    self.num_attention_heads
                ),
            ));
        }
        if !self.head_dim().is_multiple_of(2) {
            return Err(Error::config(
                "head_dim",
                "rotary embeddings need an even head_dim",
            ));
        }
        if self.hidden_act != "silu" {
            return Err(Error::config(
                "hidden_act",
                format!("{:?} is not supported (only \"silu\")", self.hidden_act),
            ));
        }
        if self.mlp_bias {
            return Err(Error::config("mlp_bias", "MLP biases are not supported"));
        }
        let rope_type = |v: &serde_json::Value| {
            v.get("rope_type")
                .or_else(|| v.get("type"))
                .and_then(|t| t.as_str())
                .map(str::to_owned)
        };
        for (field, value) in [
            ("rope_scaling", &self.rope_scaling),
            ("rope_parameters", &self.rope_parameters),
        ] {
            if let Some(v) = value.as_ref().filter(|v| !v.is_null())
                && let Some(kind) = rope_type(v).filter(|k| k != "default")
            {
                return Err(Error::config(
                    field,
                    format!("rope type {kind:?} is not supported (only \"default\")"),
                ));
            }
        }
        if self.rope_theta().is_nan() || self.rope_theta() <= 0.0 {
            return Err(Error::config("rope_theta", "must be positive"));
        }
        if self.rms_norm_eps.is_nan() || self.rms_norm_eps <= 0.0 {
            return Err(Error::config("rms_norm_eps", "must be positive"));
        }
        if self
            .extra
            .get("use_sliding_window")
            .and_then(serde_json::Value::as_bool)
            == Some(true)
        {
            return Err(Error::config(
                "use_sliding_window",
                "sliding-window attention is not supported",
            ));
        }
        Ok(())
    }

    /// End-of-sequence ids listed in `eos_token_id` (integer or list), empty when absent.
    pub fn eos_token_ids(&self) -> Vec<u32> {
        json_ids(self.eos_token_id.as_ref())
    }
}

/// Token ids from a JSON integer or list of integers (HF allows both).
pub(crate) fn json_ids(value: Option<&serde_json::Value>) -> Vec<u32> {
    match value {
        Some(serde_json::Value::Number(n)) => {
            n.as_u64().map(|x| vec![x as u32]).unwrap_or_default()
        }
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_u64())
            .map(|x| x as u32)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V4: &str = r#"{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 10,
        "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
        "rope_theta": 1000000.0, "eos_token_id": [3, 4], "sliding_window": 4096}"#;

    #[test]
    fn v4_layout_and_hf_defaults() {
        let c: ModelConfig = serde_json::from_str(V4).unwrap();
        c.validate().unwrap();
        assert_eq!(c.rope_theta(), 1e6);
        assert_eq!(c.num_kv_heads(), 2); // defaults to num_attention_heads
        assert_eq!(c.head_dim(), 4);
        assert_eq!(c.rms_norm_eps, 1e-6);
        assert!(!c.tie_word_embeddings);
        assert!(c.qkv_bias() && !c.o_bias());
        assert_eq!(c.eos_token_ids(), vec![3, 4]);
    }

    #[test]
    fn v5_rope_parameters_win() {
        let mut c: ModelConfig = serde_json::from_str(V4).unwrap();
        c.rope_parameters = Some(serde_json::json!({"rope_theta": 5e5, "rope_type": "default"}));
        assert_eq!(c.rope_theta(), 5e5);
    }

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let c: ModelConfig = serde_json::from_str(V4).unwrap();
        let back: ModelConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.extra["sliding_window"], 4096);
    }

    #[test]
    fn tiny_is_valid_qwen2() {
        let c = ModelConfig::tiny(512, 256, 4);
        c.validate().unwrap();
        assert_eq!(c.architecture().unwrap(), Architecture::Qwen2);
        assert_eq!(
            (c.num_attention_heads, c.num_kv_heads(), c.head_dim()),
            (4, 2, 64)
        );
        assert_eq!(c.intermediate_size, 688); // 8·256/3 = 682 → rounded up to a multiple of 8
    }

    #[test]
    fn llama_bias_follows_attention_bias() {
        let mut c = ModelConfig::tiny(10, 64, 1);
        c.architectures = vec!["LlamaForCausalLM".into()];
        c.model_type = "llama".into();
        assert!(!c.qkv_bias() && !c.o_bias());
        c.attention_bias = true;
        assert!(c.qkv_bias() && c.o_bias());
    }
}
