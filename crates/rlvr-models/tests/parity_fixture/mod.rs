//! The committed parity fixtures (`tests/fixtures/<name>/`, made by
//! `scripts/make_parity_fixtures.py`): paths and the recorded `transformers` logits.

use std::path::{Path, PathBuf};

/// `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// One recorded sequence: its token ids and the logits transformers gave for it.
#[derive(serde::Deserialize)]
pub struct Case {
    pub input_ids: Vec<i64>,
    pub logits: Vec<Vec<f32>>,
}

/// `parity.json` of a fixture directory.
#[derive(serde::Deserialize)]
pub struct Record {
    pub cases: Vec<Case>,
}
