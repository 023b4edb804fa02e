//! One RL step, in data-flow order: rollout → verify → advantage → loss → backward → optimizer
//! → metrics.

use std::time::Instant;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use rlvr_models::{FinishReason, token_logprobs};
use rlvr_objectives::reward_shaping::ShapingInput;
use rlvr_objectives::shaping::token_offsets;
use rlvr_objectives::{LossContext, PolicyBatch, StageInput, StagesConfig, compute_advantages, kl};

use crate::batch::pack;
use crate::error::Result;
use crate::grad_norm::{clip_global_norm, global_norm, lm_head_grad_norm};
use crate::metrics::Metrics;
use crate::rollout::{Sample, generation_config, pad_id, sample_groups, step_seed};
use crate::schedule::warmup_constant;
use crate::srar_judge::step_judgments;
use crate::trainer::Trainer;
use crate::verify::score;

/// Runs RL step `step` (0-based) of `trainer` and returns its metrics.
pub fn rl_step(tr: &mut Trainer, step: usize) -> Result<Metrics> {
    let cfg = tr.config.clone();
    let g = cfg.rollout.group_size;
    let mut m = Metrics::new();

    // 1. Rollout (with one policy for all `stage_batches` batches: Mu-GRPO's large stages), then
    // 2. verify and 3. group advantages. Dynamic sampling draws more groups while too few carry signal.
    let t0 = Instant::now();
    let policy = tr.model().valid();
    let gen_cfg = generation_config(&cfg.rollout, &tr.tokenizer, false);
    let want = cfg.rollout.prompts_per_step * cfg.train.stage_batches;
    let mut kept: Vec<Sample> = Vec::new();
    let (mut verify_s, mut rollout_s) = (0.0, 0.0);
    let (mut all_rewards, mut zero_groups, mut groups) = (Vec::new(), 0, 0);
    let mut sampled_tokens = 0usize; // every response token generated, dropped groups included
    for round in 0..=cfg.rollout.max_resample_rounds {
        let need = want - kept.len() / g;
        let examples = tr.next_prompts(need);
        let prompt_ids = tr.encode_prompts(&examples)?;
        let t = Instant::now();
        let mut samples = sample_groups(
            &policy,
            &tr.tokenizer,
            &tr.train_set,
            &examples,
            &prompt_ids,
            g,
            &gen_cfg,
            step_seed(cfg.seed, step, round),
        )?;
        rollout_s += t.elapsed().as_secs_f64();
        sampled_tokens += samples.iter().map(|s| s.response.len()).sum::<usize>();
        let t = Instant::now();
        let mut rewards = score(tr, &mut samples, &mut m);
        verify_s += t.elapsed().as_secs_f64();
        all_rewards.extend_from_slice(&rewards);
        shape_rewards(tr, &samples, &mut rewards, &mut m)?;
        let advantages = if cfg.stages == StagesConfig::default() {
            let adv = compute_advantages(&cfg.objective.advantage_config(), &rewards, g)?;
            zero_groups += adv.zero_groups;
            groups += adv.groups;
            adv.values
        } else {
            let (values, offsets) = apply_stages(tr, &samples, &rewards, &mut m)?;
            groups += samples.len() / g;
            zero_groups += values
                .chunks(g)
                .filter(|c| c.iter().all(|&a| a == 0.0))
                .count();
            for (s, o) in samples.iter_mut().zip(offsets) {
                s.token_offsets = o;
            }
            values
        };
        for (s, a) in samples.iter_mut().zip(&advantages) {
            s.advantage = *a;
        }
        for group in samples.chunks(g) {
            let collapsed = group
                .iter()
                .all(|s| s.advantage == 0.0 && s.token_offsets.iter().all(|&o| o == 0.0));
            if !(cfg.rollout.dynamic_sampling && collapsed) {
                kept.extend_from_slice(group);
            }
        }
        if !cfg.rollout.dynamic_sampling || kept.len() / g >= want {
            break;
        }
    }
    kept.truncate(want * g);
    drop(policy);
    let mean = |v: &[f32]| v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len().max(1) as f64;
    let reward_mean = mean(&all_rewards);
    let reward_std = (all_rewards
        .iter()
        .map(|&r| (f64::from(r) - reward_mean).powi(2))
        .sum::<f64>()
        / all_rewards.len().max(1) as f64)
        .sqrt();
    m.insert("reward/mean".into(), reward_mean);
    m.insert("reward/std".into(), reward_std);
    m.insert(
        "reward/pass_rate".into(),
        all_rewards.iter().filter(|&&r| r >= 1.0).count() as f64 / all_rewards.len().max(1) as f64,
    );
    m.insert(
        "advantage/zero_group_frac".into(),
        zero_groups as f64 / groups.max(1) as f64,
    );
    let lens: Vec<f32> = kept.iter().map(|s| s.response.len() as f32).collect();
    m.insert("response/length_mean".into(), mean(&lens));
    m.insert(
        "response/truncated_frac".into(),
        kept.iter()
            .filter(|s| s.finish == FinishReason::Length)
            .count() as f64
            / kept.len().max(1) as f64,
    );
    m.insert("rollout/sampled_tokens".into(), sampled_tokens as f64);
    m.insert("time/rollout_s".into(), rollout_s);
    m.insert("time/verify_s".into(), verify_s);
    let _ = t0;

    // 4. Policy update: `epochs` passes over the kept samples in `mini_batches` slices each.
    let t = Instant::now();
    let lr = warmup_constant(step, cfg.train.warmup_steps, cfg.train.lr);
    m.insert("optim/lr".into(), lr);
    let n = kept.len();
    let per_mb = n
        .div_ceil(cfg.train.mini_batches * cfg.train.stage_batches)
        .max(1);
    let (mut norms, mut updates, mut tokens) = (Vec::new(), 0usize, 0usize);
    let entropy_bonus = cfg.objective.common().entropy_coef != 0.0;
    let mut loss_metrics: Vec<Metrics> = Vec::new();
    // DGG (when on) sets the number of passes and may end the reuse of the batch early.
    let dgg = cfg.stages.dgg.is_some();
    let (mut gated, mut passes, mut head_norms) = (false, 0usize, Vec::new());
    'epochs: for epoch in 0..cfg.stages.max_epochs(cfg.train.epochs) {
        passes += 1;
        let rows: Vec<usize> = (0..n).collect();
        for (mb, chunk) in rows.chunks(per_mb).enumerate() {
            let packed = pack(&kept, chunk, pad_id(&tr.tokenizer), &tr.device);
            tokens += packed.lengths.iter().sum::<usize>();
            let ref_logp = tr.reference_logp(&packed.ids, &packed.mask);
            let scores = token_logprobs(tr.model(), packed.ids.clone(), packed.mask.clone());
            let batch = PolicyBatch::new(
                scores.logp,
                packed.old_logp.clone(),
                ref_logp,
                None,
                packed.advantages.clone(),
                packed.mask.clone(),
                // The entropy carries gradient only when the objective has an entropy bonus.
                Some(if entropy_bonus {
                    scores.entropy
                } else {
                    scores.entropy.detach()
                }),
            )?;
            let ctx = LossContext::new(step_seed(cfg.seed, step, 1000 + epoch * 100 + mb), step)
                .with_max_response_len(cfg.rollout.max_new_tokens)
                .with_zero_adv_group_frac(zero_groups as f64 / groups.max(1) as f64);
            let out = cfg.objective.loss(&batch, &ctx)?;
            loss_metrics.push(out.metrics);
            let gate = dgg.then_some(epoch);
            match gated_update(tr, lr, out.loss, cfg.train.grad_clip, gate) {
                Update::Applied {
                    grad_norm,
                    lm_head_grad_norm,
                } => {
                    norms.push(grad_norm);
                    head_norms.extend(lm_head_grad_norm);
                    updates += 1;
                }
                Update::Skipped { loss, grad_norm } => {
                    eprintln!(
                        "step {step}: skipped an update (loss {loss}, gradient norm {grad_norm}); weights unchanged"
                    );
                }
                Update::Gated { lm_head_grad_norm } => {
                    head_norms.push(lm_head_grad_norm);
                    gated = true;
                    break 'epochs;
                }
            }
        }
    }
    if dgg {
        let d = &tr.state.shaping.dgg;
        m.insert("dgg/gated".into(), f64::from(u8::from(gated)));
        m.insert("dgg/passes".into(), passes as f64);
        m.insert("dgg/z".into(), d.last_z);
        m.insert("dgg/gate_events".into(), d.gate_events as f64);
        m.insert(
            "dgg/lm_head_grad_norm".into(),
            head_norms.iter().sum::<f64>() / head_norms.len().max(1) as f64,
        );
    }
    for key in loss_metrics
        .iter()
        .flat_map(|lm| lm.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let vals: Vec<f64> = loss_metrics
            .iter()
            .filter_map(|lm| lm.get(key).copied())
            .collect();
        m.insert(
            key.clone(),
            vals.iter().sum::<f64>() / vals.len().max(1) as f64,
        );
    }
    m.insert(
        "optim/grad_norm".into(),
        norms.iter().sum::<f64>() / norms.len().max(1) as f64,
    );
    m.insert("optim/updates".into(), updates as f64);
    m.insert(
        "optim/skipped_total".into(),
        tr.state.skipped_updates as f64,
    );
    let update_s = t.elapsed().as_secs_f64();
    m.insert("time/update_s".into(), update_s);
    m.insert(
        "throughput/update_tokens_per_s".into(),
        tokens as f64 / update_s.max(1e-9),
    );
    Ok(m)
}

