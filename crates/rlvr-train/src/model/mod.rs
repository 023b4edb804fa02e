//! The policy's model side of a run: the bundled small model and its warm start
//! (`bundled`), its character tokenizer, the compute device, and stable parameter ids.

pub mod bundled;
pub mod char_tokenizer;
pub mod device;
pub mod param_ids;
