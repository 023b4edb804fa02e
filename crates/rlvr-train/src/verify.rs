//! Verification (phase 2 of a step, and of evaluation): each sample's reference comes from its
//! dataset line, the verifier scores all responses of a step in parallel, and a failure on one
//! sample (timeout, crash) is that sample's zero reward, counted in the metrics; the run goes
//! on.

use std::sync::Arc;

use rlvr_verifiers::{Kind, Outcome, Reference, Verdict, Verifier, VerifierConfig, verify_batch};

use crate::batch::Sample;
use crate::data::Example;
use crate::error::{Error, Result};
use crate::metrics::Metrics;

/// The verifier's reference for an example (from the fields of its dataset line). For the
/// kinds that read the whole record (`command`, `http`, and `composite` parts of those kinds)
/// the record gets the example's `id` and plain-text `prompt` when its line has none.
pub fn reference_of(config: &VerifierConfig, example: &Example) -> Result<Reference> {
    let reference = if reads_record(config) {
        let mut record = example.record.as_object().cloned().unwrap_or_default();
        record
            .entry("id")
            .or_insert_with(|| serde_json::Value::String(example.id.clone()));
        if let Some(p) = &example.prompt {
            record
                .entry("prompt")
                .or_insert_with(|| serde_json::Value::String(p.clone()));
        }
        config.reference(&serde_json::Value::Object(record))
    } else {
        config.reference(&example.record)
    };
    reference.map_err(|e| Error::Config(format!("example `{}`: {e}", example.id)))
}

/// Whether the verifier (or a part of it) hands the whole record to a user program or service.
fn reads_record(config: &VerifierConfig) -> bool {
    match config {
        VerifierConfig::Command(_) | VerifierConfig::Http(_) => true,
        VerifierConfig::Composite(c) => c.parts.iter().any(|p| reads_record(&p.verifier)),
        _ => false,
    }
}

/// The reference kind a verifier config reads.
pub fn kind_of(config: &VerifierConfig) -> Kind {
    config.kind()
}

/// Verifies `texts[i]` against `refs[i]`, in parallel, each within the verifier's own item
/// limit ([`VerifierConfig::item_time_limit`]: for code, the sandbox's wall limit plus its
/// kill grace, so no worker is abandoned while its sandbox is still inside its limit).
pub fn verify_texts(
    verifier: &Arc<dyn Verifier>,
    config: &VerifierConfig,
    texts: &[String],
    refs: &[Reference],
) -> Vec<Verdict> {
    let items: Vec<(String, Reference)> = texts.iter().cloned().zip(refs.iter().cloned()).collect();
    verify_batch(Arc::clone(verifier), &items, config.item_time_limit())
}

/// Scores samples of `dataset` (`Sample::example` indexes it) with `verifier`: sets `reward`,
/// `passed` and `extracted` on each, returns the rewards, and counts in `m` the verdicts the
/// verifier could not give (`verify/errors`: a sandbox failure, a bad reply of a reward
/// program or service), the timeouts (`verify/timeouts`) and the programs that crashed
/// (`verify/crashed`: a syntax error, an exception while loading; wrong answers). A
/// `composite` verifier's part rewards are logged as `reward/part/<name>`: the mean over every
/// sample the step scored (all dynamic-sampling rounds), whose count is `verify/part_samples`.
/// The dense code reward's penalty spans go on the samples; its analyzer time
/// (`time/dense_analyze_s`, summed over samples) and finding count (`dense/findings`, over
/// `dense/samples`) are added to `m`.
pub fn score(
    verifier: &Arc<dyn Verifier>,
    config: &VerifierConfig,
    dataset: &[Example],
    samples: &mut [Sample],
    m: &mut Metrics,
) -> Vec<f32> {
    let refs: Vec<Option<Reference>> = samples
        .iter()
        .map(|s| reference_of(config, &dataset[s.example]).ok())
        .collect();
    let texts: Vec<String> = samples.iter().map(|s| s.text.clone()).collect();
    let (mut idx, mut items) = (Vec::new(), Vec::new());
    for (i, r) in refs.into_iter().enumerate() {
        if let Some(r) = r {
            idx.push(i);
            items.push((texts[i].clone(), r));
        }
    }
    let verdicts = verify_batch(Arc::clone(verifier), &items, config.item_time_limit());
    let mut rewards = vec![0.0f32; samples.len()];
    let (mut errors, mut timeouts, mut crashed) = (samples.len() - idx.len(), 0usize, 0usize);
    let mut part_sums: Vec<(String, f64, usize)> = Vec::new();
    let mut dense = (0.0f64, 0usize, 0usize);
    for (i, v) in idx.into_iter().zip(verdicts) {
        for p in &v.parts {
            match part_sums.iter_mut().find(|(name, ..)| *name == p.name) {
                Some((_, sum, n)) => {
                    *sum += f64::from(p.reward);
                    *n += 1;
                }
                None => part_sums.push((p.name.clone(), f64::from(p.reward), 1)),
            }
        }
        samples[i].passed = v.passed;
        samples[i].extracted = v.extracted.clone();
        samples[i].penalty_spans.clone_from(&v.penalties);
        if let Some(d) = v.details.get("dense") {
            // The dense code reward: its analyzer's time (summed over the step's samples) and
            // its localized findings.
            dense.0 += d["analyze_s"].as_f64().unwrap_or(0.0);
            dense.1 += d["findings"].as_array().map_or(0, Vec::len);
            dense.2 += 1;
        }
        match v.outcome {
            Outcome::Timeout => timeouts += 1,
            // A program that crashed (a syntax error, an exception while loading): the
            // response's failure, scored as any wrong answer is.
            Outcome::Crashed => crashed += 1,
            // A verifier that could not judge (a bad reply of a reward program or service, a
            // sandbox failure): not the response's fault.
            Outcome::Error => errors += 1,
            _ => {}
        }
        rewards[i] = if v.reward.is_finite() {
            v.reward.clamp(0.0, 1.0)
        } else {
            0.0
        };
    }
    if errors + timeouts > 0 {
        eprintln!(
            "verify: {errors} errors and {timeouts} timeouts this step; those samples get reward 0"
        );
    }
    if dense.2 > 0 {
        *m.entry("time/dense_analyze_s".into()).or_default() += dense.0;
        *m.entry("dense/findings".into()).or_default() += dense.1 as f64;
        *m.entry("dense/samples".into()).or_default() += dense.2 as f64;
    }
    *m.entry("verify/errors".into()).or_default() += errors as f64;
    *m.entry("verify/crashed".into()).or_default() += crashed as f64;
    *m.entry("verify/timeouts".into()).or_default() += timeouts as f64;
    if let Some(&(_, _, n)) = part_sums.first() {
        // Every part is scored on the same samples; earlier calls of this step are folded in.
        let before = m.get("verify/part_samples").copied().unwrap_or(0.0);
        let after = before + n as f64;
        for (name, sum, _) in part_sums {
            let key = format!("reward/part/{name}");
            let old = m.get(&key).copied().unwrap_or(0.0);
            m.insert(key, (old * before + sum) / after);
        }
        m.insert("verify/part_samples".into(), after);
    }
    for (s, r) in samples.iter_mut().zip(&rewards) {
        s.reward = *r;
    }
    rewards
}
