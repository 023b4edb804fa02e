//! What a run writes for people beside `metrics.jsonl`: TensorBoard event files (read back with
//! this crate's reader, and in an ignored test with TensorBoard's own `EventAccumulator`), the
//! sampled-completions table, and pass@k during training. Each case is a tiny run of the real
//! loop (the bundled model, warm-started once for every test binary).

mod common;

use common::get;

use std::collections::BTreeMap;
use std::path::Path;

use rlvr_train::metrics::read_metrics;
use rlvr_train::tensorboard::{EventBody, FILE_PREFIX, read_events, read_scalars};
use rlvr_train::{RunOptions, checkpoint, train};

/// Every metric of every line of `metrics.jsonl` is in `scalars` at that step with the same
/// value (as f32, the precision of a TensorBoard scalar; a null of the JSON is a NaN there).
fn assert_same_as_metrics_jsonl(run: &Path, scalars: &BTreeMap<String, BTreeMap<i64, f32>>) {
    let lines = read_metrics(&run.join("metrics.jsonl")).unwrap();
    assert!(!lines.is_empty());
    for (step, metrics) in &lines {
        for (tag, v) in metrics {
            let got = scalars
                .get(tag)
                .and_then(|s| s.get(&(*step as i64)))
                .unwrap_or_else(|| panic!("step {step}: tag {tag} missing from the events"));
            let want = *v as f32;
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "step {step}: {tag} is {got} in the events, {want} in metrics.jsonl"
            );
        }
    }
    // Nothing past the steps of metrics.jsonl (step 0 holds the base policy's accuracy).
    let steps: Vec<i64> = lines.iter().map(|(s, _)| *s as i64).collect();
    for (tag, series) in scalars {
        for step in series.keys() {
            assert!(
                *step == 0 || steps.contains(step),
                "{tag}: step {step} is not in metrics.jsonl"
            );
        }
    }
}

fn event_files(run: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(run.join("tb"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(FILE_PREFIX)
        })
        .collect();
    files.sort();
    files
}

