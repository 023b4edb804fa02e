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

/// SMEPO's math masker on every GSM8K training solution: no annotated calculation keeps a
/// digit (`<<48/2=24>>` → `<<[NUMBER]/[NUMBER]...`), no digit is left anywhere outside the
/// protected structural numbers (`step 2`), the final `#### n` is blanked, and no masked trace
/// still holds its gold answer as a token (the guidance could not be copied into a reward).
#[test]
#[ignore = "conformance suite: needs RLVR_DATA_DIR (../shared/datasets); run by .ci/run"]
fn smepo_masks_every_value_of_every_gsm8k_solution() {
    use rlvr_train::data::semantic_mask::{contains_answer, mask_math_trace};
    let path = data_dir().join("gsm8k_train.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let structural = regex::Regex::new(
        r"(?i)\b(?:step|case|part|subcase|problem|example|exercise|lemma|theorem|claim|stage|round)\s*#?\s*\d+",
    )
    .unwrap();
    let calc = regex::Regex::new(r"<<([^>]*)>>").unwrap();
    let (mut n, mut calcs, mut structural_left) = (0, 0, 0);
    for (i, line) in text.lines().enumerate() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let solution = record["answer"].as_str().unwrap();
        let gold = solution.rsplit("####").next().unwrap().trim();
        let masked = mask_math_trace(solution);
        for c in calc.captures_iter(&masked) {
            calcs += 1;
            assert!(
                !c[1].contains(|ch: char| ch.is_ascii_digit()),
                "line {}: {}",
                i + 1,
                &c[0]
            );
        }
        assert!(
            masked.trim_end().ends_with("#### [NUMBER]"),
            "line {}: {masked}",
            i + 1
        );
        let unprotected = structural.replace_all(&masked, "");
        structural_left += usize::from(unprotected.len() != masked.len());
        assert!(
            !unprotected.contains(|ch: char| ch.is_ascii_digit()),
            "line {}: {masked}",
            i + 1
        );
        if !structural.is_match(&masked) {
            assert!(!contains_answer(&masked, gold), "line {}: {masked}", i + 1);
        }
        n += 1;
    }
    assert_eq!(n, 7473);
    assert!(calcs > 20_000, "{calcs}");
    assert!(structural_left < n / 20, "{structural_left}");
}

/// SCRL's chains derived from GSM8K's annotated solutions (`[stages.scrl] annotations_field =
/// "answer"`): every one of the 7,473 training solutions gives a chain that ends with the
/// original question and its `####` answer, at most `max_subproblems` long, whose intermediate
/// answers are numbers written in the solution; 7,100 chains hold a step and there are 15,803
/// steps (an independent Python pass counted the same), each a true calculation by the math
/// verifier's equivalence test. (Not by `check`: the verifier rightly refuses unevaluated
/// arithmetic such as `48/2` as an answer for the numeral 24.)
#[test]
#[ignore = "conformance suite: needs RLVR_DATA_DIR (../shared/datasets); run by .ci/run"]
fn scrl_derives_a_chain_from_every_gsm8k_solution() {
    use rlvr_objectives::shaping::ScrlConfig;
    use rlvr_train::data::Example;
    use rlvr_train::data::subproblems::subproblems_of;
    use rlvr_verifiers::MathConfig;
    use rlvr_verifiers::math::answer::parse_answer;
    use rlvr_verifiers::math::equiv::{Tolerance, equivalent};
    let math = MathConfig::default();
    let tol = Tolerance {
        rel: math.rel_tol,
        abs: math.abs_tol,
        points: math.points,
    };
    let cfg = ScrlConfig {
        annotations_field: "answer".into(),
        ..ScrlConfig::default()
    };
    let text = std::fs::read_to_string(data_dir().join("gsm8k_train.jsonl")).unwrap();
    let (mut n, mut steps, mut true_steps, mut with_steps) = (0, 0, 0, 0);
    for (i, line) in text.lines().enumerate() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let solution = record["answer"].as_str().unwrap();
        let gold = solution.rsplit("####").next().unwrap().trim();
        let question = record["question"].as_str().unwrap();
        let example = Example {
            id: format!("gsm8k:{}", i + 1),
            prompt: Some(question.to_string()),
            messages: None,
            record: record.clone(),
        };
        let chain = subproblems_of(&cfg, &example).unwrap();
        let last = chain.last().unwrap();
        assert_eq!(
            (last.question.as_str(), last.answer.as_str()),
            (question, gold),
            "line {}",
            i + 1
        );
        assert!(chain.len() <= 5, "line {}: {chain:?}", i + 1);
        with_steps += usize::from(chain.len() > 1);
        for s in &chain[..chain.len() - 1] {
            steps += 1;
            assert!(solution.contains(&s.answer), "line {}: {s:?}", i + 1);
            assert_ne!(s.answer, gold, "line {}: the original stands for it", i + 1);
            let expr = s.question.replace(['x', 'X'], "*");
            let holds = equivalent(&parse_answer(&expr), &parse_answer(&s.answer), &tol);
            true_steps += usize::from(holds);
        }
        n += 1;
    }
    assert_eq!(n, 7473);
    // The counts of an independent Python pass over the same file with the same rule (stdlib
    // `re` for the annotations, Python's own arithmetic for the steps).
    assert_eq!(
        (with_steps, steps),
        (7100, 15_803),
        "chains with a step, steps"
    );
    assert_eq!(true_steps, steps, "every step is a true calculation");
}
