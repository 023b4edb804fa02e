//! Gradient accumulation is exact: a mini-batch's loss and its gradient equal the sums over
//! the micro-batches it is split into, when each micro-batch divides by the mini-batch's counts
//! (`LossContext::with_batch_totals`), for every aggregation mode and every objective whose
//! loss mask is the response mask.

mod common;

use burn::tensor::{Device, Tensor};
use common::{fixture, floats, grad_of};
use rlvr_objectives::{
    BatchTotals, LossContext, ObjectiveConfig, PolicyBatch, broadcast_advantages, tensor_from_rows,
};

const MODES: [&str; 4] = [
    "token_mean",
    "seq_mean_token_mean",
    "seq_mean_token_sum",
    "seq_mean_token_sum_norm",
];

/// Objectives whose loss sums per-sequence terms (with KL and entropy terms on, and TIS
/// truncation, which reweights tokens without removing any).
const OBJECTIVES: [&str; 7] = ["grpo", "dapo", "dr_grpo", "gspo", "rloo", "nfpo", "owpo"];

/// Rows `rows` of every input as one batch over the shared `logp` leaf (so gradients from
/// several micro-batches land on one tensor).
fn rows_batch(inputs: &Inputs, logp: &Tensor<2>, rows: std::ops::Range<usize>) -> PolicyBatch {
    let t = inputs.t;
    let take = |x: &Tensor<2>| x.clone().slice([rows.clone(), 0..t]);
    PolicyBatch::new(
        take(logp),
        take(&inputs.old),
        Some(take(&inputs.reference)),
        Some(take(&inputs.sampler)),
        take(&inputs.adv),
        take(&inputs.mask),
        Some(take(&inputs.entropy)),
    )
    .unwrap()
}

struct Inputs {
    t: usize,
    b: usize,
    logp: Vec<f32>,
    old: Tensor<2>,
    reference: Tensor<2>,
    sampler: Tensor<2>,
    adv: Tensor<2>,
    mask: Tensor<2>,
    entropy: Tensor<2>,
}

fn inputs(device: &Device) -> Inputs {
    let fx = fixture();
    let (b, t) = (
        fx["B"].as_u64().unwrap() as usize,
        fx["T"].as_u64().unwrap() as usize,
    );
    let get = |name: &str| tensor_from_rows(&floats(&fx["inputs"][name]), [b, t], device);
    // Row 3 fully masked: it must count as no sequence in either form.
    let mut mask = floats(&fx["inputs"]["mask"]);
    mask[3 * t..4 * t].fill(0.0);
    let adv: Vec<f32> = (0..b).map(|i| [1.0, -0.5, 0.8, -1.2][i % 4]).collect();
    Inputs {
        t,
        b,
        logp: floats(&fx["inputs"]["logp"]),
        old: get("old_logp"),
        reference: get("ref_logp"),
        sampler: get("sampler_logp"),
        adv: broadcast_advantages(&adv, t, device),
        mask: tensor_from_rows(&mask, [b, t], device),
        entropy: get("entropy"),
    }
}

fn config(kind: &str, mode: &str) -> ObjectiveConfig {
    let kl = if kind == "owpo" {
        ""
    } else {
        "kl_coef = 0.05\n"
    };
    toml::from_str(&format!(
        "kind = \"{kind}\"\naggregation = \"{mode}\"\n{kl}entropy_coef = 0.01\ntis = \"truncate\"\n"
    ))
    .unwrap_or_else(|e| panic!("{kind}/{mode}: {e}"))
}

#[test]
fn micro_batch_losses_and_gradients_sum_to_the_mini_batch() {
    let device = Device::flex().autodiff();
    let x = inputs(&device);
    let splits = [0..2, 2..3, 3..4, 4..x.b]; // uneven, one all-masked micro-batch
    for kind in OBJECTIVES {
        for mode in MODES {
            let cfg = config(kind, mode);
            let ctx = LossContext::new(7, 0).with_max_response_len(x.t);

            let leaf = tensor_from_rows(&x.logp, [x.b, x.t], &device).require_grad();
            let whole = cfg.loss(&rows_batch(&x, &leaf, 0..x.b), &ctx).unwrap();
            let whole_loss = whole.loss.clone().into_scalar::<f32>();
            let whole_grad = grad_of(&whole.loss, &leaf);

            let leaf = tensor_from_rows(&x.logp, [x.b, x.t], &device).require_grad();
            let totals = splits
                .iter()
                .map(|r| BatchTotals::of(&x.mask.clone().slice([r.clone(), 0..x.t])))
                .reduce(BatchTotals::plus)
                .unwrap();
            assert_eq!(totals, BatchTotals::of(&x.mask), "{kind}/{mode}");
            let mut sum: Option<Tensor<1>> = None;
            for rows in &splits {
                let part = cfg
                    .loss(
                        &rows_batch(&x, &leaf, rows.clone()),
                        &ctx.with_batch_totals(totals),
                    )
                    .unwrap()
                    .loss;
                sum = Some(match sum {
                    None => part,
                    Some(s) => s + part,
                });
            }
            let sum = sum.unwrap();
            let sum_loss = sum.clone().into_scalar::<f32>();
            let sum_grad = grad_of(&sum, &leaf);
            assert!(
                (whole_loss - sum_loss).abs() <= 1e-6 * whole_loss.abs().max(1.0),
                "{kind}/{mode}: loss {whole_loss} vs micro-batch sum {sum_loss}"
            );
            for (i, (a, b)) in whole_grad.iter().zip(&sum_grad).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-6,
                    "{kind}/{mode}: gradient [{i}] {a} vs micro-batch sum {b}"
                );
            }
            assert!(
                whole_grad.iter().any(|g| g.abs() > 1e-4),
                "{kind}/{mode}: the gradient is zero, the comparison would be vacuous"
            );
        }
    }
}

