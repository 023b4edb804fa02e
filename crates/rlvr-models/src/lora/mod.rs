//! LoRA: low-rank adapters on the decoder's projections, with the base frozen (Hu et al. 2021,
//! "LoRA: Low-Rank Adaptation of Large Language Models", eq. 3: `h = W₀x + ΔWx = W₀x + BAx`,
//! scaled by `α / r`).
//!
//! [`CausalLm::with_lora`] freezes every parameter and attaches a trainable adapter to each
//! projection that [`LoraConfig::target_modules`] names; only the adapters then get gradients
//! and optimizer state. Adapters are saved and loaded in PEFT's layout (`peft.rs`), and
//! [`CausalLm::merge_lora`] folds them into the weights (a model with adapters also saves as the
//! merged full model through [`save_pretrained`](crate::save_pretrained)).

mod peft;

use burn::module::{Module, Param};
use burn::tensor::{Distribution, Tensor, TensorData};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::CausalLm;
use crate::projection::Projection;
use crate::sampler::splitmix64;

pub use peft::{ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, load_adapter, save_adapter};

/// `target_modules` entry that selects every projection of every block (not the LM head), as
/// PEFT's `"all-linear"`.
pub const ALL_LINEAR: &str = "all-linear";

/// Which projections get adapters and how they are shaped (PEFT's `LoraConfig` fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoraConfig {
    /// Rank r of `A: [in, r]` and `B: [r, out]`. Default 16.
    pub rank: usize,
    /// Scaling numerator α: the update is `α / r · x A B` (or `α / √r` with `use_rslora`).
    /// Default 32.
    pub alpha: f64,
    /// Dropout probability on the adapter's input during training. Default 0.
    pub dropout: f64,
    /// Module names that get adapters: a name matches a projection whose HF module path equals
    /// it or ends with `.` + it (`"q_proj"`, `"mlp.down_proj"`, `"model.layers.0.self_attn.q_proj"`),
    /// as in PEFT; `"all-linear"` selects all seven projections of every block. Every entry must
    /// match at least one projection. Default `["all-linear"]`.
    pub target_modules: Vec<String>,
    /// Rank-stabilised scaling `α / √r` (Kalajdzievski 2023, PEFT's `use_rslora`). Default false.
    pub use_rslora: bool,
}

impl Default for LoraConfig {
    fn default() -> Self {
        Self {
            rank: 16,
            alpha: 32.0,
            dropout: 0.0,
            target_modules: vec![ALL_LINEAR.to_owned()],
            use_rslora: false,
        }
    }
}

impl LoraConfig {
    /// Checks the values on their own (which modules match is checked when attaching).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the field (`rank`, `alpha`, `dropout`, `target_modules`).
    pub fn validate(&self) -> Result<()> {
        if self.rank == 0 {
            return Err(Error::config("rank", "must be at least 1"));
        }
        if !(self.alpha.is_finite() && self.alpha > 0.0) {
            return Err(Error::config(
                "alpha",
                format!("must be finite and > 0, got {}", self.alpha),
            ));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::config(
                "dropout",
                format!("must be in [0, 1), got {}", self.dropout),
            ));
        }
        if self.target_modules.is_empty() || self.target_modules.iter().any(|t| t.is_empty()) {
            return Err(Error::config(
                "target_modules",
                "must list at least one non-empty module name",
            ));
        }
        Ok(())
    }

    /// The factor of the adapter's output: `α / r`, or `α / √r` with `use_rslora`.
    pub fn scale(&self) -> f64 {
        if self.use_rslora {
            self.alpha / (self.rank as f64).sqrt()
        } else {
            self.alpha / self.rank as f64
        }
    }

    /// Whether `target` (one entry of `target_modules`) selects the projection at HF module
    /// path `module` (e.g. `model.layers.3.self_attn.q_proj`).
    fn target_matches(target: &str, module: &str) -> bool {
        target == ALL_LINEAR
            || module == target
            || module
                .strip_suffix(target)
                .is_some_and(|head| head.ends_with('.'))
    }
}

/// The trainable low-rank update of one projection: `scale · dropout(x) · A · B`.
///
/// Stored in burn's `[in, out]` orientation; PEFT's `lora_A.weight` is `Aᵀ` (`[r, in]`) and
/// `lora_B.weight` is `Bᵀ` (`[out, r]`).
#[derive(Module, Debug)]
pub struct LoraAdapter {
    /// `A: [in, r]`, initialised as PEFT does: `U(−1/√in, 1/√in)` (Kaiming-uniform with a = √5).
    pub lora_a: Param<Tensor<2>>,
    /// `B: [r, out]`, initialised to zero, so a fresh adapter leaves the model unchanged.
    pub lora_b: Param<Tensor<2>>,
    /// `α / r` (or `α / √r`).
    pub scale: f64,
    /// Dropout probability on the adapter's input while training.
    pub dropout: f64,
}

