//! The run-level knob matrix: every objective kind, every stage, every optimizer mode (per-head
//! Pion included), the TIS modes and the rollout temperature, KL on and off, OWPO's ratchet,
//! dynamic sampling, Mu-GRPO's stages and resume with a reference model. Each case is a tiny
//! run of the real loop (two steps of the bundled model, warm-started once for the whole
//! file) that passes AND shows the knob is live: a metric only that knob emits, a value that
//! differs from the baseline run, or an exact equality that must hold.
//!
//! The task is one-digit sums, which the tiny model half-learns during its warm start, so the
//! groups are mixed and the advantages are not all zero.

mod common;

use common::get;

use std::sync::OnceLock;

use rlvr_objectives::ObjectiveConfig;
use rlvr_train::metrics::Metrics;
use rlvr_train::{RunOptions, checkpoint, train};

/// The settings every case shares: two steps, the sums task, an evaluation only at the end.
fn sets(extra: &[&str]) -> Vec<String> {
    common::sums_sets(extra)
}

/// Runs a case to the end in a fresh directory and returns its per-step metrics.
fn run(extra: &[&str]) -> Vec<Metrics> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let sets = sets(extra);
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    common::train_quiet(&dir, &refs);
    common::history(&dir)
}

/// The default objective (DAPO) with AdamW and no stages, run once per process.
fn baseline() -> &'static [Metrics] {
    static BASE: OnceLock<Vec<Metrics>> = OnceLock::new();
    BASE.get_or_init(|| {
        let h = run(&[]);
        assert!(
            h[0]["advantage/zero_group_frac"] < 1.0,
            "the cases need mixed groups: {:?}",
            h[0]
        );
        h
    })
}

/// A run of objective `kind` (its registry defaults, the overlong window fitted to 6 tokens).
fn objective_run(kind: &str, extra: &[&str]) -> Vec<Metrics> {
    let kind = format!("objective.kind=\"{kind}\"");
    let mut all = vec![kind.as_str(), "objective.overlong_max_len=0"];
    all.extend_from_slice(extra);
    run(&all)
}

/// Every objective kind trains, emits its own term and updates differently from DAPO under the
/// same settings. Two mini-batches per step, so that the second update of each step is
/// off-policy: on-policy with equal-length responses several kinds coincide with DAPO exactly
/// (ratio 1; token-mean equals sequence-mean), and their differences (clip shapes, sequence
/// ratios, GRPO's KL once the policy has moved) show only off-policy. Mu-GRPO's case lowers the
/// veto threshold below 1, where the veto cuts every negative response from its first token.
#[test]
fn every_objective_kind_is_live() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("grpo", &[], "objective/kl_loss"),
        ("dapo", &[], "objective/pg_loss"),
        ("dr_grpo", &[], "objective/pg_loss"),
        ("gspo", &[], "objective/pg_loss"),
        ("rloo", &[], "objective/pg_loss"),
        ("nfpo", &[], "objective/nfpo_trace_mean"),
        ("owpo", &[], "objective/owpo_weight_mean"),
        (
            "mu_grpo",
            &["objective.veto_threshold=0.5"],
            "objective/vetoed_frac",
        ),
        ("nsr", &[], "objective/rescue_candidates"),
    ];
    let kinds: Vec<&str> = cases.iter().map(|c| c.0).collect();
    assert_eq!(kinds, ObjectiveConfig::KINDS);
    let two = "train.mini_batches=2";
    let dapo = objective_run("dapo", &[two]);
    let norms =
        |h: &[Metrics]| -> Vec<f64> { h.iter().map(|m| get(m, "optim/grad_norm")).collect() };
    for &(kind, extra, key) in cases {
        let mut sets = extra.to_vec();
        sets.push(two);
        let h = if kind == "dapo" {
            dapo.clone()
        } else {
            objective_run(kind, &sets)
        };
        get(&h[0], key);
        assert_eq!(
            get(&h[0], "reward/mean"),
            get(&dapo[0], "reward/mean"),
            "{kind}: the first rollout must be DAPO's (same seed, same policy)"
        );
        if kind != "dapo" {
            assert_ne!(
                norms(&h),
                norms(&dapo),
                "{kind}: every update equals DAPO's"
            );
        }
        for m in &h {
            assert!(get(m, "optim/grad_norm").is_finite(), "{kind}: {m:?}");
        }
    }
    let vetoed = objective_run("mu_grpo", &["objective.veto_threshold=0.5"]);
    assert!(get(&vetoed[0], "objective/vetoed_frac") > 0.0);
}

