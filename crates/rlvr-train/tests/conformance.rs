//! Real-data conformance of the shipped configs that read the benchmark files from
//! `RLVR_DATA_DIR` (run by `.ci/run` with `--ignored`).
//!
//! `configs/smollm2-mbpp-dense.toml` takes MBPP's train split (task ids 601–974) and its test
//! split (task ids 11–510) from one file with `data.train_rows` / `data.eval_rows`, and writes
//! each prompt with `data.prompt_template` from the task text and its first test.

use std::path::{Path, PathBuf};

use rlvr_train::RunConfig;
use rlvr_train::run::load::load_data;

const IGNORE: &str = "conformance suite: needs RLVR_DATA_DIR (../shared/datasets); run by .ci/run";

fn data_dir() -> PathBuf {
    PathBuf::from(std::env::var("RLVR_DATA_DIR").unwrap_or_else(|_| {
        panic!("{IGNORE}: set RLVR_DATA_DIR to the directory holding mbpp.jsonl")
    }))
}

/// The MBPP config loads every record, the two splits are MBPP's and disjoint, and every
/// prompt is the task text followed by the record's first test (which calls the function).
#[test]
#[ignore = "conformance suite: needs RLVR_DATA_DIR (../shared/datasets); run by .ci/run"]
fn the_mbpp_config_holds_out_the_test_split_and_names_the_function() {
    let mbpp = data_dir().join("mbpp.jsonl").display().to_string();
    let config_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/smollm2-mbpp-dense.toml");
    let config = RunConfig::load(
        Some(&config_path),
        &[
            format!("data.train=\"{mbpp}\""),
            format!("data.eval=\"{mbpp}\""),
            "data.eval_limit=0".into(),
        ],
    )
    .unwrap();
    let (train, eval) = load_data(&config).unwrap();
    let ids = |xs: &[rlvr_train::data::Example]| -> Vec<u32> {
        xs.iter().map(|e| e.id.parse().unwrap()).collect()
    };
    assert_eq!(ids(&train), (601..=974).collect::<Vec<u32>>());
    assert_eq!(ids(&eval), (11..=510).collect::<Vec<u32>>());
    for ex in train.iter().chain(&eval) {
        let first = ex.record["test_list"][0].as_str().unwrap();
        let prompt = ex.prompt.as_deref().unwrap();
        let text = ex.record["text"].as_str().unwrap();
        assert_eq!(
            prompt,
            format!("{text}\nYour code should pass this test:\n{first}"),
            "{}",
            ex.id
        );
    }
}
