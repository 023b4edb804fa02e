//! The trainer: the state one run carries from step to step (policy, reference, optimizer,
//! tokenizer, verifier, data cursor) and the operations the step needs on it.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rlvr_models::lora::save_adapter;
use rlvr_models::{
    CausalLm, ModelConfig, Tokenizer, load_pretrained, save_pretrained, store_weights_as,
    weight_bytes,
};
use rlvr_optim::{OptimizerConfig, RlvrOptimizer};
use rlvr_verifiers::Verifier;
use rlvr_verifiers::math::Fallback;

use crate::checkpoint::{self, TrainerState};
use crate::config::RunConfig;
use crate::data::Example;
use crate::data::guidance::{Guidance, cut_at_ratio};
use crate::error::{Error, Result};
use crate::model::param_ids::with_path_ids;
use crate::prompt::render_prompt_with_tools;
use crate::rollout_engine::RemoteEngine;
use crate::step::prefetch::Prefetch;

/// The subdirectory of a checkpoint that holds the frozen reference model (a HuggingFace
/// directory), present when the run keeps a reference.
pub const REFERENCE_DIR: &str = "reference";

/// The subdirectory of a checkpoint that holds the LoRA adapters in PEFT's layout, present when
/// the run trains adapters (`[lora]`); the checkpoint's own weights are then the merged model.
pub const ADAPTER_DIR: &str = "adapter";

/// Everything a run keeps between steps.
pub struct Trainer {
    /// The effective configuration.
    pub config: RunConfig,
    /// The autodiff device the policy lives on.
    pub device: Device,
    /// The policy's architecture.
    pub model_config: ModelConfig,
    /// The tokenizer (and chat template).
    pub tokenizer: Tokenizer,
    /// The reward program (shared with the verification threads).
    pub verifier: Arc<dyn Verifier>,
    /// Training examples.
    pub train_set: Vec<Example>,
    /// Held-out examples.
    pub eval_set: Vec<Example>,
    /// Counters and history that a checkpoint saves.
    pub state: TrainerState,
    /// The inference servers the rollouts come from (`rollout.engine = "openai"`); `None`
    /// samples in this process. [`crate::run::train`] connects it.
    pub remote: Option<RemoteEngine>,
    /// First rollout rounds of the next steps being sampled in the background (asynchronous
    /// rollouts, `rollout.max_staleness`), in step order.
    pub prefetched: VecDeque<Prefetch>,
    model: Option<CausalLm>,
    reference: Option<CausalLm>,
    /// Whether the reference is the policy's frozen base (a LoRA run before any OWPO refresh):
    /// it then shares the base's weights and a checkpoint need not store it.
    reference_is_base: bool,
    optimizer: RlvrOptimizer,
    /// The epoch whose data order is cached, and that order.
    order: (usize, Vec<usize>),
}

impl Trainer {
    /// How many parameters the matrix optimizer iterates per attention head (0 unless per-head
    /// routing is on).
    pub fn head_split_params(&self) -> usize {
        self.optimizer
            .routes()
            .iter()
            .filter(|r| matches!(r.target, rlvr_optim::Target::Matrix(Some(_))))
            .count()
    }

    /// Assembles a trainer around a policy on an autodiff device. With `[lora]`, adapters are
    /// attached to `model` (drawn from the device RNG seeded with the run's seed) unless it
    /// already carries them (a resumed run).
    pub fn new(
        config: RunConfig,
        device: Device,
        model: CausalLm,
        model_config: ModelConfig,
        tokenizer: Tokenizer,
        train_set: Vec<Example>,
        eval_set: Vec<Example>,
    ) -> Result<Self> {
        let model = match &config.lora {
            // A from the run's seed on the host: parallel runs in one process (tests) share the
            // device RNG.
            Some(lora) if !model.has_lora() => model.with_lora_seeded(lora, config.seed)?,
            _ => model,
        };
        // Under LoRA the frozen base may be stored narrower (trainable weights never are).
        let frozen = config.train.frozen_dtype;
        let model = store_weights_as(model, frozen);
        if model.has_lora() {
            tracing::info!(
                "lora: {} trainable adapter parameters ({:.2} % of {})",
                model.num_lora_params(),
                100.0 * model.num_lora_params() as f64 / model.num_params() as f64,
                model.num_params()
            );
        }
        // Ids derived from parameter paths, so optimizer state saved by one process is found
        // again by the next one (see param_ids.rs).
        let model = with_path_ids(model);
        let verifier: Arc<dyn Verifier> = Arc::from(config.verifier.build()?);
        let optimizer = resolve_heads(&config.optimizer, &model_config).init(&model)?;
        let keep_reference = config.train.reference_model || config.objective.needs_reference();
        // Under LoRA the reference is the frozen base: the same weights, without adapters.
        let reference =
            keep_reference.then(|| store_weights_as(model.without_lora().valid(), frozen));
        let reference_is_base = model.has_lora();
        if let Some(r) = &reference {
            tracing::info!(
                "reference model: {:.1} MB of weights ({}{})",
                weight_bytes(r) as f64 / 1e6,
                frozen.name(),
                if reference_is_base {
                    ", shared with the LoRA base"
                } else {
                    ""
                }
            );
        }
        Ok(Self {
            config,
            device,
            model_config,
            tokenizer,
            verifier,
            train_set,
            eval_set,
            state: TrainerState::default(),
            remote: None,
            prefetched: VecDeque::new(),
            model: Some(model),
            reference,
            reference_is_base,
            optimizer,
            order: (usize::MAX, Vec::new()),
        })
    }