/// DAPO's soft overlong penalty fires when its window lies inside the response length (the
/// window 1..6 of a 6-token cap penalizes every response longer than one token).
#[test]
fn the_overlong_penalty_fires_inside_its_window() {
    let h = run(&["objective.overlong_cache=5"]);
    assert!(h.iter().all(|m| get(m, "reward/overlong_penalized") > 0.0));
}

/// KL on: GRPO's β = 0.04 keeps a reference and adds the KL term; off: neither; a reference
/// kept without a KL coefficient is measured, not optimized.
#[test]
fn kl_on_and_off() {
    let on = objective_run("grpo", &[]);
    assert!(on.iter().all(|m| get(m, "objective/kl_loss").is_finite()));
    // After one update the policy has left the reference.
    assert!(get(&on[1], "objective/kl_ref") > 0.0, "{:?}", on[1]);
    let off = objective_run("grpo", &["objective.kl_coef=0"]);
    assert!(off.iter().all(|m| !m.contains_key("objective/kl_loss")));
    assert!(off.iter().all(|m| !m.contains_key("objective/kl_ref")));
    let measured = objective_run(
        "grpo",
        &["objective.kl_coef=0", "train.reference_model=true"],
    );
    assert!(
        measured
            .iter()
            .all(|m| !m.contains_key("objective/kl_loss"))
    );
    assert!(get(&measured[1], "objective/kl_ref") > 0.0);
}

/// OWPO's ratchet counts optimizer steps: with two mini-batches per step and K = 2 the
/// reference is replaced once per RL step (after optimizer steps 2 and 4), not once per two.
#[test]
fn owpo_ratchet_counts_optimizer_steps() {
    let h = objective_run(
        "owpo",
        &["objective.reference_update_every=2", "train.mini_batches=2"],
    );
    let totals: Vec<f64> = h.iter().map(|m| get(m, "optim/steps_total")).collect();
    let refreshes: Vec<f64> = h.iter().map(|m| get(m, "reference/refreshes")).collect();
    assert_eq!(totals, [2.0, 4.0]);
    assert_eq!(refreshes, [1.0, 1.0]);
}

/// Mu-GRPO's large stages: two batches rolled out with one policy, then optimized through.
#[test]
fn mu_grpo_stage_batches_roll_out_once_and_update_per_batch() {
    let h = objective_run("mu_grpo", &["train.stage_batches=2"]);
    for m in &h {
        assert_eq!(get(m, "rollout/wanted_groups"), 8.0);
        assert_eq!(get(m, "rollout/kept_groups"), 8.0);
        assert_eq!(get(m, "optim/updates"), 2.0);
    }
}

/// Every stage runs in the loop, emits its metrics and changes the advantages of the
/// baseline's first rollout (AVSPO with its gate off, so that it acts on collapsed groups).
#[test]
fn every_stage_is_live() {
    let base = baseline();
    let cases: &[(&str, &str)] = &[
        ("stages.edas={}", "stages/shaping/edas_groups"),
        (
            "stages.avspo={ adaptive = false }",
            "stages/shaping/avspo_groups",
        ),
        ("stages.curve_rl={}", "stages/shaping/curve_rl_weight_mean"),
        ("stages.lampo={}", "stages/shaping/lampo_pair_weight_mean"),
        ("stages.tmn={}", "stages/shaping/tmn_mean_pass_rate"),
    ];
    for &(set, key) in cases {
        let h = run(&[set]);
        get(&h[0], key);
        get(&h[0], "stages/shaping/acr");
        assert_ne!(
            get(&h[0], "advantage/abs_mean"),
            get(&base[0], "advantage/abs_mean"),
            "{set}: the advantages equal the baseline's"
        );
    }
}

