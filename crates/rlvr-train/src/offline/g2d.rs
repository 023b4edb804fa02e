//! G2D's trainer side (methods-extra §12): `rlvr g2d-collect` samples GRPO-style groups from a
//! policy on the training prompts and writes a static preference set, and `rlvr dpo` trains a
//! policy on it offline against the frozen starting policy.
//!
//! A preference line (JSONL) holds the prompt and both responses as text and as token ids (the
//! ids are what DPO scores, so no re-tokenization can shift them), plus the sampler's mean
//! log-probs: `{"id", "prompt", "prompt_ids", "chosen", "chosen_ids", "chosen_logp_mean",
//! "rejected", "rejected_ids", "rejected_logp_mean"}`.

use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::tensor::Tensor;
use rlvr_models::{CausalLm, FinishReason, save_pretrained, token_logprobs};
use rlvr_objectives::{Candidate, dpo_loss, select_pairs, sequence_logp};
use serde::{Deserialize, Serialize};

use crate::batch::{Sample, pack};
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::metrics::{Metrics, MetricsLog};
use crate::model::bundled::{base_policy, load_dir};
use crate::prompt::pad_id;
use crate::run::greedy_accuracy;
use crate::step::rollout::{generation_config, sample_groups, step_seed};
use crate::step::update::{Update, guarded_update};
use crate::trainer::Trainer;
use crate::verify::score;

/// One (chosen, rejected) pair of the preference set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreferencePair {
    /// The example's id.
    pub id: String,
    /// The rendered prompt.
    pub prompt: String,
    /// Its token ids.
    pub prompt_ids: Vec<u32>,
    /// The correct response.
    pub chosen: String,
    /// Its token ids (with the stop token when it stopped).
    pub chosen_ids: Vec<u32>,
    /// Its mean sampler log-prob per token.
    pub chosen_logp_mean: f32,
    /// The incorrect response.
    pub rejected: String,
    /// Its token ids.
    pub rejected_ids: Vec<u32>,
    /// Its mean sampler log-prob per token.
    pub rejected_logp_mean: f32,
}

/// What a collection found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CollectStats {
    /// Prompts sampled.
    pub prompts: usize,
    /// Prompts whose group was mixed (some correct, some not).
    pub mixed_prompts: usize,
    /// Pairs written.
    pub pairs: usize,
}

/// Builds the trainer around `model` (a HF directory) or the run's base policy.
fn trainer(config: &RunConfig, model: Option<&Path>) -> Result<Trainer> {
    let device = crate::model::device::default_device();
    let (train_set, eval_set) = crate::run::load::load_data(config)?;
    let base = match model {
        Some(dir) => load_dir(dir, &device)?,
        None => base_policy(config, &train_set, &eval_set, &device)?,
    };
    Trainer::new(
        config.clone(),
        device,
        base.model,
        base.config,
        base.tokenizer,
        train_set,
        eval_set,
    )
}

