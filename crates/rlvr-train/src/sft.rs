//! Supervised fine-tuning: teacher-forced next-token loss on the target tokens of each example.
//!
//! The target of an example is its `completion` field, else its `answer`, followed by the end
//! of sequence token; the loss is the mean negative log-likelihood over target tokens only.
//! With `sft.mask_observations`, a multi-turn completion is replayed through the `[env]`
//! environment (`env/transcript.rs`): each policy turn and observation is encoded on its own,
//! as an episode's are, and the observations are left out of the loss. This is the warm start
//! of the bundled model.

use std::time::Instant;

use burn::optim::GradientsParams;
use burn::tensor::Device;
use rand::SeedableRng;
use rand::seq::index::sample;
use rlvr_models::{CausalLm, Tokenizer, token_logprobs};
use rlvr_optim::OptimizerConfig;

use crate::batch::Sample;
use crate::batch::pack;
use crate::config::{EnvSection, SftSection, kind_default};
use crate::data::Example;
use crate::env::episode::ObservationFormat;
use crate::env::new_environment;
use crate::env::transcript::split_transcript;
use crate::error::{Error, Result};
use crate::grad_norm::{clip_global_norm, global_norm};
use crate::progress;
use crate::prompt::{pad_id, render_prompt};
use crate::schedule::warmup_cosine;

/// The supervised target text of an example.
pub fn target_text(ex: &Example) -> Option<&str> {
    ex.record
        .get("completion")
        .or_else(|| ex.record.get("answer"))
        .and_then(|v| v.as_str())
}

/// Tokenizes examples into (prompt, target + eos) pairs. With `transcripts` (the run's
/// `[env]`), each target is split into policy turns and observations by replaying it through
/// that environment, every piece encoded on its own and the observations' tokens masked out
/// (`Sample::loss_mask`).
///
/// # Errors
/// An example without a target, a tokenizer failure, or a transcript the environment
/// disagrees with ([`crate::env::transcript::split_transcript`]).
pub fn encode_pairs(
    tokenizer: &Tokenizer,
    examples: &[Example],
    chat: bool,
    transcripts: Option<&EnvSection>,
) -> Result<Vec<Sample>> {
    let mut replay = match transcripts {
        Some(section) => Some((
            new_environment(section)?,
            ObservationFormat::new(&section.observation_template)?,
        )),
        None => None,
    };
    let eos = *tokenizer
        .eos_token_ids()
        .first()
        .ok_or_else(|| Error::Config("the tokenizer has no end-of-sequence token".into()))?;
    examples
        .iter()
        .map(|ex| {
            let target = target_text(ex).ok_or_else(|| {
                Error::Config(format!(
                    "example `{}` has no `completion` or `answer` to train on",
                    ex.id
                ))
            })?;
            let prompt = tokenizer.encode(&render_prompt(tokenizer, ex, chat)?)?;
            let mut response = Vec::new();
            let mut loss_mask = Vec::new();
            if let Some((env, format)) = replay.as_mut() {
                for segment in split_transcript(env.as_mut(), format, ex, target)? {
                    let ids = tokenizer.encode(&segment.text)?;
                    loss_mask.extend(std::iter::repeat_n(segment.policy, ids.len()));
                    response.extend(ids);
                }
                loss_mask.push(true);
            } else {
                response = tokenizer.encode(target)?;
            }
            response.push(eos);
            let old_logp = vec![0.0; response.len()];
            let finish = rlvr_models::FinishReason::Stop;
            Ok(Sample {
                text: target.to_string(),
                passed: true,
                loss_mask,
                ..Sample::unscored(0, prompt, response, old_logp, finish)
            })
        })
        .collect()
}

/// Greedy accuracy with the default math verifier (progress output during SFT).
fn quick_accuracy(model: &CausalLm, tokenizer: &Tokenizer, examples: &[Example]) -> Result<f64> {
    use burn::module::Module;
    let config = rlvr_verifiers::VerifierConfig::default_for(rlvr_verifiers::Kind::Math);
    let verifier: std::sync::Arc<dyn rlvr_verifiers::Verifier> = config.build()?.into();
    let prompts = examples
        .iter()
        .map(|e| Ok(tokenizer.encode(&render_prompt(tokenizer, e, false)?)?))
        .collect::<Result<Vec<_>>>()?;
    let gen_cfg = rlvr_models::GenerationConfig::greedy(8, tokenizer.eos_token_ids());
    let results = crate::eval::evaluate(
        &model.valid(),
        tokenizer,
        &verifier,
        &config,
        examples,
        &prompts,
        &gen_cfg,
        1,
        256,
        0,
    )?;
    Ok(crate::eval::summarize(&results).pass_at_1)
}

/// Trains `model` (on an autodiff device) for `cfg.steps` steps and returns it; `transcripts`
/// as in [`encode_pairs`].
pub fn train_sft(
    mut model: CausalLm,
    tokenizer: &Tokenizer,
    examples: &[Example],
    held_out: &[Example],
    transcripts: Option<&EnvSection>,
    cfg: &SftSection,
    seed: u64,
    device: &Device,
) -> Result<CausalLm> {
    let pairs = encode_pairs(tokenizer, examples, false, transcripts)?;
    let mut optim = kind_default::<OptimizerConfig>("adamw").init(&model)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5F7);
    let bar = progress::bar(
        cfg.steps as u64,
        "sft {bar:30} {pos}/{len} loss {msg} [{elapsed_precise}<{eta_precise}]",
    );
    let start = Instant::now();
    for step in 0..cfg.steps {
        let rows: Vec<usize> =
            sample(&mut rng, pairs.len(), cfg.batch_size.min(pairs.len())).into_vec();
        let packed = pack(&pairs, &rows, pad_id(tokenizer), device);
        let scores = token_logprobs(&model, packed.ids, packed.mask.clone());
        let loss = -(scores.logp.sum() / packed.mask.sum().clamp_min(1.0));
        let loss_value = f64::from(loss.clone().into_scalar::<f32>());
        let mut grads = GradientsParams::from_grads(loss.backward(), &model);
        let norm = global_norm(&model, &grads);
        if !(loss_value.is_finite() && norm.is_finite()) {
            tracing::warn!(
                "sft step {}: non-finite loss or gradient, update skipped",
                step + 1
            );
            continue;
        }
        clip_global_norm(&model, &mut grads, norm, 1.0);
        let lr = warmup_cosine(step, cfg.steps / 20, cfg.steps, cfg.lr, 0.1);
        model = optim.step(lr, model, grads);
        bar.set_message(format!("{loss_value:.4}"));
        bar.inc(1);
        if cfg.eval_every > 0 && (step + 1) % cfg.eval_every == 0 {
            let acc = quick_accuracy(&model, tokenizer, &held_out[..held_out.len().min(200)])?;
            tracing::info!(
                "sft step {}: loss {loss_value:.4}, held-out accuracy {:.1}%",
                step + 1,
                100.0 * acc
            );
        }
        if bar.is_hidden() && (step + 1) % 100 == 0 {
            let elapsed = start.elapsed().as_secs_f64();
            let eta = elapsed / (step + 1) as f64 * (cfg.steps - step - 1) as f64;
            tracing::info!(
                "sft step {}/{}: loss {loss_value:.4} ({elapsed:.0} s elapsed, about {eta:.0} s left)",
                step + 1,
                cfg.steps
            );
        }
    }
    let done = format!("done in {:.0} s", start.elapsed().as_secs_f64());
    progress::finish(&bar);
    tracing::info!("sft {done}");
    Ok(model)
}
