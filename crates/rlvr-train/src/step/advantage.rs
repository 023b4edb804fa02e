//! Phase 3 of a step, advantages: reward shaping (DAPO's overlong penalty, KL in the reward),
//! then the `[stages]` pipeline of rlvr-objectives, once per step on the kept batch. With every
//! stage off the pipeline is the objective's own group estimator (GRPO's advantage for
//! `grpo`), so there is one path for every configuration. CEPO, OPPO and AMR-SD get their extra
//! forward passes (and AMR-SD its reflection) first (`token_credit.rs`).

use rlvr_objectives::reward_shaping::ShapingInput;
use rlvr_objectives::shaping::{segment_token_offsets, token_offsets};
use rlvr_objectives::{StageInput, kl};

use super::exec_credit::{self, token_char_bounds};
use super::rollout::Rollouts;
use super::scrl;
use super::srar_judge::step_judgments;
use super::token_credit;
use crate::batch::{Sample, pack};
use crate::error::Result;
use crate::metrics::{Metrics, mean};
use crate::prompt::pad_id;
use crate::trainer::Trainer;

/// Sets `advantage` (times the stages' loss weight) and `token_offsets` (SRaR, CEPO, OPPO) on
/// every kept sample and returns the fraction of groups whose advantages are all zero.
pub fn assign(tr: &mut Trainer, batch: &mut Rollouts, m: &mut Metrics) -> Result<f64> {
    let g = tr.config.rollout.group_size;
    let samples = &mut batch.samples;
    let mut rewards: Vec<f32> = samples.iter().map(|s| s.reward).collect();
    shape_rewards(tr, samples, &mut rewards, m)?;
    let (advantages, offsets, coef) = apply_stages(tr, samples, &rewards, m)?;
    for (((s, a), o), c) in samples.iter_mut().zip(advantages).zip(offsets).zip(coef) {
        s.advantage = a;
        s.token_offsets = o;
        s.token_coef = c;
    }
    let groups = samples.len() / g;
    let zero = samples
        .chunks(g)
        .filter(|c| {
            c.iter()
                .all(|s| s.advantage == 0.0 && s.token_offsets.iter().all(|&o| o == 0.0))
        })
        .count();
    let zero_frac = zero as f64 / groups.max(1) as f64;
    m.insert("advantage/zero_group_frac".into(), zero_frac);
    Ok(zero_frac)
}

/// DAPO's soft overlong penalty and, with `kl_in_reward`, −β·KL to the reference per sequence,
/// applied to the rewards before advantages (the objective's knobs decide which).
fn shape_rewards(
    tr: &Trainer,
    samples: &[Sample],
    rewards: &mut [f32],
    m: &mut Metrics,
) -> Result<()> {
    let knobs = tr.config.objective.common();
    if knobs.overlong_penalty == 0.0 && !knobs.kl_in_reward {
        return Ok(());
    }
    let lens: Vec<usize> = samples.iter().map(Sample::policy_tokens).collect();
    let seq_kl = if knobs.kl_in_reward {
        let rows: Vec<usize> = (0..samples.len()).collect();
        let packed = pack(samples, &rows, pad_id(&tr.tokenizer), &tr.device);
        tr.reference_logp(&packed.ids, &packed.mask)
            .map(|ref_logp| {
                kl::sequence_kl(
                    &packed.old_logp,
                    &ref_logp,
                    &packed.mask,
                    knobs.kl_estimator,
                )
            })
    } else {
        None
    };
    let input = ShapingInput {
        response_lens: Some(&lens),
        sequence_kl: seq_kl.as_deref(),
    };
    let stats = tr.config.objective.shape_rewards(rewards, &input)?;
    m.insert(
        "reward/overlong_penalized".into(),
        stats.overlong_penalized as f64,
    );
    Ok(())
}