/// Samples `rollout.group_size` responses per training prompt (the first `limit`, 0 = all) from
/// `model` (or the run's base policy), verifies them, selects pairs with `[g2d]`'s rule and
/// writes them to `out` (JSONL).
pub fn collect(
    config: &RunConfig,
    model: Option<&Path>,
    out: &Path,
    limit: usize,
) -> Result<CollectStats> {
    let tr = trainer(config, model)?;
    let g = config.rollout.group_size;
    let n = if limit == 0 {
        tr.train_set.len()
    } else {
        limit.min(tr.train_set.len())
    };
    let policy = tr.model().valid();
    let gen_cfg = generation_config(&config.rollout, &tr.tokenizer, false);
    let mut stats = CollectStats::default();
    let mut lines = String::new();
    let examples: Vec<usize> = (0..n).collect();
    for (b, chunk) in examples.chunks(config.rollout.prompts_per_step).enumerate() {
        let prompt_ids = tr.encode_prompts(chunk)?;
        let mut samples = sample_groups(
            &policy,
            &tr.tokenizer,
            &tr.train_set,
            chunk,
            &prompt_ids,
            g,
            &gen_cfg,
            step_seed(config.seed, b, 0x62d),
        )?;
        let mut m = Metrics::new();
        score(
            &tr.verifier,
            &tr.config.verifier,
            &tr.train_set,
            &mut samples,
            &mut m,
        );
        for (k, group) in samples.chunks(g).enumerate() {
            stats.prompts += 1;
            let cands: Vec<Candidate> = group
                .iter()
                .map(|s| Candidate {
                    passed: s.passed,
                    logp_mean: s.old_logp.iter().sum::<f32>() / s.old_logp.len().max(1) as f32,
                    len: s.response.len(),
                })
                .collect();
            if cands.iter().any(|c| c.passed) && cands.iter().any(|c| !c.passed) {
                stats.mixed_prompts += 1;
            }
            let seed = step_seed(config.seed, b, k + 1);
            for (c, r) in select_pairs(&cands, &config.g2d.pairs(), seed)? {
                let ex = &tr.train_set[group[c].example];
                let pair = PreferencePair {
                    id: ex.id.clone(),
                    prompt: tr.tokenizer.decode(&group[c].prompt)?,
                    prompt_ids: group[c].prompt.clone(),
                    chosen: group[c].text.clone(),
                    chosen_ids: group[c].response.clone(),
                    chosen_logp_mean: cands[c].logp_mean,
                    rejected: group[r].text.clone(),
                    rejected_ids: group[r].response.clone(),
                    rejected_logp_mean: cands[r].logp_mean,
                };
                lines += &(serde_json::to_string(&pair).expect("a pair serializes") + "\n");
                stats.pairs += 1;
            }
        }
    }
    drop(policy);
    crate::checkpoint::write_atomic(out, lines.as_bytes())?;
    Ok(stats)
}

/// Reads a preference set written by [`collect`].
pub fn read_pairs(path: &Path) -> Result<Vec<PreferencePair>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let p: PreferencePair = serde_json::from_str(l).map_err(|e| Error::BadLine {
                path: path.to_path_buf(),
                line: i + 1,
                message: e.to_string(),
            })?;
            if p.chosen_ids.is_empty() || p.rejected_ids.is_empty() {
                return Err(Error::BadLine {
                    path: path.to_path_buf(),
                    line: i + 1,
                    message: "chosen_ids and rejected_ids must be non-empty".into(),
                });
            }
            Ok(p)
        })
        .collect()
}

/// How a DPO run ended.
#[derive(Debug, Clone, Serialize)]
pub struct DpoOutcome {
    /// Where the trained policy was written (a HF directory).
    pub model_dir: PathBuf,
    /// Held-out greedy accuracy before DPO.
    pub base_accuracy: f64,
    /// Held-out greedy accuracy after DPO.
    pub final_accuracy: f64,
    /// Optimizer updates applied.
    pub updates: usize,
    /// Mean DPO loss of the first and of the last update.
    pub first_loss: f64,
    /// See `first_loss`.
    pub last_loss: f64,
}

/// A pair's two responses as samples (row 2i = chosen, 2i + 1 = rejected).
fn pair_samples(pairs: &[&PreferencePair]) -> Vec<Sample> {
    let one = |prompt: &[u32], ids: &[u32]| {
        let old_logp = vec![0.0; ids.len()];
        Sample::unscored(
            0,
            prompt.to_vec(),
            ids.to_vec(),
            old_logp,
            FinishReason::Stop,
        )
    };
    pairs
        .iter()
        .flat_map(|p| {
            [
                one(&p.prompt_ids, &p.chosen_ids),
                one(&p.prompt_ids, &p.rejected_ids),
            ]
        })
        .collect()
}

/// Sequence log-probs of chosen (even rows) and rejected (odd rows) under `model`.
fn pair_logp(tr: &Trainer, model: &CausalLm, samples: &[Sample]) -> (Tensor<1>, Tensor<1>) {
    let rows: Vec<usize> = (0..samples.len()).collect();
    let packed = pack(samples, &rows, pad_id(&tr.tokenizer), &tr.device);
    let scores = token_logprobs(model, packed.ids, packed.mask.clone());
    let seq = sequence_logp(scores.logp, packed.mask);
    let n = samples.len();
    let even: Vec<i64> = (0..n as i64).step_by(2).collect();
    let odd: Vec<i64> = (1..n as i64).step_by(2).collect();
    let idx = |v: Vec<i64>| Tensor::<1, burn::tensor::Int>::from_data(v.as_slice(), &tr.device);
    (seq.clone().select(0, idx(even)), seq.select(0, idx(odd)))
}

