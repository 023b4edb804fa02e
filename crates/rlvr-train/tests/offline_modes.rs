//! The offline modes on the tiny model: G2D collection and DPO, the unlearnability diagnostic,
//! and RELEX extrapolation of a run's checkpoints.

mod common;

use std::path::Path;

use burn::module::Module;

use rlvr_train::data::load_jsonl;
use rlvr_train::model::bundled::{base_policy, load_dir};
use rlvr_train::model::device::default_device;
use rlvr_train::offline::diagnose::{cosine, diagnose, prompt_gradient};
use rlvr_train::offline::g2d::{PreferencePair, collect, dpo, read_pairs};
use rlvr_train::offline::params::flatten;
use rlvr_train::offline::relex::relex;
use rlvr_train::step::rollout::{generation_config, sample_groups};
use rlvr_train::trainer::Trainer;
use rlvr_train::{Error, RunConfig};

fn config(tmp: &Path, extra: &[&str]) -> RunConfig {
    common::tiny_config(&tmp.join("run"), extra)
}

/// Collection writes only pairs whose chosen response is correct and rejected one is not (the
/// verifier's verdict on the stored text), at most `pairs_per_prompt` per prompt.
#[test]
fn g2d_collect_writes_verified_pairs() {
    let tmp = tempfile::tempdir().unwrap();
    let data = common::write_sums(tmp.path());
    let set = format!("data.train=\"{}\"", data.display());
    let cfg = config(
        tmp.path(),
        &[
            &set,
            "sft.steps=300",
            "rollout.group_size=8",
            "g2d.pairs_per_prompt=2",
        ],
    );
    let out = tmp.path().join("pairs.jsonl");
    let stats = collect(&cfg, None, &out, 24).unwrap();
    assert_eq!(stats.prompts, 24);
    let pairs = read_pairs(&out).unwrap();
    assert_eq!(pairs.len(), stats.pairs);
    assert!(
        stats.pairs > 0 && stats.pairs <= 2 * stats.mixed_prompts,
        "{stats:?}"
    );
    let train = load_jsonl(&cfg.data.train).unwrap();
    let verifier = cfg.verifier.build().unwrap();
    for p in &pairs {
        let ex = train.iter().find(|e| e.id == p.id).unwrap();
        let r = rlvr_train::verify::reference_of(&cfg.verifier, ex).unwrap();
        assert!(verifier.verify(&p.chosen, &r).passed, "{p:?}");
        assert!(!verifier.verify(&p.rejected, &r).passed, "{p:?}");
        assert!(
            p.chosen_ids.len().max(p.rejected_ids.len())
                <= 3 * p.chosen_ids.len().min(p.rejected_ids.len())
        );
    }
    eprintln!("g2d: {stats:?}");
}

/// DPO on pairs (the right answer vs. a wrong one) lowers the DPO loss and raises the share of
/// pairs the policy ranks right, and writes a loadable model.
#[test]
fn dpo_lowers_the_preference_loss() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(
        tmp.path(),
        &[
            "g2d.lr=3e-3",
            "g2d.epochs=4",
            "g2d.batch_size=8",
            "g2d.beta=0.5",
            "data.eval_limit=4",
        ],
    );
    let device = default_device();
    let train = load_jsonl(&cfg.data.train).unwrap();
    let base = base_policy(&cfg, &train, &[], &device).unwrap();
    let tok = &base.tokenizer;
    let eos = tok.eos_token_ids()[0];
    let pairs: String = train[..16]
        .iter()
        .map(|ex| {
            let answer = ex.record["answer"].as_str().unwrap();
            let wrong = format!("{}", answer.parse::<i64>().unwrap() + 7);
            let ids = |s: &str| {
                let mut v = tok.encode(s).unwrap();
                v.push(eos);
                v
            };
            let p = PreferencePair {
                id: ex.id.clone(),
                prompt: ex.prompt.clone().unwrap(),
                prompt_ids: tok.encode(ex.prompt.as_deref().unwrap()).unwrap(),
                chosen: answer.into(),
                chosen_ids: ids(answer),
                chosen_logp_mean: 0.0,
                rejected: wrong.clone(),
                rejected_ids: ids(&wrong),
                rejected_logp_mean: 0.0,
            };
            serde_json::to_string(&p).unwrap() + "\n"
        })
        .collect();
    let path = tmp.path().join("pairs.jsonl");
    std::fs::write(&path, pairs).unwrap();
    let out = dpo(&cfg, &path, Some(&base.dir), &tmp.path().join("dpo")).unwrap();
    assert_eq!(out.updates, 8);
    assert!(out.last_loss < out.first_loss, "{out:?}");
    let trained = load_dir(&out.model_dir, &device).unwrap();
    assert_ne!(flatten(&trained.model), flatten(&base.model));

    std::fs::write(&path, "{\"id\": \"x\"}\n").unwrap();
    let err = dpo(&cfg, &path, Some(&base.dir), &tmp.path().join("dpo2")).unwrap_err();
    assert!(matches!(err, Error::BadLine { line: 1, .. }), "{err}");
}