    /// The current policy (autodiff).
    pub fn model(&self) -> &CausalLm {
        self.model
            .as_ref()
            .expect("the policy is only taken out during an optimizer step")
    }

    /// Applies one optimizer step.
    pub fn apply_grads(&mut self, lr: f64, grads: GradientsParams) {
        let model = self.model.take().expect("policy present");
        self.model = Some(self.optimizer.step(lr, model, grads));
    }

    /// Log-probs of the frozen reference model at the rollout temperature, when the run keeps
    /// one.
    pub fn reference_logp(&self, ids: &Tensor<2, Int>, mask: &Tensor<2>) -> Option<Tensor<2>> {
        let reference = self.reference.as_ref()?;
        let inner = rlvr_models::token_logprobs_at(
            reference,
            ids.clone().inner(),
            mask.clone().inner(),
            self.config.rollout.temperature,
        );
        // Back on the policy's device, so it shares the device's gradient-checkpointing
        // strategy (`Tensor::from_inner` would give it the default one); `[B, T]` is small.
        Some(Tensor::from_data(inner.logp.into_data(), &self.device))
    }

    /// Whether the run keeps a frozen reference model.
    pub fn has_reference(&self) -> bool {
        self.reference.is_some()
    }

    /// Bytes of the reference model's weights in their stored type (0 without a reference;
    /// under LoRA they are the policy's own frozen base).
    pub fn reference_weight_bytes(&self) -> usize {
        self.reference.as_ref().map_or(0, weight_bytes)
    }

    /// Replaces the reference model by the current policy (OWPO's ratchet).
    pub fn refresh_reference(&mut self) {
        if self.reference.is_some() {
            let frozen = self.config.train.frozen_dtype;
            self.reference = Some(store_weights_as(self.model().valid(), frozen));
            self.reference_is_base = false;
        }
    }

    /// The next `n` training examples of the seeded stream (reshuffled every pass over the data).
    pub fn next_prompts(&mut self, n: usize) -> Vec<usize> {
        let len = self.train_set.len();
        (0..n)
            .map(|_| {
                let cursor = self.state.data_cursor;
                self.state.data_cursor += 1;
                let (epoch, pos) = (cursor / len, cursor % len);
                if self.order.0 != epoch || self.order.1.len() != len {
                    self.order = (epoch, permutation(self.config.seed, epoch, len));
                }
                self.order.1[pos]
            })
            .collect()
    }

    /// Prompt token ids of dataset examples.
    pub fn encode_prompts(&self, examples: &[usize]) -> Result<Vec<Vec<u32>>> {
        examples
            .iter()
            .map(|&i| self.encode_example(&self.train_set[i]))
            .collect()
    }

    /// Prompt token ids of training examples for the rollouts: with `[smepo]` each prompt
    /// carries its masked expert trace (`data/guidance.rs`); also what became of each
    /// prompt's guidance (`None` without `[smepo]`).
    pub fn encode_rollout_prompts(
        &self,
        examples: &[usize],
    ) -> Result<(Vec<Vec<u32>>, Vec<Option<Guidance>>)> {
        let Some(smepo) = &self.config.smepo else {
            return Ok((self.encode_prompts(examples)?, vec![None; examples.len()]));
        };
        examples
            .iter()
            .map(|&i| {
                let ex = &self.train_set[i];
                let gold = ex.record.get("answer").and_then(|a| match a {
                    serde_json::Value::String(s) => Some(
                        rlvr_verifiers::math::extract::extract(s, Fallback::None)
                            .map_or_else(|| s.clone(), |(a, _)| a),
                    ),
                    serde_json::Value::Number(n) => Some(n.to_string()),
                    _ => None,
                });
                let (guided, what) = smepo.guide(ex, gold.as_deref(), |t| {
                    cut_at_ratio(&self.tokenizer, t, smepo.ratio)
                })?;
                Ok((self.encode_example(&guided)?, Some(what)))
            })
            .collect::<Result<Vec<_>>>()
            .map(|v| v.into_iter().unzip())
    }

