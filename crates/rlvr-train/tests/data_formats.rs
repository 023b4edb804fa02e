//! Standard dataset formats end to end: parquet files in the HuggingFace Hub layout (written
//! by pyarrow: `fixtures/make_hf_fixtures.py`), the field mapping of `[data]`, the checks every
//! record passes when a run loads its data, and a run that trains from such a directory.
//!
//! `fixtures/hf-arith` holds one-digit sums in verl's column layout (`uid`, `question_text`,
//! the gold answer in `reward_model.ground_truth`, chat turns in `chat`), as two snappy/zstd
//! training shards and one test shard; `fixtures/hf-arith-jsonl` the same records as JSON lines
//! written by Python's `json`; `fixtures/hf-bad` one file per defect.

mod common;

use std::path::{Path, PathBuf};

use rlvr_train::RunConfig;
use rlvr_train::data::{self, Dataset, Fields, Place};
use rlvr_verifiers::Kind;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// verl's columns, mapped.
fn verl_fields() -> Fields {
    Fields {
        prompt: "question_text".into(),
        id: "uid".into(),
        answer: "reward_model.ground_truth".into(),
        ..Fields::default()
    }
}

fn sums() -> Vec<(u32, u32)> {
    (0..10)
        .flat_map(|a| (0..10 - a).map(move |b| (a, b)))
        .collect()
}

#[test]
fn parquet_in_the_hub_layout_equals_its_jsonl_record_by_record() {
    let fields = verl_fields();
    for (split, n) in [("train", 55), ("test", 14)] {
        let pq = data::load(&fixture("hf-arith"), split, &fields).unwrap();
        let js = data::load(&fixture("hf-arith-jsonl"), split, &fields).unwrap();
        assert_eq!(pq.examples.len(), n, "{split}");
        assert_eq!(js.examples.len(), n, "{split}");
        for (p, j) in pq.examples.iter().zip(&js.examples) {
            assert_eq!(p.id, j.id);
            assert_eq!(p.prompt, j.prompt);
            assert_eq!(p.messages, j.messages);
            assert_eq!(p.record, j.record, "{}", p.id);
        }
    }
    // Values of every column type, against the generator's formulas (not the reader's output).
    let train = data::load(&fixture("hf-arith"), "train", &fields).unwrap();
    for (i, ((a, b), ex)) in sums().into_iter().zip(&train.examples).enumerate() {
        let r = &ex.record;
        assert_eq!(ex.id, format!("train-{i:03}"));
        assert_eq!(ex.prompt.as_deref(), Some(format!("{a}+{b}=").as_str()));
        assert_eq!(
            r["answer"],
            format!("{}", a + b),
            "copied from the mapped field"
        );
        assert_eq!(r["reward_model"]["style"], "rule");
        assert_eq!(r["level"], a);
        assert_eq!(r["weight"], 0.25 * f64::from(b + 1));
        assert_eq!(r["verified"], (a + b) % 2 == 0);
        assert_eq!(r["tags"][0], "sum");
        assert_eq!(
            r["tags"].as_array().unwrap().len(),
            if a + b < 5 { 2 } else { 1 }
        );
        assert_eq!(r["meta"], serde_json::json!({"a": a, "b": b}));
        assert_eq!(r["chat"][0]["content"], format!("{a}+{b}="));
    }
    // The shards are read in order, rows counted from 0 in each; the second shard is zstd.
    let shard = |k: usize| fixture(&format!("hf-arith/data/train-0000{k}-of-00002.parquet"));
    assert_eq!(
        train.origins[0],
        data::Origin {
            path: shard(0),
            place: Place::Row(0)
        }
    );
    assert_eq!(
        train.origins[28],
        data::Origin {
            path: shard(1),
            place: Place::Row(0)
        }
    );
    let zstd = data::load(&shard(1), "ignored for a file", &fields).unwrap();
    assert_eq!(zstd.examples.len(), 27);
    assert_eq!(zstd.examples[0].id, "train-028");
}

#[test]
fn chat_turns_and_ids_follow_the_mapping() {
    let fields = Fields {
        messages: "chat".into(),
        ..verl_fields()
    };
    let test = data::load(&fixture("hf-arith"), "test", &fields).unwrap();
    let first = &test.examples[0];
    // The held-out split is every fourth sum, reversed: (9, 0) first.
    assert_eq!(first.id, "test-000");
    let turns = first.messages.as_ref().unwrap();
    assert_eq!(
        (turns[0].role.as_str(), turns[0].content.as_str()),
        ("user", "9+0=")
    );
    // Without an id mapping the id is the file stem and row.
    let unmapped = Fields {
        id: String::new(),
        ..verl_fields()
    };
    let test = data::load(&fixture("hf-arith"), "test", &unmapped).unwrap();
    assert_eq!(test.examples[3].id, "test-00000-of-00001:3");
    // Unmapped, the verl columns have no prompt: the error says which key to set.
    let err = data::load(&fixture("hf-arith"), "train", &Fields::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("train-00000-of-00002.parquet: row 0") && err.contains("data.prompt_field"),
        "{err}"
    );
}

