//! The extra forward passes of the token-credit stages, before the `[stages]` pipeline:
//! CEPO's δ_t = ℓ⁺_t − ℓ⁻_t and OPPO's oracle log-probs ℓᵒ_t (methods-extra §15, §14), each a
//! [`conditioned_logprobs`] pass of the current policy (no gradient) at the rollout temperature.
//!
//! CEPO, per group: r⁺ = " " + the gold answer; r⁻ = " " + the extracted answer of the worst
//! rejected rollout (reward < 0.5, the lowest, the first on ties), or its first 50 characters
//! when nothing was extracted. A group without a rejected rollout (r⁻ = r⁺) or whose rewards are
//! all equal (A = 0 for every sequence estimator but AVSPO) is not scored: δ = 0. With λ = 0
//! (after the warm-up) nothing is scored. OPPO: the context is `oppo.oracle_template` with the
//! gold answer, for every sample; ℓ is the sample's stored log-prob.
//!
//! AMR-SD (§16): while λ_k > 0, the policy writes a reflection hint per rollout of every group
//! whose rewards are not all equal (`reflection.rs`), and ℓ^hint is a conditioned pass with
//! `amr_sd.context_template` around the hint; rows without an accepted hint get no ℓ^hint.
//!
//! The gold answer is the line's `answer` field (where `data.answer_field` is copied to).

use std::time::Instant;

use burn::module::Module;

use super::conditioned::conditioned_logprobs;
use super::reflection;
use crate::batch::Sample;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::prompt::pad_id;
use crate::trainer::Trainer;

/// Characters of a rejected response that stand for its answer when none was extracted (the
/// CEPO code's fallback).
const FALLBACK_CHARS: usize = 50;

/// A rollout whose reward is below this is rejected (CEPO's code).
const REJECTED_BELOW: f32 = 0.5;

/// What the token-credit stages need from the trainer; `None` where no stage asked for it.
#[derive(Debug, Default)]
pub struct TokenCreditInputs {
    /// CEPO's δ per response token, one vector per sample.
    pub cepo_delta: Option<Vec<Vec<f32>>>,
    /// The stored (sampling policy's) log-probs per response token.
    pub token_logp: Option<Vec<Vec<f32>>>,
    /// OPPO's oracle-prompted log-probs per response token.
    pub oracle_logp: Option<Vec<Vec<f32>>>,
    /// AMR-SD's hint-conditioned log-probs per response token (empty for a row without a hint).
    pub hint_logp: Option<Vec<Vec<f32>>>,
}

/// Runs the passes that `[stages] cepo` / `oppo` / `amr_sd` need this step (none when all are
/// off) and logs `time/token_credit_s` and the rows scored (AMR-SD also its reflection's counts
/// and `time/amr_sd_reflection_s`).
///
/// # Errors
/// A sample whose dataset line has no gold `answer`, or a context the tokenizer rejects.
pub fn inputs(tr: &Trainer, samples: &[Sample], m: &mut Metrics) -> Result<TokenCreditInputs> {
    let stages = &tr.config.stages;
    if stages.cepo.is_none() && stages.oppo.is_none() && stages.amr_sd.is_none() {
        return Ok(TokenCreditInputs::default());
    }
    let t = Instant::now();
    let policy = tr.model().valid();
    let temperature = tr.config.rollout.temperature;
    let pad = pad_id(&tr.tokenizer);
    let mut out = TokenCreditInputs {
        token_logp: Some(samples.iter().map(|s| s.old_logp.clone()).collect()),
        ..TokenCreditInputs::default()
    };
    if let Some(cfg) = &stages.cepo
        && cfg.lambda(tr.state.shaping.step) > 0.0
    {
        let g = tr.config.rollout.group_size;
        let mut delta: Vec<Vec<f32>> = samples
            .iter()
            .map(|s| vec![0.0; s.response.len()])
            .collect();
        let (mut rows, mut plus, mut minus) = (Vec::new(), Vec::new(), Vec::new());
        for (gi, group) in samples.chunks(g).enumerate() {
            let all_equal = group.windows(2).all(|w| w[0].reward == w[1].reward);
            if all_equal && stages.avspo.is_none() {
                continue;
            }
            let Some(worst) = worst_rejected(group) else {
                continue;
            };
            let p = tr
                .tokenizer
                .encode(&format!(" {}", gold(tr, &group[0], "stages.cepo")?))?;
            let n = tr.tokenizer.encode(&format!(" {}", answer_of(worst)))?;
            if p == n {
                continue;
            }
            for i in gi * g..gi * g + group.len() {
                rows.push(i);
                plus.push(p.clone());
                minus.push(n.clone());
            }
        }
        let lp = conditioned_logprobs(&policy, samples, &rows, &plus, temperature, pad);
        let ln = conditioned_logprobs(&policy, samples, &rows, &minus, temperature, pad);
        for ((&i, a), b) in rows.iter().zip(lp).zip(ln) {
            delta[i] = a.iter().zip(&b).map(|(x, y)| x - y).collect();
        }
        m.insert("token_credit/cepo_scored_rows".into(), rows.len() as f64);
        out.cepo_delta = Some(delta);
    }
    if let Some(cfg) = &stages.oppo {
        let contexts = samples
            .iter()
            .map(|s| {
                let text = cfg.oracle_context(&gold(tr, s, "stages.oppo")?);
                Ok(tr.tokenizer.encode(&text)?)
            })
            .collect::<Result<Vec<_>>>()?;
        let rows: Vec<usize> = (0..samples.len()).collect();
        out.oracle_logp = Some(conditioned_logprobs(
            &policy,
            samples,
            &rows,
            &contexts,
            temperature,
            pad,
        ));
        m.insert("token_credit/oppo_scored_rows".into(), rows.len() as f64);
    }
    if let Some(cfg) = &stages.amr_sd {
        let step = tr.state.shaping.step;
        if cfg.lambda(step, tr.config.train.steps as u64) > 0.0 {
            out.hint_logp = Some(amr_sd_hint_logp(tr, &policy, samples, step, m)?);
        }
    }
    m.insert("time/token_credit_s".into(), t.elapsed().as_secs_f64());
    Ok(out)
}