/// The optional advantage-shaping stages of rlvr-objectives (`[stages]` in the config): reward
/// composition, estimators, shapers. Returns per-sequence advantages times loss weights, and
/// per sample its per-token advantage offsets (SRaR's step offsets mapped to response tokens,
/// times the same loss weight; empty without SRaR).
fn apply_stages(
    tr: &mut Trainer,
    samples: &[Sample],
    rewards: &[f32],
    m: &mut Metrics,
) -> Result<(Vec<f32>, Vec<Vec<f32>>)> {
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
    let input = StageInput {
        passed: &passed,
        extracted_answers: &extracted,
        seq_logp_mean: &seq_logp,
        response_texts: &texts,
        reference_solutions: &solutions,
        task_ids: &tasks,
        step_judgments: judgments.as_deref(),
        ..StageInput::new(rewards, g)
    };
    let out = tr.config.stages.apply(
        &input,
        &tr.config.objective.advantage_config(),
        &mut tr.state.shaping,
    )?;
    for (k, v) in out.metrics.iter() {
        m.insert(format!("stages/{k}"), *v);
    }
    let offsets: Vec<Vec<f32>> = samples
        .iter()
        .zip(&out.step_offsets)
        .zip(&out.weights)
        .map(|((s, spans), w)| {
            if spans.is_empty() {
                return Vec::new();
            }
            token_offsets(spans, s.text.chars().count(), s.response.len())
                .into_iter()
                .map(|o| o * w)
                .collect()
        })
        .collect();
    if tr.config.stages.srar.is_some() {
        let (sum, count) = samples
            .iter()
            .zip(&offsets)
            .fold((0.0, 0usize), |acc, (s, o)| {
                (
                    acc.0 + o.iter().map(|x| f64::from(x.abs())).sum::<f64>(),
                    acc.1 + s.response.len(),
                )
            });
        m.insert(
            "advantage/token_offset_abs_mean".into(),
            sum / count.max(1) as f64,
        );
    }
    Ok((out.weighted_advantages(), offsets))
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
    let lens: Vec<usize> = samples.iter().map(|s| s.response.len()).collect();
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
    *m.entry("reward/overlong_penalized".into()).or_default() += stats.overlong_penalized as f64;
    Ok(())
}