fn completion_rows(run: &Path, step: usize) -> Vec<serde_json::Value> {
    let path = run.join(format!("completions/step-{step:06}.jsonl"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One run with every output on: 4 steps, evaluation every 2 with k = 3, completions every 2.
#[test]
fn events_completions_and_pass_at_k_of_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let out = common::train_quiet(
        &run,
        &[
            "log.completions_every=2",
            "eval.k=3",
            "log.tensorboard=true",
        ],
    );

    // TensorBoard: one file, every metric of every step, the base accuracy at step 0.
    assert_eq!(event_files(&run).len(), 1);
    let scalars = read_scalars(&run.join("tb")).unwrap();
    assert_same_as_metrics_jsonl(&run, &scalars);
    assert_eq!(
        scalars["eval/accuracy"][&0], out.base_accuracy as f32,
        "the base policy's accuracy at step 0"
    );

    // Completions at steps 2 and 4 only, one row per sample (4 prompts x 4 samples), whose
    // rewards and advantages are the ones the step's metrics summarize.
    let history = common::history(&run);
    for step in [1, 3] {
        assert!(
            !run.join(format!("completions/step-{step:06}.jsonl"))
                .exists()
        );
    }
    for step in [2usize, 4] {
        let rows = completion_rows(&run, step);
        assert_eq!(rows.len(), 16, "step {step}");
        assert!(run.join(format!("completions/step-{step:06}.md")).exists());
        let m = &history[step - 1];
        let n = rows.len() as f64;
        let reward_mean: f64 = rows
            .iter()
            .map(|r| r["reward"].as_f64().unwrap())
            .sum::<f64>()
            / n;
        assert!(
            (reward_mean - get(m, "reward/mean")).abs() < 1e-6,
            "step {step}"
        );
        let passed = rows.iter().filter(|r| r["passed"] == true).count() as f64 / n;
        assert!(
            (passed - get(m, "reward/pass_rate")).abs() < 1e-9,
            "step {step}"
        );
        let adv_abs: f64 = rows
            .iter()
            .map(|r| r["advantage"].as_f64().unwrap().abs())
            .sum::<f64>()
            / n;
        assert!(
            (adv_abs - get(m, "advantage/abs_mean")).abs() < 1e-5,
            "step {step}"
        );
        for r in &rows {
            for key in ["id", "prompt", "response", "extracted", "group", "tokens"] {
                assert!(
                    r.get(key).is_some(),
                    "step {step}: a row without `{key}`: {r}"
                );
            }
            assert!(r["prompt"].as_str().unwrap().ends_with('='), "{r}");
        }
    }

    // pass@3 at the evaluations (steps 2 and 4) only; it is at least the sampled pass@1.
    for (i, m) in history.iter().enumerate() {
        let evaluated = (i + 1) % 2 == 0;
        assert_eq!(m.contains_key("eval/pass@k"), evaluated, "step {}", i + 1);
        if evaluated {
            let (pk, p1) = (get(m, "eval/pass@k"), get(m, "eval/sampled_pass@1"));
            assert!((0.0..=1.0).contains(&pk) && p1 <= pk + 1e-12, "{pk} {p1}");
            assert!(scalars.contains_key("eval/pass@k"));
        }
    }
}

/// `log.tensorboard = false` and `log.completions_every = 0` write neither; `eval.k = 1` logs
/// no pass@k.
#[test]
fn turned_off_outputs_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    common::train_quiet(
        &run,
        &[
            "log.tensorboard=false",
            "log.completions_every=0",
            "train.steps=2",
        ],
    );
    assert!(run.join("metrics.jsonl").exists());
    assert!(!run.join("tb").exists());
    assert!(!run.join("completions").exists());
    let history = common::history(&run);
    assert!(history[1].contains_key("eval/accuracy"));
    assert!(history.iter().all(|m| !m.contains_key("eval/pass@k")));
}

/// A run killed after logging step 3 but before its checkpoint, then resumed from step 2:
/// the resumed run appends a second events file, and the events read as one run equal to the
/// rewritten `metrics.jsonl` (step 3 from the resumed run, not the lost one).
#[test]
fn a_resumed_run_appends_an_events_file_that_reads_as_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let sets = ["log.completions_every=0", "eval.every=0"];
    simulate_kill_and_resume(&run, &sets);
    let files = event_files(&run);
    assert_eq!(files.len(), 2);
    // The resumed file restarts at step 3, so TensorBoard drops the lost step 3 of the first.
    let resumed = read_events(&files[1]).unwrap();
    assert_eq!(
        (resumed[1].step, &resumed[1].body),
        (3, &EventBody::SessionStart)
    );
    let scalars = read_scalars(&run.join("tb")).unwrap();
    assert_same_as_metrics_jsonl(&run, &scalars);
    assert_eq!(
        scalars["reward/mean"].keys().copied().collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
}

/// Runs 3 steps, drops the step-3 checkpoint (as if the run had been killed after logging
/// step 3) and resumes from step 2 to the end (4 steps).
fn simulate_kill_and_resume(run: &Path, sets: &[&str]) {
    let quiet = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let first = train(
        common::tiny_config(run, sets),
        &RunOptions {
            stop_after: Some(3),
            ..quiet.clone()
        },
    )
    .unwrap();
    assert_eq!(first.steps, 3);
    let lost = checkpoint::latest(run).unwrap().unwrap();
    assert!(lost.ends_with("step-000003"), "{}", lost.display());
    std::fs::remove_dir_all(&lost).unwrap();
    // What a kill before the step-3 checkpoint's rename leaves: `latest` names step 2.
    std::fs::write(run.join("checkpoints/latest"), "step-000002\n").unwrap();
    let second = train(
        common::tiny_config(run, sets),
        &RunOptions {
            resume: Some(run.to_path_buf()),
            ..quiet
        },
    )
    .unwrap();
    assert_eq!(second.steps, 4);
}

/// TensorBoard's own reader (`EventAccumulator`, from PyPI `tensorboard`) sees every metric of
/// `metrics.jsonl` at its step, across a killed-and-resumed run's two files.
/// Setup: `export RLVR_PEERS_PYTHON="$(.ci/python-peers)"`.
#[test]
#[ignore = "needs a Python venv with tensorboard: .ci/python-peers"]
fn tensorboards_event_accumulator_reads_the_run() {
    let python = std::env::var("RLVR_PEERS_PYTHON").expect(
        "RLVR_PEERS_PYTHON must name a Python with tensorboard installed \
         (export RLVR_PEERS_PYTHON=\"$(.ci/python-peers)\")",
    );
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    simulate_kill_and_resume(&run, &["log.completions_every=0", "eval.every=2"]);
    let script = r#"
import json, math, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
acc.Reload()
out = {tag: [[e.step, None if math.isnan(e.value) else e.value] for e in acc.Scalars(tag)]
       for tag in acc.Tags()["scalars"]}
print(json.dumps(out))
"#;
    let output = std::process::Command::new(&python)
        .args(["-c", script])
        .arg(run.join("tb"))
        .output()
        .unwrap_or_else(|e| panic!("running {python}: {e}"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let parsed: BTreeMap<String, Vec<(i64, Option<f64>)>> =
        serde_json::from_slice(&output.stdout).unwrap();
    // Each series in step order without repeats: TensorBoard dropped the lost step 3.
    let mut scalars: BTreeMap<String, BTreeMap<i64, f32>> = BTreeMap::new();
    for (tag, series) in &parsed {
        let steps: Vec<i64> = series.iter().map(|(s, _)| *s).collect();
        assert!(
            steps.windows(2).all(|w| w[0] < w[1]),
            "{tag}: steps {steps:?}"
        );
        scalars.insert(
            tag.clone(),
            series
                .iter()
                .map(|&(s, v)| (s, v.map_or(f32::NAN, |v| v as f32)))
                .collect(),
        );
    }
    assert_eq!(
        scalars["reward/mean"].keys().copied().collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert_same_as_metrics_jsonl(&run, &scalars);
}
