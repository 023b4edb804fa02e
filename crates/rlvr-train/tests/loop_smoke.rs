//! A few steps of the real loop: warm start, rollout, verify, update, evaluation, checkpoints,
//! metrics and report all happen and produce sane values.

mod common;

use rlvr_train::checkpoint;
use rlvr_train::metrics::read_metrics;

#[test]
fn a_few_steps_of_the_real_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let out = common::train_quiet(&run_dir, &["train.mini_batches=2"]);
    assert_eq!(out.steps, 4);
    assert!(!out.interrupted);
    assert!((0.0..=1.0).contains(&out.base_accuracy) && (0.0..=1.0).contains(&out.final_accuracy));

    let history = read_metrics(&run_dir.join("metrics.jsonl")).unwrap();
    assert_eq!(
        history.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    for (_, m) in &history {
        for key in [
            "reward/mean",
            "advantage/zero_group_frac",
            "response/length_mean",
            "optim/grad_norm",
            "time/rollout_s",
            "time/step_s",
            "memory/peak_rss_mb",
        ] {
            let v = m
                .get(key)
                .unwrap_or_else(|| panic!("metric {key} missing: {m:?}"));
            assert!(v.is_finite(), "{key} = {v}");
        }
        // Two mini-batches per step, each one optimizer update.
        assert_eq!(m["optim/updates"], 2.0);
        assert!(m["time/step_s"] >= m["time/rollout_s"] + m["time/update_s"]);
        assert!(m["memory/peak_rss_mb"] > 1.0, "{m:?}");
    }
    assert!(
        history[1].1.contains_key("eval/accuracy") && history[3].1.contains_key("eval/accuracy")
    );

    let latest = checkpoint::latest(&run_dir).unwrap().unwrap();
    for file in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "optimizer.bin",
        "trainer_state.json",
    ] {
        assert!(latest.join(file).is_file(), "checkpoint lacks {file}");
    }
    assert!(run_dir.join("report.md").is_file());
    assert!(run_dir.join("config.toml").is_file());
}

#[test]
fn advantage_shaping_stages_run_inside_the_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    // Dynamic sampling too: with the tiny model most groups are all-wrong, so it resamples.
    let extra = [
        "stages.edas={}",
        "stages.curve_rl={}",
        "train.steps=2",
        "rollout.dynamic_sampling=true",
    ];
    let out = common::train_quiet(&run_dir, &extra);
    assert_eq!(out.steps, 2);
    let history = read_metrics(&run_dir.join("metrics.jsonl")).unwrap();
    for (_, m) in &history {
        assert!(
            m.keys().any(|k| k.starts_with("stages/")),
            "no stage metrics: {m:?}"
        );
    }
    let state = checkpoint::read_state(&checkpoint::latest(&run_dir).unwrap().unwrap()).unwrap();
    // One application per step, however many rounds dynamic sampling drew.
    assert_eq!(
        state.shaping.step, 2,
        "the stages' state advances once per step and is checkpointed: {:?}",
        state.shaping
    );
}
