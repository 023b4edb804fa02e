//! GGUF (llama.cpp) checkpoints: reader, dequantization to f32, llama.cpp → Hugging Face tensor
//! mapping, tokenizer and chat template from the metadata, and import into a HF directory.
//!
//! ```no_run
//! use std::path::Path;
//! # fn main() -> rlvr_models::Result<()> {
//! let summary = rlvr_models::gguf::import_gguf(
//!     Path::new("SmolLM2-135M-Instruct.Q4_1.gguf"),
//!     Path::new("smollm2-135m-instruct"),
//! )?;
//! println!("{} parameters from {:?}", summary.num_params, summary.source_types);
//! // The directory now loads with `load_pretrained` and `Tokenizer::from_dir`.
//! # Ok(()) }
//! ```

mod dequant;
mod import;
mod names;
mod reader;
mod value;
mod vocab;

pub use dequant::{GgmlType, dequantize};
pub use import::{ImportOptions, ImportSummary, import_gguf, import_gguf_with, model_config};
pub use names::{hf_tensor_name, permute_qk_rows, unpermute_qk_rows};
pub use reader::{DEFAULT_ALIGNMENT, GgufFile, TensorInfo};
pub use value::MetadataValue;
pub use vocab::{build_tokenizer, tokenizer_config, tokenizer_json};