/// AMR-SD: reflection hints for the groups whose rewards are not all equal (all of them with
/// AVSPO), then ℓ^hint of each hinted row; logs the reflection's counts.
fn amr_sd_hint_logp(
    tr: &Trainer,
    policy: &rlvr_models::CausalLm,
    samples: &[Sample],
    stage_step: u64,
    m: &mut Metrics,
) -> Result<Vec<Vec<f32>>> {
    let stages = &tr.config.stages;
    let Some(cfg) = &stages.amr_sd else {
        return Ok(vec![Vec::new(); samples.len()]);
    };
    let g = tr.config.rollout.group_size;
    let t = Instant::now();
    let mut groups = Vec::new();
    let mut golds = Vec::new();
    for (gi, group) in samples.chunks(g).enumerate() {
        let all_equal = group.windows(2).all(|w| w[0].reward == w[1].reward);
        if all_equal && stages.avspo.is_none() {
            continue;
        }
        groups.push(gi);
        golds.push(gold(tr, &group[0], "stages.amr_sd")?);
    }
    let hints = reflection::hints(tr, policy, samples, &groups, &golds, stage_step)?;
    m.insert("time/amr_sd_reflection_s".into(), t.elapsed().as_secs_f64());
    let (mut rows, mut contexts) = (Vec::new(), Vec::new());
    let mut chars = 0usize;
    for (i, h) in hints.per_sample.iter().enumerate() {
        if let Some(h) = h {
            rows.push(i);
            contexts.push(tr.tokenizer.encode(&cfg.context(h))?);
            chars += h.chars().count();
        }
    }
    let temperature = tr.config.rollout.temperature;
    let lp = conditioned_logprobs(
        policy,
        samples,
        &rows,
        &contexts,
        temperature,
        pad_id(&tr.tokenizer),
    );
    let mut hint_logp = vec![Vec::new(); samples.len()];
    for (&i, l) in rows.iter().zip(lp) {
        hint_logp[i] = l;
    }
    m.insert(
        "token_credit/amr_sd_reflections".into(),
        hints.reflected as f64,
    );
    m.insert(
        "token_credit/amr_sd_regenerated".into(),
        hints.regenerated as f64,
    );
    m.insert(
        "token_credit/amr_sd_leak_dropped".into(),
        hints.leak_dropped as f64,
    );
    m.insert(
        "token_credit/amr_sd_empty_dropped".into(),
        hints.empty_dropped as f64,
    );
    m.insert("token_credit/amr_sd_scored_rows".into(), rows.len() as f64);
    m.insert(
        "token_credit/amr_sd_hint_chars_mean".into(),
        chars as f64 / rows.len().max(1) as f64,
    );
    Ok(hint_logp)
}

/// The group's worst rejected rollout: the lowest reward below 0.5, the first on ties.
fn worst_rejected(group: &[Sample]) -> Option<&Sample> {
    group
        .iter()
        .filter(|s| s.reward < REJECTED_BELOW)
        .fold(None, |best: Option<&Sample>, s| match best {
            Some(b) if b.reward <= s.reward => Some(b),
            _ => Some(s),
        })
}

/// A rejected rollout's answer: the verifier's extraction, else its first 50 characters.
fn answer_of(s: &Sample) -> String {
    match &s.extracted {
        Some(a) => a.clone(),
        None => s.text.chars().take(FALLBACK_CHARS).collect(),
    }
}

/// The gold answer of a sample's dataset line (a string, or a number as written).
pub(crate) fn gold(tr: &Trainer, s: &Sample, stage: &str) -> Result<String> {
    let ex = &tr.train_set[s.example];
    match ex.record.get("answer") {
        Some(serde_json::Value::String(a)) => Ok(a.clone()),
        Some(v @ serde_json::Value::Number(_)) => Ok(v.to_string()),
        _ => Err(Error::Config(format!(
            "{stage} needs a gold answer, and example `{}` has no string `answer` \
             (data.answer_field)",
            ex.id
        ))),
    }
}

#[cfg(test)]
mod tests {
    use rlvr_models::FinishReason;

    use super::*;

    fn sample(reward: f32, extracted: Option<&str>, text: &str) -> Sample {
        Sample {
            reward,
            extracted: extracted.map(str::to_string),
            text: text.into(),
            ..Sample::unscored(0, vec![1], vec![2], vec![-1.0], FinishReason::Stop)
        }
    }

    /// The lowest reward below 0.5 wins, the first of equals; none below 0.5 → none; without
    /// an extraction the first 50 characters stand for the answer.
    #[test]
    fn the_worst_rejected_rollout_and_its_answer() {
        let g = [
            sample(1.0, Some("4"), "4"),
            sample(0.2, Some("5"), "5"),
            sample(0.0, None, &"x".repeat(80)),
            sample(0.0, Some("7"), "7"),
        ];
        let w = worst_rejected(&g).unwrap();
        assert_eq!(answer_of(w), "x".repeat(50));
        assert!(worst_rejected(&g[..1]).is_none());
        assert_eq!(answer_of(worst_rejected(&g[..2]).unwrap()), "5");
    }
}