/// Offline DPO on `pairs` from `model` (or the run's base policy), the reference being that
/// starting policy, frozen; writes `out/model` (HF directory), `out/metrics.jsonl` (one line
/// per update) and `out/dpo.json`.
pub fn dpo(
    config: &RunConfig,
    pairs_path: &Path,
    model: Option<&Path>,
    out: &Path,
) -> Result<DpoOutcome> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let pairs = read_pairs(pairs_path)?;
    if pairs.is_empty() {
        return Err(Error::Config(format!(
            "{}: no preference pairs to train on",
            pairs_path.display()
        )));
    }
    let mut tr = trainer(config, model)?;
    let base_accuracy = greedy_accuracy(&tr, &out.join("eval-base.jsonl"))?;
    // π_ref = the starting policy: its sequence log-probs, computed once.
    let reference = tr.model().valid();
    let batch = config.g2d.batch_size;
    let refs: Vec<(Vec<f32>, Vec<f32>)> = pairs
        .chunks(batch)
        .map(|chunk| {
            let samples = pair_samples(&chunk.iter().collect::<Vec<_>>());
            let (c, r) = pair_logp(&tr, &reference, &samples);
            let v = |t: Tensor<1>| {
                t.into_data()
                    .convert::<f32>()
                    .try_to_vec::<f32>()
                    .expect("f32")
            };
            (v(c), v(r))
        })
        .collect();
    drop(reference);
    let mut log = MetricsLog::open(&out.join("metrics.jsonl"), None)?;
    let (mut updates, mut losses) = (0usize, Vec::new());
    let order_len = pairs.len().div_ceil(batch);
    for epoch in 0..config.g2d.epochs {
        // Batches in a seeded order per epoch (the reference log-probs are per batch).
        let mut order: Vec<usize> = (0..order_len).collect();
        let mut rng = rlvr_objectives::rng::SplitMix64::new(step_seed(config.seed, epoch, 0xd90));
        for i in (1..order.len()).rev() {
            order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        for b in order {
            let chunk: Vec<&PreferencePair> = pairs[b * batch..((b + 1) * batch).min(pairs.len())]
                .iter()
                .collect();
            let samples = pair_samples(&chunk);
            let (pc, pr) = pair_logp(&tr, tr.model(), &samples);
            let lo = dpo_loss(pc, pr, &refs[b].0, &refs[b].1, &config.g2d.dpo())?;
            let loss_value = f64::from(lo.loss.clone().into_scalar::<f32>());
            let mut m = lo.metrics;
            m.insert("dpo/loss".into(), loss_value);
            if let Update::Applied { grad_norm, .. } =
                guarded_update(&mut tr, config.g2d.lr, lo.loss, config.train.grad_clip)
            {
                updates += 1;
                losses.push(loss_value);
                m.insert("optim/grad_norm".into(), grad_norm);
            }
            tr.state.step += 1;
            log.log(tr.state.step, &m)?;
        }
    }
    let final_accuracy = greedy_accuracy(&tr, &out.join("eval-final.jsonl"))?;
    let model_dir = out.join("model");
    save_pretrained(tr.model(), &tr.model_config, &model_dir)?;
    tr.tokenizer.save_to_dir(&model_dir)?;
    let outcome = DpoOutcome {
        model_dir,
        base_accuracy,
        final_accuracy,
        updates,
        first_loss: losses.first().copied().unwrap_or(f64::NAN),
        last_loss: losses.last().copied().unwrap_or(f64::NAN),
    };
    let p = out.join("dpo.json");
    std::fs::write(
        &p,
        serde_json::to_string_pretty(&outcome).expect("serializes"),
    )
    .map_err(|e| Error::io(&p, e))?;
    Ok(outcome)
}