/// Stateful stages advance once per step: AVSPO's decaying threshold at steps 0 and 1 is its
/// schedule at 0 and 1 (the checkpointed stage state counts two applications).
#[test]
fn avspo_threshold_decays_once_per_step() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let sets = sets(&["stages.avspo={ threshold_decay_steps = 1 }"]);
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    common::train_quiet(&dir, &refs);
    let h = common::history(&dir);
    let cfg = rlvr_objectives::shaping::AvspoConfig {
        threshold_decay_steps: 1,
        ..Default::default()
    };
    for (step, m) in h.iter().enumerate() {
        assert_eq!(
            get(m, "stages/shaping/avspo_threshold"),
            cfg.threshold(step as u64)
        );
    }
    let state = checkpoint::read_state(&checkpoint::latest(&dir).unwrap().unwrap()).unwrap();
    assert_eq!(state.shaping.step, 2);
}

/// Dynamic sampling keeps only groups whose rewards differ, so no kept group has all-zero
/// advantages; rounds stop when the batch is full or the cap is reached.
#[test]
fn dynamic_sampling_keeps_only_groups_with_signal() {
    let h = run(&[
        "rollout.dynamic_sampling=true",
        "rollout.max_resample_rounds=3",
    ]);
    for m in &h {
        assert_eq!(get(m, "advantage/zero_group_frac"), 0.0, "{m:?}");
        assert!(get(m, "rollout/kept_groups") <= get(m, "rollout/wanted_groups"));
        assert!((1.0..=4.0).contains(&get(m, "rollout/rounds")));
        if get(m, "rollout/rounds") < 4.0 {
            assert_eq!(get(m, "rollout/kept_groups"), 4.0, "stopped early: {m:?}");
        }
    }
}

/// When dynamic sampling's rounds run out before the batch is full, `short_batch = "train"`
/// trains on the groups kept and `"error"` stops the run naming the step. No extra rounds, so
/// the first step is short exactly when the baseline's first rollout had a collapsed group.
#[test]
fn a_short_batch_trains_or_stops_the_run() {
    let base = baseline();
    assert!(
        get(&base[0], "advantage/zero_group_frac") > 0.0,
        "the case needs a collapsed group in the first rollout: {:?}",
        base[0]
    );
    let no_extra = [
        "rollout.dynamic_sampling=true",
        "rollout.max_resample_rounds=0",
    ];
    let h = run(&no_extra);
    assert!(get(&h[0], "rollout/kept_groups") < get(&h[0], "rollout/wanted_groups"));
    let tmp = tempfile::tempdir().unwrap();
    let mut sets = sets(&no_extra);
    sets.push("rollout.short_batch=\"error\"".into());
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let quiet = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let err = train(common::tiny_config(&tmp.path().join("run"), &refs), &quiet).unwrap_err();
    assert!(
        err.to_string().contains("step 1: dynamic sampling kept"),
        "{err}"
    );
}

/// Every optimizer mode trains; from the second step (after one update of its own) each
/// differs from AdamW, and per-head Pion routes head blocks and differs from whole-matrix Pion.
#[test]
fn every_optimizer_mode_is_live() {
    let base = baseline();
    let muon = run(&["optimizer.kind=\"muon\""]);
    let pion = run(&["optimizer.kind=\"pion\""]);
    let per_head = run(&["optimizer.kind=\"pion\"", "optimizer.routing.per_head={}"]);
    for (name, h) in [
        ("muon", &muon),
        ("pion", &pion),
        ("pion per head", &per_head),
    ] {
        assert_ne!(
            get(&h[1], "optim/grad_norm"),
            get(&base[1], "optim/grad_norm"),
            "{name} updates like AdamW"
        );
    }
    assert_eq!(get(&pion[0], "optim/head_split_params"), 0.0);
    // q, k, v and o projections of both layers.
    assert_eq!(get(&per_head[0], "optim/head_split_params"), 8.0);
    assert_ne!(
        get(&per_head[1], "optim/grad_norm"),
        get(&pion[1], "optim/grad_norm")
    );
}