impl CausalLm {
    /// Freezes every parameter and attaches a fresh adapter (see [`LoraAdapter`]) to each
    /// projection that `config.target_modules` selects. `A` is drawn from the device RNG (seed it
    /// with `device.seed(..)` for a reproducible start).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for invalid values, a `target_modules` entry that matches no
    /// projection, or a model that already has adapters.
    pub fn with_lora(self, config: &LoraConfig) -> Result<Self> {
        config.validate()?;
        let device = self.device();
        self.attach(config, |_module, d_in, d_out| {
            let bound = 1.0 / (d_in as f64).sqrt();
            Ok((
                Tensor::random(
                    [d_in, config.rank],
                    Distribution::Uniform(-bound, bound),
                    &device,
                ),
                Tensor::zeros([config.rank, d_out], &device),
            ))
        })
    }

    /// [`with_lora`](Self::with_lora) with `A` drawn on the host from `seed` (one generator per
    /// module, seeded from `seed` and the module's name), so the adapter does not depend on the
    /// device RNG, which is shared by everything in the process that draws from the device.
    ///
    /// # Errors
    /// As [`with_lora`](Self::with_lora).
    pub fn with_lora_seeded(self, config: &LoraConfig, seed: u64) -> Result<Self> {
        config.validate()?;
        let device = self.device();
        self.attach(config, |module, d_in, d_out| {
            let bound = 1.0 / (d_in as f64).sqrt();
            let name_hash = module
                .bytes()
                .fold(0u64, |h, b| splitmix64(h ^ u64::from(b)));
            let mut rng = StdRng::seed_from_u64(splitmix64(seed ^ name_hash));
            let values: Vec<f32> = (0..d_in * config.rank)
                .map(|_| rng.random_range(-bound..bound) as f32)
                .collect();
            Ok((
                Tensor::from_data(TensorData::new(values, [d_in, config.rank]), &device),
                Tensor::zeros([config.rank, d_out], &device),
            ))
        })
    }

    /// Freezes the model and attaches an adapter with factors from `factors(module, in, out)`
    /// (`A: [in, r]`, `B: [r, out]`) to every projection `config` selects.
    pub(crate) fn attach(
        self,
        config: &LoraConfig,
        mut factors: impl FnMut(&str, usize, usize) -> Result<(Tensor<2>, Tensor<2>)>,
    ) -> Result<Self> {
        if self.has_lora() {
            return Err(Error::config(
                "target_modules",
                "the model already has LoRA adapters; merge them first",
            ));
        }
        let mut matched = vec![false; config.target_modules.len()];
        let mut model = self.no_grad();
        for (i, layer) in model.model.layers.iter_mut().enumerate() {
            for (name, proj) in layer.projections_mut() {
                let module = format!("model.layers.{i}.{name}");
                let mut selected = false;
                for (hit, target) in matched.iter_mut().zip(&config.target_modules) {
                    if LoraConfig::target_matches(target, &module) {
                        *hit = true;
                        selected = true;
                    }
                }
                if selected {
                    let (d_in, d_out) = proj.dims();
                    let (a, b) = factors(&module, d_in, d_out)?;
                    proj.lora = Some(LoraAdapter {
                        lora_a: Param::from_tensor(a),
                        lora_b: Param::from_tensor(b),
                        scale: config.scale(),
                        dropout: config.dropout,
                    });
                }
            }
        }
        if let Some((target, _)) = config
            .target_modules
            .iter()
            .zip(&matched)
            .find(|(_, hit)| !**hit)
        {
            return Err(Error::config(
                "target_modules",
                format!(
                    "`{target}` matches no projection (names: q_proj, k_proj, v_proj, o_proj, \
                     gate_proj, up_proj, down_proj, optionally with a module path prefix, or \
                     \"{ALL_LINEAR}\")"
                ),
            ));
        }
        Ok(model)
    }

    /// Whether any projection carries an adapter.
    pub fn has_lora(&self) -> bool {
        self.model
            .layers
            .iter()
            .any(|l| l.projections().iter().any(|(_, p)| p.lora.is_some()))
    }

    /// The same model without its adapters (the frozen base). The weights are shared, not
    /// copied: this is the reference model of a LoRA run at no memory cost.
    pub fn without_lora(&self) -> Self {
        let mut model = self.clone();
        for layer in &mut model.model.layers {
            for (_, proj) in layer.projections_mut() {
                proj.lora = None;
            }
        }
        model
    }

    /// Folds every adapter into its weight (`W ← W + scale · A · B`) and removes it.
    pub fn merge_lora(mut self) -> Self {
        for layer in &mut self.model.layers {
            for (_, proj) in layer.projections_mut() {
                if proj.lora.is_some() {
                    merge_into(proj);
                }
            }
        }
        self
    }

    /// Number of adapter parameters (the trainable ones under LoRA; 0 without adapters).
    pub fn num_lora_params(&self) -> usize {
        self.model
            .layers
            .iter()
            .flat_map(|l| l.projections())
            .filter_map(|(_, p)| p.lora.as_ref())
            .map(|l| l.lora_a.shape().num_elements() + l.lora_b.shape().num_elements())
            .sum()
    }
}

fn merge_into(proj: &mut Projection) {
    let id = proj.weight.id;
    let merged = proj.merged_weight().detach();
    proj.weight = Param::from_tensor(merged);
    proj.weight.id = id;
    proj.lora = None;
}
