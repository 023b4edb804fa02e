//! `rlvr diagnose`: the unlearnability diagnostic (Chen, He, Zhao, "The Unlearnability
//! Phenomenon in RLVR for Language Models", arXiv 2605.16787; code
//! yulinchen99/unlearnability-rlvr; specification `methods-extra.md` §23).
//!
//! Per prompt: sample G responses, verify, GRPO-normalize the rewards Â = (r − mean)/(std +
//! 1e-6) (population std; a prompt whose rewards are all equal has no gradient and is listed as
//! skipped), keep the correct rollouts (at most 20, as the code's `--pos_only`), and take the
//! gradient of L = mean_i(−Â_i · mean_t log π(y_i,t)). The per-prompt vector is that gradient
//! flattened over the attention projections of every layer (the code uses attention LoRA
//! adapters; the full attention weights here are a **\[PROPOSED]** stand-in). The report gives
//! each prompt's mean cosine similarity to the other prompts and to the mean gradient, and
//! flags the prompts at or below the `quantile` of mean similarity (spec: the 10th percentile)
//! as likely unlearnable: gradient outliers that share little with the rest. The group size and
//! temperature are the config's `rollout.group_size` and `rollout.temperature` (the paper draws
//! about 1,000 rollouts per prompt at T = 0.7; raise them to match on a real model).

use std::fmt::Write as _;
use std::path::Path;

use burn::module::Module;
use burn::optim::GradientsParams;
use serde::Serialize;

use super::params::flat_grads;
use crate::batch::{Sample, pack};
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::model::bundled::load_dir;
use crate::prompt::pad_id;
use crate::step::rollout::{generation_config, sample_groups, step_seed};
use crate::trainer::Trainer;
use crate::verify::score;

/// Correct rollouts kept per prompt (the code's cap).
pub const MAX_ROLLOUTS: usize = 20;
/// The std guard of the GRPO normalization (spec).
const ADV_EPS: f32 = 1e-6;

/// One analysed prompt.
#[derive(Debug, Clone, Serialize)]
pub struct PromptResult {
    /// The example's id.
    pub id: String,
    /// Share of correct responses in its group.
    pub pass_rate: f64,
    /// Rollouts its gradient was taken over.
    pub rollouts: usize,
    /// Mean cosine similarity of its gradient to the other prompts' gradients.
    pub mean_similarity: f64,
    /// Cosine similarity of its gradient to the mean gradient of all analysed prompts.
    pub similarity_to_mean: f64,
    /// At or below the flagging quantile of mean similarity.
    pub likely_unlearnable: bool,
}

/// The whole report (`diagnose.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Analysed prompts, in dataset order.
    pub prompts: Vec<PromptResult>,
    /// Prompts without a gradient (all rewards equal), with their pass rate.
    pub skipped: Vec<(String, f64)>,
    /// Pairwise cosine similarities, in the order of `prompts`.
    pub similarity: Vec<Vec<f64>>,
    /// The mean-similarity value at the flagging quantile.
    pub threshold: f64,
}

/// GRPO advantages of one group (population std, +1e-6); `None` when all rewards are equal.
pub fn group_advantages(rewards: &[f32]) -> Option<Vec<f32>> {
    let n = rewards.len() as f32;
    let mean = rewards.iter().sum::<f32>() / n;
    let std = (rewards.iter().map(|r| (r - mean).powi(2)).sum::<f32>() / n).sqrt();
    (std > 0.0).then(|| {
        rewards
            .iter()
            .map(|r| (r - mean) / (std + ADV_EPS))
            .collect()
    })
}

/// The flattened attention gradient of the loss −Â·mean_t log π over `rows` of `samples` with
/// advantages `adv` (one per row).
pub fn prompt_gradient(tr: &Trainer, samples: &[Sample], rows: &[usize], adv: &[f32]) -> Vec<f32> {
    let mut kept: Vec<Sample> = rows.iter().map(|&i| samples[i].clone()).collect();
    for (s, &a) in kept.iter_mut().zip(adv) {
        s.advantage = a;
    }
    let idx: Vec<usize> = (0..kept.len()).collect();
    let packed = pack(&kept, &idx, pad_id(&tr.tokenizer), &tr.device);
    let scores = rlvr_models::token_logprobs(tr.model(), packed.ids, packed.mask.clone());
    // mean_t per row, then −Â · that, averaged over rows.
    let per_row = (scores.logp * packed.advantages)
        .sum_dim(1)
        .squeeze_dim::<1>(1)
        / packed.mask.sum_dim(1).squeeze_dim::<1>(1).clamp_min(1.0);
    let loss = per_row.mean().neg();
    let grads = GradientsParams::from_grads(loss.backward(), tr.model());
    flat_grads(tr.model(), &grads, |p| p.contains("self_attn"))
}