    /// Prompt token ids of one example.
    pub fn encode_example(&self, ex: &Example) -> Result<Vec<u32>> {
        // Only a chat template renders tools (building them compiles their schemas).
        let templated = self.config.data.chat_template || ex.messages.is_some();
        let tools = match &self.config.env {
            Some(env) if templated => crate::env::tool_specs(env)?,
            _ => Vec::new(),
        };
        let text =
            render_prompt_with_tools(&self.tokenizer, ex, self.config.data.chat_template, &tools)?;
        Ok(self.tokenizer.encode(&text)?)
    }

    /// Writes a checkpoint (policy as an HF directory, optimizer state, trainer state (its data
    /// cursor before the prompts of rounds still being prefetched), the
    /// reference model in `reference/` when the run keeps one that is not the LoRA base, and the
    /// adapters in `adapter/` under LoRA).
    pub fn save_checkpoint(&self, run_dir: &Path) -> Result<std::path::PathBuf> {
        let keep = self.config.checkpoint.keep;
        checkpoint::save(run_dir, self.state.step, keep, |dir| {
            save_pretrained(self.model(), &self.model_config, dir)?;
            self.tokenizer.save_to_dir(dir)?;
            if let Some(reference) = self.reference.as_ref().filter(|_| !self.reference_is_base) {
                save_pretrained(reference, &self.model_config, &dir.join(REFERENCE_DIR))?;
            }
            if let Some(lora) = self
                .config
                .lora
                .as_ref()
                .filter(|_| self.model().has_lora())
            {
                let base = crate::model::bundled::base_dir(&self.config)?;
                let base = base.to_string_lossy();
                save_adapter(self.model(), lora, Some(&base), &dir.join(ADAPTER_DIR))?;
            }
            // Streamed to the file: no buffer of the whole state besides burn's record.
            self.optimizer.save(&dir.join("optimizer.bin"))?;
            // Prompts drawn for prefetched rounds are not trained on yet: a resumed run draws
            // them again.
            let mut state = self.state.clone();
            if let Some(p) = self.prefetched.front() {
                state.data_cursor = p.cursor;
            }
            checkpoint::write_state(dir, &state)
        })
    }

    /// Restores optimizer and trainer state, and the reference model when the run keeps one,
    /// from a checkpoint whose policy weights were already loaded.
    ///
    /// # Errors
    /// A missing or unreadable file, including a checkpoint without `reference/` for a run
    /// that keeps a reference (the resumed policy is not the reference).
    pub fn restore(&mut self, checkpoint: &Path) -> Result<()> {
        let path = checkpoint.join("optimizer.bin");
        if !path.is_file() {
            return Err(Error::io(
                &path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no optimizer state"),
            ));
        }
        self.optimizer.load(&path)?;
        self.state = checkpoint::read_state(checkpoint)?;
        if self.reference.is_some() {
            let dir = checkpoint.join(REFERENCE_DIR);
            if self.reference_is_base && !dir.is_dir() {
                // A LoRA run whose reference is still the frozen base (kept by `new`).
                return Ok(());
            }
            if !dir.join("model.safetensors").is_file() {
                return Err(Error::Checkpoint(format!(
                    "{} has no reference model, and this run keeps one (a KL term or OWPO): \
                     resuming would silently replace the reference with the resumed policy",
                    checkpoint.display()
                )));
            }
            let (reference, _) = load_pretrained(&dir, &self.device)?;
            let frozen = self.config.train.frozen_dtype;
            self.reference = Some(store_weights_as(reference.valid(), frozen));
            self.reference_is_base = false;
        }
        Ok(())
    }
}

/// The optimizer config with per-head routing resolved: `routing.per_head` with `num_heads =
/// 0` (e.g. `optimizer.routing.per_head = {}`) takes the model's head counts.
fn resolve_heads(config: &OptimizerConfig, model: &ModelConfig) -> OptimizerConfig {
    let per_head = match config {
        OptimizerConfig::Adamw(_) => None,
        OptimizerConfig::Muon(c) => c.routing.per_head.as_ref(),
        OptimizerConfig::Pion(c) => c.routing.per_head.as_ref(),
    };
    match per_head {
        Some(p) if p.num_heads == 0 => config
            .clone()
            .with_attention_heads(model.num_attention_heads, model.num_kv_heads()),
        _ => config.clone(),
    }
}

/// The data order of one epoch: a pure function of (seed, epoch), so resuming from a cursor
/// reproduces the exact prompt stream.
fn permutation(seed: u64, epoch: usize, len: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    let mut rng =
        rand::rngs::StdRng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(epoch as u64));
    order.shuffle(&mut rng);
    order
}