/// Without the totals, each micro-batch would normalize by its own counts: the sum is then a
/// different loss (this is what the totals are for).
#[test]
fn local_denominators_would_not_sum_to_the_mini_batch() {
    let device = Device::flex().autodiff();
    let x = inputs(&device);
    let cfg = config("dapo", "token_mean");
    let ctx = LossContext::new(7, 0);
    let leaf = tensor_from_rows(&x.logp, [x.b, x.t], &device).require_grad();
    let whole = cfg
        .loss(&rows_batch(&x, &leaf, 0..x.b), &ctx)
        .unwrap()
        .loss
        .into_scalar::<f32>();
    let local: f32 = [0..2, 2..x.b]
        .into_iter()
        .map(|r| {
            cfg.loss(&rows_batch(&x, &leaf, r), &ctx)
                .unwrap()
                .loss
                .into_scalar::<f32>()
        })
        .sum();
    assert!((whole - local).abs() > 1e-3, "{whole} vs {local}");
}

/// DelTA's per-token coefficients (`PolicyBatch::with_token_coef`, a self-normalized surrogate
/// dividing by Σ c m) keep gradient accumulation exact when the micro-batches carry the
/// mini-batch's Σ c m (`BatchTotals::of_weighted`), for the two modes DelTA accepts, with the KL
/// and entropy terms (plain counts) on; and the coefficients change the loss.
#[test]
fn micro_batches_stay_exact_with_token_coefficients() {
    let device = Device::flex().autodiff();
    let x = inputs(&device);
    let values: Vec<f32> = (0..x.b * x.t)
        .map(|i| 0.1 + (i * 7 % 29) as f32 / 10.0)
        .collect();
    let coef = tensor_from_rows(&values, [x.b, x.t], &device);
    let splits = [0..2, 2..3, 3..4, 4..x.b];
    let weighted = |leaf: &Tensor<2>, rows: std::ops::Range<usize>| {
        let c = coef.clone().slice([rows.clone(), 0..x.t]);
        rows_batch(&x, leaf, rows).with_token_coef(c).unwrap()
    };
    for kind in OBJECTIVES {
        for mode in ["token_mean", "seq_mean_token_mean"] {
            let cfg = config(kind, mode);
            let ctx = LossContext::new(7, 0).with_max_response_len(x.t);
            let leaf = tensor_from_rows(&x.logp, [x.b, x.t], &device).require_grad();
            let whole = cfg.loss(&weighted(&leaf, 0..x.b), &ctx).unwrap();
            let whole_loss = whole.loss.clone().into_scalar::<f32>();
            let whole_grad = grad_of(&whole.loss, &leaf);
            let plain = cfg
                .loss(&rows_batch(&x, &leaf, 0..x.b), &ctx)
                .unwrap()
                .loss
                .into_scalar::<f32>();
            assert!(
                (plain - whole_loss).abs() > 1e-4,
                "{kind}/{mode}: coefficients inert"
            );

            let leaf = tensor_from_rows(&x.logp, [x.b, x.t], &device).require_grad();
            let totals = splits
                .iter()
                .map(|r| {
                    let mask = x.mask.clone().slice([r.clone(), 0..x.t]);
                    let c = coef.clone().slice([r.clone(), 0..x.t]);
                    BatchTotals::of_weighted(&mask, Some(&c))
                })
                .reduce(BatchTotals::plus)
                .unwrap();
            let sum = splits
                .iter()
                .map(|r| {
                    cfg.loss(&weighted(&leaf, r.clone()), &ctx.with_batch_totals(totals))
                        .unwrap()
                        .loss
                })
                .reduce(|a, b| a + b)
                .unwrap();
            let sum_loss = sum.clone().into_scalar::<f32>();
            let sum_grad = grad_of(&sum, &leaf);
            assert!(
                (whole_loss - sum_loss).abs() <= 1e-6 * whole_loss.abs().max(1.0),
                "{kind}/{mode}: loss {whole_loss} vs micro-batch sum {sum_loss}"
            );
            for (i, (a, b)) in whole_grad.iter().zip(&sum_grad).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-6,
                    "{kind}/{mode}: gradient [{i}] {a} vs micro-batch sum {b}"
                );
            }
        }
    }
}
