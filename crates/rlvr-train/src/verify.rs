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

/// The verifier's reference for an example (from the fields of its dataset line).
pub fn reference_of(config: &VerifierConfig, example: &Example) -> Result<Reference> {
    Reference::from_record(kind_of(config), &example.record)
        .map_err(|e| Error::Config(format!("example `{}`: {e}", example.id)))
}

/// The reference kind a verifier config reads.
pub fn kind_of(config: &VerifierConfig) -> Kind {
    match config {
        VerifierConfig::Math(_) => Kind::Math,
        VerifierConfig::Code(_) => Kind::Code,
        VerifierConfig::Rubric(_) => Kind::Rubric,
    }
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
/// `passed` and `extracted` on each, returns the rewards, and counts failures in `m`.
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
    let (mut errors, mut timeouts) = (samples.len() - idx.len(), 0usize);
    for (i, v) in idx.into_iter().zip(verdicts) {
        samples[i].passed = v.passed;
        samples[i].extracted = v.extracted.clone();
        match v.outcome {
            Outcome::Timeout => timeouts += 1,
            Outcome::Crashed => errors += 1,
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
    *m.entry("verify/errors".into()).or_default() += errors as f64;
    *m.entry("verify/timeouts".into()).or_default() += timeouts as f64;
    for (s, r) in samples.iter_mut().zip(&rewards) {
        s.reward = *r;
    }
    rewards
}