/// Loads a bad fixture and checks it as a run does; the error text.
fn load_and_check(name: &str, fields: &Fields) -> String {
    let config = RunConfig::load(None, &[]).unwrap();
    let verifier = config.verifier.build().unwrap();
    let checked = |d: Dataset| rlvr_train::run::load::check(&config, verifier.as_ref(), &d);
    match data::load(&fixture("hf-bad").join(name), "train", fields).and_then(checked) {
        Ok(()) => panic!("{name} passed"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_rows_are_errors_naming_file_and_row() {
    let plain = Fields::default();
    for (file, row, what) in [
        ("missing-answer.parquet", 2, "missing field `answer`"),
        (
            "unreadable-answer.parquet",
            1,
            "not readable by the math verifier",
        ),
        (
            "int-prompt.parquet",
            0,
            "`prompt` must be a string, not a number",
        ),
        ("null-prompt.parquet", 1, "`prompt` is null"),
    ] {
        let err = load_and_check(file, &plain);
        let at = format!("{file}: row {row} (from 0)");
        assert!(err.contains(&at) && err.contains(what), "{file}: {err}");
    }
    // A mapped answer field that a row lacks.
    let mapped = Fields {
        answer: "solution".into(),
        ..Fields::default()
    };
    let err = load_and_check("missing-answer.parquet", &mapped);
    assert!(
        err.contains("row 0") && err.contains("`solution` (data.answer_field)"),
        "{err}"
    );
}

#[test]
fn a_directory_without_the_split_says_what_was_looked_for() {
    let err = data::load(&fixture("hf-arith"), "validation", &verl_fields())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("hf-arith")
            && err.contains("no files of split `validation`")
            && err.contains("data/validation-NNNNN-of-NNNNN")
            && err.contains("`test`, `train`"),
        "{err}"
    );
    // Keyword layout: `train.jsonl` / `test.jsonl`; there is no validation file either.
    let err = data::load(&fixture("hf-arith-jsonl"), "dev", &verl_fields())
        .unwrap_err()
        .to_string();
    assert!(err.contains("`validation`, `valid`, `dev`, `val`"), "{err}");
}

#[test]
fn field_mappings_that_cannot_work_are_refused_at_load() {
    let refused = |sets: &[&str], key: &str| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let err = RunConfig::load(None, &sets).unwrap_err().to_string();
        assert!(err.contains(key), "{sets:?}: {err}");
    };
    refused(
        &["data.prompt_field=\"q\"", "data.messages_field=\"q\""],
        "data.prompt_field",
    );
    refused(
        &["data.answer_field=\"q\"", "data.prompt_field=\"q\""],
        "data.answer_field",
    );
    refused(&["data.answer_field=\"messages\""], "data.answer_field");
    refused(&["data.messages_field=\"\""], "data.messages_field");
    refused(
        &["data.answer_field=\"reward_model..x\""],
        "data.answer_field",
    );
    refused(&["data.eval_split=\"\""], "data.eval_split");
    refused(&["data.train_split=\"a/b\""], "data.train_split");
    for ok in [
        &[
            "data.answer_field=\"reward_model.ground_truth\"",
            "data.messages_field=\"prompt\"",
        ][..],
        &[
            "data.prompt_field=\"question_text\"",
            "data.id_field=\"uid\"",
        ],
        &["data.eval_split=\"validation\""],
    ] {
        let sets: Vec<String> = ok.iter().map(|s| s.to_string()).collect();
        RunConfig::load(None, &sets).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
    }
    assert_eq!(data::fields::reference_field(Kind::Math), "answer");
}

/// The settings of a run on the parquet directory with verl's columns mapped.
fn hf_run(extra: &[&str]) -> Vec<String> {
    let dir = fixture("hf-arith").display().to_string();
    let mut sets = vec![
        format!("data.train=\"{dir}\""),
        format!("data.eval=\"{dir}\""),
        "data.prompt_field=\"question_text\"".into(),
        "data.id_field=\"uid\"".into(),
        "data.answer_field=\"reward_model.ground_truth\"".into(),
        "data.eval_limit=8".into(),
        "sft.steps=300".into(),
        "train.steps=2".into(),
        "eval.every=0".into(),
        "checkpoint.every=0".into(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    sets
}

#[test]
fn a_run_trains_from_a_parquet_hub_directory_with_a_field_mapping() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let sets = hf_run(&[]);
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let out = common::train_quiet(&run_dir, &refs);
    assert_eq!(out.steps, 2);
    // The held-out prompts are the test split's rows, in order, under their mapped ids.
    let evaluated: Vec<String> = std::fs::read_to_string(run_dir.join("eval-base.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let expected: Vec<String> = (0..8).map(|i| format!("test-{i:03}")).collect();
    assert_eq!(evaluated, expected);
    // The warm start learned the sums from the mapped prompts and the mapped gold answers
    // score its responses: some are right.
    assert!(out.base_accuracy > 0.0, "{out:?}");
    let rewarded: f64 = common::history(&run_dir)
        .iter()
        .map(|m| m["reward/pass_rate"])
        .sum();
    assert!(rewarded > 0.0, "no rollout matched a mapped gold answer");
}

#[test]
fn a_mapping_to_a_missing_field_stops_the_run_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let sets = hf_run(&["data.answer_field=\"reward_model.gold\""]);
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let config = common::tiny_config(&run_dir, &refs);
    let err = rlvr_train::train(
        config,
        &rlvr_train::RunOptions {
            quiet: true,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("train-00000-of-00002.parquet: row 0")
            && err.contains("`reward_model.gold` (data.answer_field)"),
        "{err}"
    );
    // Stopped before the warm start and the first step: nothing was written.
    assert!(!run_dir.join("metrics.jsonl").exists());
}

/// `data.prompt_template`, `data.train_rows` and `data.eval_rows`: loading keeps the sliced
/// records and writes the templated prompts (checked record by record against the file), and
/// each knob changes a run: the held-out prompts are rows 5–8 of the test file, and a
/// template (`0+a±b=`, same answers) or a training slice gives another first update.
#[test]
fn prompt_template_and_row_slices_reach_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let dir = tmp.path().join(name);
        let mut sets = vec!["train.steps=1", "eval.every=0", "checkpoint.every=0"];
        sets.extend_from_slice(extra);
        common::train_quiet(&dir, &sets);
        (dir.clone(), common::history(&dir))
    };
    let template = "data.prompt_template=\"0+{{ prompt }}\"";
    let rows = ["data.train_rows=\"0:8\"", "data.eval_rows=\"5:9\""];
    let mut sets = vec![template];
    sets.extend_from_slice(&rows);
    let config = common::tiny_config(tmp.path(), &sets);
    let (train, eval) = rlvr_train::run::load::load_data(&config).unwrap();
    let file = |name: &str| -> Vec<serde_json::Value> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/arith/");
        std::fs::read_to_string(format!("{path}{name}"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (train_file, test_file) = (file("train.jsonl"), file("test.jsonl"));
    assert_eq!(train.len(), 8);
    for (ex, record) in train.iter().zip(&train_file[..8]) {
        assert_eq!(ex.id, record["id"].as_str().unwrap());
        let want = format!("0+{}", record["prompt"].as_str().unwrap());
        assert_eq!(ex.prompt.as_deref(), Some(want.as_str()));
    }
    let eval_ids: Vec<&str> = eval.iter().map(|e| e.id.as_str()).collect();
    let want: Vec<&str> = test_file[5..9]
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(eval_ids, want);

    let (_, base) = run("base", &[]);
    let (_, templated) = run("template", &[template]);
    let (dir, sliced) = run("rows", &rows);
    let evaluated: Vec<String> = std::fs::read_to_string(dir.join("eval-base.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].to_string())
        .map(|id| id.trim_matches('"').to_string())
        .collect();
    assert_eq!(evaluated, want);
    for (h, what) in [
        (&templated, "data.prompt_template"),
        (&sliced, "data.train_rows"),
    ] {
        assert_ne!(
            common::get(&h[0], "optim/grad_norm"),
            common::get(&base[0], "optim/grad_norm"),
            "{what} is inert"
        );
    }
    let refused = |set: &str, key: &str| {
        let err = RunConfig::load(None, &[set.to_string()])
            .unwrap_err()
            .to_string();
        assert!(err.contains(key), "{set}: {err}");
    };
    refused("data.train_rows=\"9:3\"", "data.train_rows");
    refused("data.eval_rows=\"x\"", "data.eval_rows");
    refused(
        "data.prompt_template=\"{{ prompt \"",
        "data.prompt_template",
    );
}