/// TIS against the truncated sampler: its weight π/π_sampler is the kept mass of top-p, so it
/// lies in [top_p, 1]; masking at a cap of top_p drops almost every token (weights equal to
/// the cap are kept, and only ties reach it).
#[test]
fn tis_modes_reweight_by_the_truncated_sampler() {
    let truncate = run(&["rollout.top_p=0.8", "objective.tis=\"truncate\""]);
    for m in &truncate {
        let w = get(m, "objective/tis_weight_mean");
        assert!((0.8 - 1e-5..1.0).contains(&w), "{w}");
    }
    let mask = run(&[
        "rollout.top_p=0.8",
        "objective.tis=\"mask\"",
        "objective.tis_cap=0.8",
    ]);
    for m in &mask {
        assert!(get(m, "objective/tis_over_cap_frac") > 0.9, "{m:?}");
    }
}

/// The trained policy is the temperature-scaled one: at T = 0.5 its entropy is below the T = 1
/// baseline's on the first step, and the stored log-probs are that policy's, so the first
/// (on-policy) update sees a ratio of 1.
#[test]
fn the_rollout_temperature_is_the_trained_policys() {
    let base = baseline();
    let cold = run(&["rollout.temperature=0.5"]);
    assert!(get(&cold[0], "objective/entropy") < get(&base[0], "objective/entropy"));
    assert!(get(&cold[0], "objective/approx_kl_old").abs() < 1e-5);
    assert!((get(&cold[0], "objective/ratio_mean") - 1.0).abs() < 1e-4);
}

/// Resume with a reference model (GRPO's KL anchor): an interrupted and resumed run has
/// exactly the metrics of an uninterrupted one, KL included; a checkpoint without its
/// reference is refused.
#[test]
fn resume_with_a_reference_reproduces_the_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let extra = [
        "objective.kind=\"grpo\"",
        "objective.entropy_coef=0.05",
        "train.lr=1e-2",
        "train.steps=4",
        "checkpoint.every=1",
    ];
    let sets = sets(&extra);
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let quiet = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let straight = tmp.path().join("straight");
    train(common::tiny_config(&straight, &refs), &quiet).unwrap();
    let resumed = tmp.path().join("resumed");
    let stop = RunOptions {
        stop_after: Some(2),
        ..quiet.clone()
    };
    train(common::tiny_config(&resumed, &refs), &stop).unwrap();
    let ckpt = checkpoint::latest(&resumed).unwrap().unwrap();
    assert!(ckpt.join("reference/model.safetensors").is_file());
    let resume = RunOptions {
        resume: Some(resumed.clone()),
        ..quiet.clone()
    };
    train(common::tiny_config(&resumed, &refs), &resume).unwrap();

    let (a, b) = (common::history(&straight), common::history(&resumed));
    assert_eq!(a.len(), 4);
    assert_eq!(a.len(), b.len());
    for (step, (ma, mb)) in a.iter().zip(&b).enumerate() {
        for (key, va) in ma {
            if key.starts_with("time/")
                || key.starts_with("throughput/")
                || key.starts_with("memory/")
            {
                continue;
            }
            assert_eq!(Some(va), mb.get(key), "step {}: {key}", step + 1);
        }
    }
    assert!(get(&a[3], "objective/kl_ref") > 0.0);

    // The same resume from a checkpoint that lost its reference is an error naming it.
    let broken = tmp.path().join("broken");
    train(common::tiny_config(&broken, &refs), &stop).unwrap();
    let ckpt = checkpoint::latest(&broken).unwrap().unwrap();
    std::fs::remove_dir_all(ckpt.join("reference")).unwrap();
    let err = train(
        common::tiny_config(&broken, &refs),
        &RunOptions {
            resume: Some(broken.clone()),
            ..quiet
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("reference"), "{err}");
}
