//! Phase 4 of a step, the policy update: `epochs` passes over the kept batch in
//! `mini_batches × stage_batches` slices; per slice the loss and backward (per micro-batch, the
//! gradients summed, when `train.micro_batch_tokens` splits it), global-norm clipping and
//! one optimizer step (skipped when not finite, gated by DGG when it is on), and OWPO's
//! reference ratchet counted in optimizer steps.

use std::collections::BTreeSet;
use std::time::Instant;

use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::Tensor;
use rlvr_models::{ChunkedScores, TokenScores};
use rlvr_objectives::{BatchTotals, LossContext, PolicyBatch};

use super::micro_batch::split_rows;
use super::rollout::{Rollouts, step_seed};
use crate::batch::{PackedBatch, pack_with_sampler};
use crate::error::Result;
use crate::grad_norm::{clip_global_norm, global_norm, lm_head_grad_norm};
use crate::metrics::{Metrics, mean};
use crate::prompt::pad_id;
use crate::schedule::warmup_constant;
use crate::trainer::Trainer;

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

/// Runs the update of step `step` on `batch` (advantages assigned); `zero_group_frac` is the
/// fraction of groups without signal (some objectives read it).
pub fn update(
    tr: &mut Trainer,
    step: usize,
    batch: &Rollouts,
    zero_group_frac: f64,
    m: &mut Metrics,
) -> Result<()> {
    let t = Instant::now();
    let cfg = tr.config.clone();
    let lr = warmup_constant(step, cfg.train.warmup_steps, cfg.train.lr);
    m.insert("optim/lr".into(), lr);
    let samples = &batch.samples;
    let n = samples.len();
    let per_mb = n
        .div_ceil(cfg.train.mini_batches * cfg.train.stage_batches)
        .max(1);
    let entropy_bonus = cfg.objective.common().entropy_coef != 0.0;
    let (mut norms, mut head_norms, mut tokens) = (Vec::new(), Vec::new(), 0usize);
    let (mut updates, mut passes, mut gated, mut refreshes) = (0usize, 0usize, false, 0usize);
    let (mut micro_batches, mut head_chunks) = (0usize, 0usize);
    let mut loss_metrics: Vec<Metrics> = Vec::new();
    // DGG (when on) sets the number of passes and may end the reuse of the batch early.
    let dgg = cfg.stages.dgg.is_some();
    let rows: Vec<usize> = (0..n).collect();
    'epochs: for epoch in 0..cfg.stages.max_epochs(cfg.train.epochs) {
        passes += 1;
        for (mb, chunk) in rows.chunks(per_mb).enumerate() {
            // Gradient accumulation: the micro-batches' gradients are summed into one update;
            // each divides by the whole mini-batch's counts, so the sum is the unsplit loss.
            let packs: Vec<_> = split_rows(samples, chunk, cfg.train.micro_batch_tokens)
                .iter()
                .map(|part| {
                    pack_with_sampler(
                        samples,
                        batch.sampler_logp.as_deref(),
                        part,
                        pad_id(&tr.tokenizer),
                        &tr.device,
                    )
                })
                .collect();
            let mut ctx =
                LossContext::new(step_seed(cfg.seed, step, 1000 + epoch * 100 + mb), step)
                    .with_max_response_len(cfg.rollout.max_new_tokens)
                    .with_zero_adv_group_frac(zero_group_frac);
            let totals = packs
                .iter()
                .map(|p| BatchTotals::of_weighted(&p.mask, p.token_coef.as_ref()));
            if packs.len() > 1
                && let Some(totals) = totals.reduce(BatchTotals::plus)
            {
                ctx = ctx.with_batch_totals(totals);
            }
            micro_batches += packs.len();
            let mut accumulated = GradientsAccumulator::new();
            let (mut loss_value, mut part_metrics) = (0.0f64, Vec::new());
            for packed in packs {
                let part_tokens = packed.lengths.iter().sum::<usize>();
                tokens += part_tokens;
                let ref_logp = tr.reference_logp(&packed.ids, &packed.mask);
                let (scores, chunked) = score(tr, &packed, cfg.train.logprob_chunk);
                head_chunks += chunked.as_ref().map_or(0, |c| c.chunks());
                let policy_batch = PolicyBatch::new(
                    scores.logp,
                    packed.old_logp,
                    ref_logp,
                    batch.sampler_logp.as_ref().map(|_| packed.sampler_logp),
                    packed.advantages,
                    packed.mask,
                    // The entropy carries gradient only when the objective has an entropy bonus.
                    Some(if entropy_bonus {
                        scores.entropy
                    } else {
                        scores.entropy.detach()
                    }),
                )?;
                // DelTA: the self-normalized surrogate over the stages' token coefficients.
                let policy_batch = match packed.token_coef {
                    Some(c) => policy_batch.with_token_coef(c)?,
                    None => policy_batch,
                };
                let out = cfg.objective.loss(&policy_batch, &ctx)?;
                loss_value += f64::from(out.loss.clone().into_scalar::<f32>());
                part_metrics.push((out.metrics, part_tokens));
                let grads = out.loss.backward();
                let grads = match chunked {
                    // The loss's backward stopped at the score leaves; carry it into the model.
                    Some(chunked) => chunked.backward(tr.model(), &grads),
                    None => GradientsParams::from_grads(grads, tr.model()),
                };
                accumulated.accumulate(tr.model(), grads);
            }
            loss_metrics.push(combine_micro_batch_metrics(part_metrics));
            let grads = accumulated.grads();
            match apply_gradients(
                tr,
                lr,
                loss_value,
                grads,
                cfg.train.grad_clip,
                dgg.then_some(epoch),
            ) {
                Update::Applied {
                    grad_norm,
                    lm_head_grad_norm,
                } => {
                    norms.push(grad_norm);
                    head_norms.extend(lm_head_grad_norm);
                    updates += 1;
                    tr.state.optimizer_steps += 1;
                    if cfg.objective.reference_update_due(tr.state.optimizer_steps) {
                        tr.refresh_reference();
                        refreshes += 1;
                    }
                }
                Update::Skipped { loss, grad_norm } => {
                    tracing::warn!(
                        "step {}: skipped an update (loss {loss}, gradient norm {grad_norm}); weights unchanged",
                        step + 1
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
            mean(head_norms.iter().copied()),
        );
    }
    let keys: BTreeSet<&String> = loss_metrics.iter().flat_map(|lm| lm.keys()).collect();
    for key in keys {
        let v = mean(loss_metrics.iter().filter_map(|lm| lm.get(key).copied()));
        m.insert(key.clone(), v);
    }
    m.insert("optim/grad_norm".into(), mean(norms.iter().copied()));
    m.insert("optim/updates".into(), updates as f64);
    m.insert("optim/micro_batches".into(), micro_batches as f64);
    m.insert("optim/logprob_chunks".into(), head_chunks as f64);
    // Read from a parameter, so the metric says what the policy's tensors actually run under.
    let strategy = tr
        .model()
        .model
        .embed_tokens
        .weight
        .val()
        .device()
        .gradient_checkpointing_strategy();
    let checkpointing = strategy == Some(burn::tensor::GradientCheckpointingStrategy::Balanced);
    m.insert(
        "optim/gradient_checkpointing".into(),
        f64::from(u8::from(checkpointing)),
    );
    m.insert(
        "optim/head_split_params".into(),
        tr.head_split_params() as f64,
    );
    m.insert("optim/steps_total".into(), tr.state.optimizer_steps as f64);
    m.insert(
        "optim/skipped_total".into(),
        tr.state.skipped_updates as f64,
    );
    if tr.has_reference() {
        m.insert("reference/refreshes".into(), refreshes as f64);
    }
    let update_s = t.elapsed().as_secs_f64();
    m.insert("time/update_s".into(), update_s);
    m.insert(
        "throughput/update_tokens_per_s".into(),
        tokens as f64 / update_s.max(1e-9),
    );
    Ok(())
}

/// The policy's scores of a packed batch under autodiff: in one pass, or with the LM head over
/// `chunk` columns at a time (`train.logprob_chunk` > 0), whose scores are leaves that
/// [`rlvr_models::ChunkedScores::backward`] connects to the model after the loss's backward.
fn score(tr: &Trainer, packed: &PackedBatch, chunk: usize) -> (TokenScores, Option<ChunkedScores>) {
    let temperature = tr.config.rollout.temperature;
    let (ids, mask) = (packed.ids.clone(), packed.mask.clone());
    if chunk > 0
        && let Some(chunked) = rlvr_models::chunked_token_logprobs(
            tr.model(),
            ids.clone(),
            mask.clone(),
            temperature,
            chunk,
        )
    {
        let scores = TokenScores {
            logp: chunked.logp.clone(),
            entropy: chunked.entropy.clone(),
        };
        return (scores, Some(chunked));
    }
    // Nothing scored, or chunking off.
    (
        rlvr_models::token_logprobs_at(tr.model(), ids, mask, temperature),
        None,
    )
}

/// The metrics of one mini-batch from those of its micro-batches (each with its number of
/// response tokens): the loss terms (`objective/*loss`) are partial sums of the mini-batch's
/// loss and add up; `*_min` / `*_max` take the extreme; every other metric is a mean over
/// tokens and is averaged weighted by the tokens, which gives the unsplit value.
fn combine_micro_batch_metrics(parts: Vec<(Metrics, usize)>) -> Metrics {
    if parts.len() == 1 {
        return parts.into_iter().next().map(|(m, _)| m).unwrap_or_default();
    }
    let keys: BTreeSet<String> = parts.iter().flat_map(|(p, _)| p.keys().cloned()).collect();
    keys.into_iter()
        .map(|key| {
            let values = parts
                .iter()
                .filter_map(|(p, n)| p.get(&key).map(|v| (*v, *n as f64)));
            let v = if key.ends_with("loss") {
                values.map(|(v, _)| v).sum()
            } else if key.ends_with("_min") {
                values.map(|(v, _)| v).fold(f64::INFINITY, f64::min)
            } else if key.ends_with("_max") {
                values.map(|(v, _)| v).fold(f64::NEG_INFINITY, f64::max)
            } else {
                let (sum, weight) = values.fold((0.0, 0.0), |(s, w), (v, n)| (s + v * n, w + n));
                sum / weight.max(1.0)
            };
            (key, v)
        })
        .collect()
}

/// Backward, global-norm clipping and one optimizer step, unless the loss or the gradient norm
/// is not finite, in which case nothing reaches the weights and the skip is counted.
pub fn guarded_update(tr: &mut Trainer, lr: f64, loss: Tensor<1>, max_norm: f64) -> Update {
    gated_update(tr, lr, loss, max_norm, None)
}

/// [`guarded_update`] with DGG's gate (methods-core §7) asked first when `dgg_epoch` is the
/// 0-based pass over the current rollout batch: after backward and before clipping and the
/// optimizer, the lm_head gradient norm goes to `StagesConfig::gate_update`; a `false` drops
/// the gradients (Adam's moments stay untouched) and returns [`Update::Gated`].
pub fn gated_update(
    tr: &mut Trainer,
    lr: f64,
    loss: Tensor<1>,
    max_norm: f64,
    dgg_epoch: Option<usize>,
) -> Update {
    let loss_value = f64::from(loss.clone().into_scalar::<f32>());
    let grads = GradientsParams::from_grads(loss.backward(), tr.model());
    apply_gradients(tr, lr, loss_value, grads, max_norm, dgg_epoch)
}

/// The part of [`gated_update`] after backward, on gradients already computed (summed over
/// micro-batches, with `loss_value` their summed loss): the finiteness guard, DGG's gate,
/// clipping and the optimizer step.
pub fn apply_gradients(
    tr: &mut Trainer,
    lr: f64,
    loss_value: f64,
    mut grads: GradientsParams,
    max_norm: f64,
    dgg_epoch: Option<usize>,
) -> Update {
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