/// Cosine similarity (0 when either vector is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        ab / (aa.sqrt() * bb.sqrt())
    }
}

/// Pairwise similarities, each vector's mean similarity to the others, and its similarity to
/// the mean vector.
pub fn similarities(grads: &[Vec<f32>]) -> (Vec<Vec<f64>>, Vec<f64>, Vec<f64>) {
    let n = grads.len();
    let sim: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| cosine(&grads[i], &grads[j])).collect())
        .collect();
    let mean_sim = (0..n)
        .map(|i| {
            if n < 2 {
                return f64::NAN;
            }
            (0..n).filter(|&j| j != i).map(|j| sim[i][j]).sum::<f64>() / (n - 1) as f64
        })
        .collect();
    let d = grads.first().map_or(0, Vec::len);
    let mut mean = vec![0.0f32; d];
    for g in grads {
        for (m, x) in mean.iter_mut().zip(g) {
            *m += x / n as f32;
        }
    }
    let to_mean = grads.iter().map(|g| cosine(g, &mean)).collect();
    (sim, mean_sim, to_mean)
}

/// The `q`-quantile of `v` by the lower nearest rank (NaN for an empty input).
pub fn lower_quantile(v: &[f64], q: f64) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    s[((q * (s.len() - 1) as f64).floor() as usize).min(s.len() - 1)]
}