/// The `[stages]` pipeline (reward composition, estimator, shapers; rlvr-objectives'
/// `StagesConfig::apply`, which advances the stages' state once). Returns per-sequence
/// advantages times loss weights, and per sample its per-token advantage offsets (SRaR's step
/// offsets mapped to response tokens, SCRL's segment offsets mapped by each token's characters,
/// plus the stages' token offsets (CEPO, OPPO, AMR-SD) plus the
/// dense code reward's line penalties (`exec_credit.rs`), times the same loss weight; empty
/// without them), and per sample its per-token loss coefficients (DelTA; empty without them).
#[allow(clippy::type_complexity)]
fn apply_stages(
    tr: &mut Trainer,
    samples: &[Sample],
    rewards: &[f32],
    m: &mut Metrics,
) -> Result<(Vec<f32>, Vec<Vec<f32>>, Vec<Vec<f32>>)> {
    let g = tr.config.rollout.group_size;
    let passed: Vec<bool> = samples.iter().map(|s| s.passed).collect();
    let extracted: Vec<Option<String>> = samples.iter().map(|s| s.extracted.clone()).collect();
    let seq_logp: Vec<f32> = samples
        .iter()
        .map(|s| s.old_logp.iter().sum::<f32>() / s.old_logp.len().max(1) as f32)
        .collect();
    let texts: Vec<String> = samples.iter().map(|s| s.text.clone()).collect();
    let field = |s: &Sample, key: &str| {
        tr.train_set[s.example]
            .record
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let solutions: Vec<Option<String>> = samples.iter().map(|s| field(s, "solution")).collect();
    let tasks: Vec<String> = samples
        .iter()
        .map(|s| field(s, "task").unwrap_or_else(|| "default".into()))
        .collect();
    let judgments = match tr.config.stages.srar {
        Some(_) => Some(
            samples
                .iter()
                .map(|s| step_judgments(&tr.train_set[s.example], &s.text))
                .collect::<Result<Vec<_>>>()?,
        ),
        None => None,
    };
    let credit = token_credit::inputs(tr, samples, m)?;
    let subproblems = scrl::answers(tr, samples, m)?;
    let stages = &tr.config.stages;
    let response_tokens: Option<Vec<Vec<u32>>> = (stages.delta.is_some() || stages.rebel.is_some())
        .then(|| samples.iter().map(|s| s.response.clone()).collect());
    let episodes: Option<Vec<_>> = stages
        .rebel
        .map(|_| samples.iter().map(|s| s.steps.clone()).collect());
    let input = StageInput {
        episodes: episodes.as_deref(),
        response_tokens: response_tokens.as_deref(),
        cepo_delta: credit.cepo_delta.as_deref(),
        token_logp: credit.token_logp.as_deref(),
        oracle_logp: credit.oracle_logp.as_deref(),
        hint_logp: credit.hint_logp.as_deref(),
        run_steps: tr.config.train.steps as u64,
        passed: &passed,
        extracted_answers: &extracted,
        seq_logp_mean: &seq_logp,
        response_texts: &texts,
        reference_solutions: &solutions,
        task_ids: &tasks,
        step_judgments: judgments.as_deref(),
        subproblems: subproblems.as_deref(),
        ..StageInput::new(rewards, g)
    };
    let t = std::time::Instant::now();
    let out = tr.config.stages.apply(
        &input,
        &tr.config.objective.advantage_config(),
        &mut tr.state.shaping,
    )?;
    m.insert("time/stages_s".into(), t.elapsed().as_secs_f64());
    for (k, v) in &out.metrics {
        m.insert(format!("stages/{k}"), *v);
    }
    let penalties = exec_credit::offsets(&tr.tokenizer, samples, m)?;
    let t = std::time::Instant::now();
    let segments = samples
        .iter()
        .zip(&out.segment_offsets)
        .map(|(s, seg)| {
            if seg.is_empty() {
                return Ok(Vec::new());
            }
            let bounds = token_char_bounds(&tr.tokenizer, &s.response)?;
            Ok(segment_token_offsets(seg, &bounds))
        })
        .collect::<Result<Vec<_>>>()?;
    if tr.config.stages.scrl.is_some() {
        // One decode per token prefix of every sample: the cost of exact segment credit.
        m.insert("time/scrl_token_map_s".into(), t.elapsed().as_secs_f64());
    }
    let offsets: Vec<Vec<f32>> = samples
        .iter()
        .zip(&out.step_offsets)
        .zip(&out.token_offsets)
        .zip(&out.weights)
        .zip(&penalties)
        .zip(&segments)
        .map(|(((((s, spans), tokens), w), exec), segment)| {
            let mut o = if spans.is_empty() {
                Vec::new()
            } else {
                token_offsets(spans, s.text.chars().count(), s.response.len())
            };
            for add in [tokens, exec, segment] {
                if o.is_empty() {
                    o.clone_from(add);
                } else if !add.is_empty() {
                    o.iter_mut().zip(add).for_each(|(a, b)| *a += b);
                }
            }
            o.iter_mut().for_each(|x| *x *= w);
            o
        })
        .collect();
    let stages = &tr.config.stages;
    let dense = penalties.iter().any(|p| !p.is_empty());
    let token_credit = stages.cepo.is_some()
        || stages.oppo.is_some()
        || stages.amr_sd.is_some()
        || stages.rebel.is_some()
        || stages.scrl.is_some();
    if stages.srar.is_some() || token_credit || dense {
        let tokens: usize = samples.iter().map(|s| s.response.len()).sum();
        let sum: f64 = offsets.iter().flatten().map(|x| f64::from(x.abs())).sum();
        m.insert(
            "advantage/token_offset_abs_mean".into(),
            sum / tokens.max(1) as f64,
        );
    }
    m.insert(
        "advantage/abs_mean".into(),
        mean(out.weighted_advantages().iter().map(|a| f64::from(a.abs()))),
    );
    Ok((out.weighted_advantages(), offsets, out.token_weights))
}
