//! The crate's error type: every failure on user input (configs, checkpoints, tokenizer files) names what was wrong.

use std::path::PathBuf;

/// Everything that can go wrong while reading or writing model, checkpoint and tokenizer files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    // ---- files ----
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A JSON file is malformed or lacks a required field (serde names the field and the line).
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// serde's message, e.g. "missing field `hidden_size` at line 3 column 1".
        source: serde_json::Error,
    },

    // ---- config.json ----
    /// `architectures` / `model_type` name a model family this crate does not implement.
    #[error(
        "unknown architecture: architectures = {architectures:?}, model_type = {model_type:?} \
         (supported: Qwen2ForCausalLM / qwen2, LlamaForCausalLM / llama)"
    )]
    UnknownArchitecture {
        /// The `architectures` field of config.json.
        architectures: Vec<String>,
        /// The `model_type` field of config.json.
        model_type: String,
    },
    /// A config field has a value the model cannot use.
    #[error("config field `{field}`: {reason}")]
    InvalidConfig {
        /// The HF field name, e.g. `num_key_value_heads`.
        field: String,
        /// Why the value is rejected.
        reason: String,
    },

    // ---- weights ----
    /// A tensor the architecture needs is not in the checkpoint.
    #[error("missing tensor `{name}` in {path}")]
    MissingTensor {
        /// The HF tensor name, e.g. `model.layers.0.self_attn.q_proj.weight`.
        name: String,
        /// The checkpoint directory or file searched.
        path: PathBuf,
    },
    /// The checkpoint holds a tensor the config does not account for (e.g. an extra layer).
    #[error("unexpected tensor `{name}` in {path} (config.json describes no such parameter)")]
    UnexpectedTensor {
        /// The HF tensor name.
        name: String,
        /// The checkpoint directory.
        path: PathBuf,
    },
    /// A tensor has a shape other than the config implies.
    #[error("tensor `{name}`: expected shape {expected:?}, found {found:?}")]
    ShapeMismatch {
        /// The HF tensor name.
        name: String,
        /// Shape implied by config.json (HF layout, e.g. `[out, in]` for a projection).
        expected: Vec<usize>,
        /// Shape stored in the checkpoint.
        found: Vec<usize>,
    },
    /// A tensor is stored in a dtype this crate cannot convert to f32.
    #[error("tensor `{name}`: unsupported dtype {dtype} (supported: F32, F16, BF16, F64)")]
    UnsupportedDtype {
        /// The HF tensor name.
        name: String,
        /// The stored dtype.
        dtype: String,
    },
    /// A LoRA adapter directory (PEFT layout) that cannot be used as it is.
    #[error("LoRA adapter {path}: {message}")]
    Adapter {
        /// The adapter file.
        path: PathBuf,
        /// What is wrong, naming the field or tensor.
        message: String,
    },
    /// A safetensors file is malformed.
    #[error("{path}: {message}")]
    Safetensors {
        /// The file.
        path: PathBuf,
        /// The safetensors crate's message.
        message: String,
    },

    // ---- tokenizer ----
    /// `tokenizer.json` could not be loaded, or encoding/decoding failed.
    #[error("tokenizer{}: {message}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Tokenizer {
        /// The tokenizer file, when the error concerns one.
        path: Option<PathBuf>,
        /// The tokenizers crate's message.
        message: String,
    },
    /// The chat template is missing, does not compile, or fails to render.
    #[error("chat template: {message}")]
    ChatTemplate {
        /// What went wrong (minijinja's message, with the template line when known).
        message: String,
    },

    // ---- GGUF ----
    /// A file does not start with the GGUF magic bytes.
    #[error("{path}: not a GGUF file (first bytes {found:?}, expected \"GGUF\")")]
    GgufBadMagic {
        /// The file.
        path: PathBuf,
        /// The first (up to four) bytes found.
        found: Vec<u8>,
    },
    /// A GGUF file ends inside a structure it declares (header, metadata, tensor info or data).
    #[error(
        "{path}: truncated GGUF file: {what} at byte {offset} needs {needed} bytes, the file has {len}"
    )]
    GgufTruncated {
        /// The file.
        path: PathBuf,
        /// What was being read, e.g. "metadata key 3" or "data of tensor `blk.0.attn_q.weight`".
        what: String,
        /// Byte offset where the read started.
        offset: u64,
        /// Bytes the read needed.
        needed: u64,
        /// File length.
        len: u64,
    },
    /// A GGUF tensor or metadata value carries a type id that GGUF does not define.
    #[error("{path}: {what}: unknown GGUF type id {type_id}")]
    GgufUnknownType {
        /// The file.
        path: PathBuf,
        /// Which tensor or metadata key.
        what: String,
        /// The type id found.
        type_id: u32,
    },
    /// A GGUF tensor is stored in a known ggml type this crate cannot dequantize.
    #[error(
        "{path}: tensor `{tensor}`: ggml type {type_name} is not supported \
         (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K)"
    )]
    GgufUnsupportedType {
        /// The file.
        path: PathBuf,
        /// The GGUF tensor name.
        tensor: String,
        /// The ggml type name, e.g. `Q5_K`.
        type_name: String,
    },
    /// A GGUF file is malformed or lacks metadata the import needs (the message names the key
    /// or tensor).
    #[error("{path}: {message}")]
    Gguf {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the metadata key or tensor.
        message: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// An [`Error::InvalidConfig`] for `field`.
    pub(crate) fn config(field: &str, reason: impl Into<String>) -> Self {
        Self::InvalidConfig {
            field: field.to_owned(),
            reason: reason.into(),
        }
    }
}