/// The gradient of one group is parallel to itself (cosine 1) and not to another group's; the
/// report covers every prompt (analysed or skipped) and is written.
#[test]
fn diagnose_gradients_and_report() {
    let tmp = tempfile::tempdir().unwrap();
    let data = common::write_sums(tmp.path());
    let set = format!("data.train=\"{}\"", data.display());
    let cfg = config(tmp.path(), &[&set, "sft.steps=300", "rollout.group_size=8"]);
    let device = default_device();
    let train = load_jsonl(&cfg.data.train).unwrap();
    let base = base_policy(&cfg, &train, &[], &device).unwrap();
    let dir = base.dir.clone();
    let tr = Trainer::new(
        cfg.clone(),
        device,
        base.model,
        base.config,
        base.tokenizer,
        train,
        vec![],
    )
    .unwrap();
    let gen_cfg = generation_config(&cfg.rollout, &tr.tokenizer, false);
    let ids = tr.encode_prompts(&[0, 1]).unwrap();
    let samples = sample_groups(
        &tr.model().valid(),
        &tr.tokenizer,
        &tr.train_set,
        &[0, 1],
        &ids,
        4,
        &gen_cfg,
        5,
    )
    .unwrap();
    let ga = prompt_gradient(&tr, &samples, &[0, 1], &[1.0, 1.0]);
    let ga2 = prompt_gradient(&tr, &samples, &[0, 1], &[1.0, 1.0]);
    let gb = prompt_gradient(&tr, &samples, &[4, 5], &[1.0, 1.0]);
    assert!(ga.iter().any(|&x| x != 0.0));
    assert!((cosine(&ga, &ga2) - 1.0).abs() < 1e-6);
    assert!(cosine(&ga, &gb) < 0.999, "{}", cosine(&ga, &gb));
    // Flipping the advantage flips the gradient.
    let neg = prompt_gradient(&tr, &samples, &[0, 1], &[-1.0, -1.0]);
    assert!((cosine(&ga, &neg) + 1.0).abs() < 1e-6);

    let out = tmp.path().join("diag");
    let report = diagnose(&cfg, &dir, &data, 12, 0.1, &out).unwrap();
    assert_eq!(report.prompts.len() + report.skipped.len(), 12);
    assert!(report.prompts.len() >= 2, "{report:?}");
    // The lowest mean similarity is at or below the 10% quantile: at least one prompt flagged,
    // and every flagged prompt is at or below every unflagged one.
    let flagged: Vec<f64> = report
        .prompts
        .iter()
        .filter(|p| p.likely_unlearnable)
        .map(|p| p.mean_similarity)
        .collect();
    let rest: Vec<f64> = report
        .prompts
        .iter()
        .filter(|p| !p.likely_unlearnable)
        .map(|p| p.mean_similarity)
        .collect();
    assert!(!flagged.is_empty());
    assert!(flagged.iter().all(|f| rest.iter().all(|r| f <= r)));
    for (i, row) in report.similarity.iter().enumerate() {
        assert!((row[i] - 1.0).abs() < 1e-6 || row[i] == 0.0);
    }
    assert!(out.join("diagnose.md").is_file() && out.join("diagnose.json").is_file());
}

/// A 4-checkpoint run extrapolated to steps 6, 8 and 10: loadable models whose weights move
/// along a line (θ̂(10) − θ̂(8) = θ̂(8) − θ̂(6): linear in the target step, rank 1); targets
/// that are not past the last checkpoint are refused.
#[test]
fn relex_writes_linear_extrapolations() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    common::train_quiet(&run, &["eval.every=0", "data.eval_limit=4"]);
    let out = tmp.path().join("relex");
    let cfg = rlvr_objectives::shaping::RelexConfig::default();
    let o = relex(&run, None, &cfg, &[6, 8, 10], &out).unwrap();
    assert_eq!(o.history, vec![1, 2, 3, 4]);
    assert!(o.explained_variance_mean > 0.0 && o.explained_variance_mean <= 1.0 + 1e-9);
    let device = default_device();
    let load = |s: &str| flatten(&load_dir(&out.join(s), &device).unwrap().model);
    let (a, b, c) = (
        load("step-000006"),
        load("step-000008"),
        load("step-000010"),
    );
    let last = flatten(
        &load_dir(&run.join("checkpoints/step-000004"), &device)
            .unwrap()
            .model,
    );
    let mut moved = 0.0f64;
    for (((pa, pb), pc), pl) in a.iter().zip(&b).zip(&c).zip(&last) {
        for (((x, y), z), l) in pa
            .values
            .iter()
            .zip(&pb.values)
            .zip(&pc.values)
            .zip(&pl.values)
        {
            let (d1, d2) = (f64::from(y - x), f64::from(z - y));
            assert!(
                (d1 - d2).abs() < 1e-4 + 1e-3 * d1.abs(),
                "{}: {d1} vs {d2}",
                pa.path
            );
            moved = moved.max(f64::from((x - l).abs()));
        }
    }
    assert!(moved > 0.0, "the extrapolation equals the last checkpoint");
    assert!(matches!(
        relex(&run, None, &cfg, &[4], &out),
        Err(Error::Config(_))
    ));
    assert!(relex(&run, None, &cfg, &[7], &out).is_ok());
}