/// Runs the diagnostic of `model` on the first `limit` prompts of `data` (0 = all) and writes
/// `diagnose.md` and `diagnose.json` into `out`.
pub fn diagnose(
    config: &RunConfig,
    model: &Path,
    data: &Path,
    limit: usize,
    quantile: f64,
    out: &Path,
) -> Result<Report> {
    if !(0.0..=1.0).contains(&quantile) {
        return Err(Error::Config(format!(
            "--quantile {quantile}: must be in [0, 1]"
        )));
    }
    let device = crate::model::device::default_device();
    let examples = crate::run::load::load_split(config, data, &config.data.eval_split, limit)?;
    let base = load_dir(model, &device)?;
    let tr = Trainer::new(
        config.clone(),
        device,
        base.model,
        base.config,
        base.tokenizer,
        examples,
        Vec::new(),
    )?;
    let g = config.rollout.group_size;
    let policy = tr.model().valid();
    let gen_cfg = generation_config(&config.rollout, &tr.tokenizer, false);
    let (mut results, mut grads, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..tr.train_set.len() {
        let prompt_ids = tr.encode_prompts(&[i])?;
        let seed = step_seed(config.seed, i, 0xd1a);
        let mut samples = sample_groups(
            &policy,
            &tr.tokenizer,
            &tr.train_set,
            &[i],
            &prompt_ids,
            g,
            &gen_cfg,
            seed,
        )?;
        let rewards = score(
            &tr.verifier,
            &tr.config.verifier,
            &tr.train_set,
            &mut samples,
            &mut Metrics::new(),
        );
        let pass_rate = samples.iter().filter(|s| s.passed).count() as f64 / g as f64;
        let id = tr.train_set[i].id.clone();
        let Some(adv) = group_advantages(&rewards) else {
            skipped.push((id, pass_rate));
            continue;
        };
        let rows: Vec<usize> = (0..g)
            .filter(|&k| samples[k].passed)
            .take(MAX_ROLLOUTS)
            .collect();
        if rows.is_empty() {
            skipped.push((id, pass_rate));
            continue;
        }
        let a: Vec<f32> = rows.iter().map(|&k| adv[k]).collect();
        grads.push(prompt_gradient(&tr, &samples, &rows, &a));
        results.push(PromptResult {
            id,
            pass_rate,
            rollouts: rows.len(),
            mean_similarity: f64::NAN,
            similarity_to_mean: f64::NAN,
            likely_unlearnable: false,
        });
    }
    let (similarity, mean_sim, to_mean) = similarities(&grads);
    let threshold = lower_quantile(&mean_sim, quantile);
    for ((r, s), t) in results.iter_mut().zip(&mean_sim).zip(&to_mean) {
        r.mean_similarity = *s;
        r.similarity_to_mean = *t;
        r.likely_unlearnable = s.is_finite() && *s <= threshold;
    }
    let report = Report {
        prompts: results,
        skipped,
        similarity,
        threshold,
    };
    write_report(&report, model, data, out)?;
    Ok(report)
}

fn write_report(report: &Report, model: &Path, data: &Path, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let mut md = format!(
        "# Unlearnability diagnostic\n\nModel `{}`, data `{}`: {} prompts analysed, {} skipped \
         (all rewards equal: no gradient). Per-prompt gradient: attention weights, correct \
         rollouts only. Flagged: mean similarity ≤ {:.4}.\n\n\
         | prompt | pass rate | rollouts | mean cos to others | cos to mean gradient | likely unlearnable |\n\
         |---|---|---|---|---|---|\n",
        model.display(),
        data.display(),
        report.prompts.len(),
        report.skipped.len(),
        report.threshold
    );
    let mut order: Vec<&PromptResult> = report.prompts.iter().collect();
    order.sort_by(|a, b| a.mean_similarity.total_cmp(&b.mean_similarity));
    for r in order {
        let _ = writeln!(
            md,
            "| {} | {:.2} | {} | {:.4} | {:.4} | {} |",
            r.id,
            r.pass_rate,
            r.rollouts,
            r.mean_similarity,
            r.similarity_to_mean,
            if r.likely_unlearnable { "yes" } else { "" }
        );
    }
    if !report.skipped.is_empty() {
        md += "\nSkipped (pass rate): ";
        md += &report
            .skipped
            .iter()
            .map(|(id, p)| format!("{id} ({p:.2})"))
            .collect::<Vec<_>>()
            .join(", ");
        md += "\n";
    }
    let p = out.join("diagnose.md");
    std::fs::write(&p, md).map_err(|e| Error::io(&p, e))?;
    let p = out.join("diagnose.json");
    std::fs::write(
        &p,
        serde_json::to_string_pretty(report).expect("serializes"),
    )
    .map_err(|e| Error::io(&p, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand derivation: (1, 0) and (1, 1) → 1/√2; (1, 0) and (−1, 0) → −1; zero → 0.
    #[test]
    fn cosine_by_hand() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 1.0]) - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(cosine(&[1.0, 0.0], &[-1.0, 0.0]), -1.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }

    /// Three vectors: a = (1, 0), b = (1, 0.1), c = (−1, 1). c is the outlier: its mean
    /// similarity (cos(c,a) + cos(c,b))/2 = (−0.7071 − 0.6332)/2 is the lowest, and with q = 0.1
    /// (lower nearest rank on 3 values: the minimum) it alone is flagged.
    #[test]
    fn the_outlier_has_the_lowest_mean_similarity() {
        let g = vec![vec![1.0, 0.0], vec![1.0, 0.1], vec![-1.0, 1.0]];
        let (sim, mean_sim, _) = similarities(&g);
        assert!((sim[0][2] + 0.5f64.sqrt()).abs() < 1e-6);
        assert!(
            (mean_sim[2] - (-(0.5f64.sqrt()) - 0.9 / (2.0f64.sqrt() * 1.01f64.sqrt())) / 2.0).abs()
                < 1e-6
        );
        let t = lower_quantile(&mean_sim, 0.1);
        let flagged: Vec<usize> = (0..3).filter(|&i| mean_sim[i] <= t).collect();
        assert_eq!(flagged, vec![2]);
    }

    #[test]
    fn advantages_of_a_collapsed_group_are_none() {
        assert!(group_advantages(&[1.0, 1.0, 1.0]).is_none());
        let a = group_advantages(&[1.0, 0.0]).unwrap();
        assert!((a[0] - 1.0).abs() < 1e-5 && (a[1] + 1.0).abs() < 1e-5);
    }
}