/// What [`gated_update`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Update {
    /// The optimizer stepped.
    Applied {
        /// Global gradient norm before clipping.
        grad_norm: f64,
        /// ‖∇W_lm_head‖_F before clipping, when the DGG gate was asked.
        lm_head_grad_norm: Option<f64>,
    },
    /// The loss or the gradient was not finite: the weights and optimizer state are untouched.
    Skipped {
        /// The loss value.
        loss: f64,
        /// The global gradient norm.
        grad_norm: f64,
    },
    /// DGG gated the update (an lm_head gradient-energy spike on a reuse pass): the gradients
    /// were dropped before the optimizer saw them, and the reuse of the batch ends.
    Gated {
        /// ‖∇W_lm_head‖_F of the gated update.
        lm_head_grad_norm: f64,
    },
}

/// Backward, global-norm clipping and one optimizer step, unless the loss or the gradient norm
/// is not finite, in which case nothing reaches the weights and the skip is counted.
pub fn guarded_update(tr: &mut Trainer, lr: f64, loss: Tensor<1>, max_norm: f64) -> Update {
    gated_update(tr, lr, loss, max_norm, None)
}

/// [`guarded_update`] with DGG's gate (methods-core §7) asked first when `dgg_epoch` is the
/// 0-based pass over the current rollout batch: after backward and before clipping and the
/// optimizer, the lm_head gradient norm goes to [`StagesConfig::gate_update`]; a `false` drops
/// the gradients (Adam's moments stay untouched) and returns [`Update::Gated`].
pub fn gated_update(
    tr: &mut Trainer,
    lr: f64,
    loss: Tensor<1>,
    max_norm: f64,
    dgg_epoch: Option<usize>,
) -> Update {
    let loss_value = f64::from(loss.clone().into_scalar::<f32>());
    let mut grads = GradientsParams::from_grads(loss.backward(), tr.model());
    let grad_norm = global_norm(tr.model(), &grads);
    if !loss_value.is_finite() || !grad_norm.is_finite() {
        tr.state.skipped_updates += 1;
        return Update::Skipped {
            loss: loss_value,
            grad_norm,
        };
    }
    let head = dgg_epoch.map(|epoch| (epoch, lm_head_grad_norm(tr.model(), &grads)));
    if let Some((epoch, norm)) = head
        && !tr
            .config
            .stages
            .gate_update(&mut tr.state.shaping, norm, epoch)
    {
        return Update::Gated {
            lm_head_grad_norm: norm,
        };
    }
    clip_global_norm(tr.model(), &mut grads, grad_norm, max_norm);
    tr.apply_grads(lr, grads);
    Update::Applied {
        grad_norm,
        lm_head_grad_norm: head.map(|h| h.1),
    }
}
