//! The run configuration: one TOML file whose sections are the component configs, then
//! `--set path.to.field=value` overrides, applied in that order.
//!
//! Every field has a default, so an empty file is a valid run: the bundled arithmetic task on a
//! small model warm-started by supervised fine-tuning. `rlvr train --print-config` prints the
//! effective configuration, and the run directory keeps a copy (`config.toml`).

use std::path::{Path, PathBuf};

use rlvr_objectives::{ObjectiveConfig, StagesConfig};
use rlvr_optim::OptimizerConfig;
use rlvr_verifiers::VerifierConfig;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
pub use crate::g2d::G2dSection;

/// The whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    /// Seed of everything random in the run: model init, data order, sampling.
    pub seed: u64,
    /// Where the run directory goes. Empty: `runs/<config name>-<seed>`.
    pub run_dir: PathBuf,
    /// The policy model.
    pub model: ModelSection,
    /// Supervised warm start (used when `model.base` is empty).
    pub sft: SftSection,
    /// Training and held-out data.
    pub data: DataSection,
    /// How responses are sampled.
    pub rollout: RolloutSection,
    /// The RL update.
    pub train: TrainSection,
    /// Held-out evaluation.
    pub eval: EvalSection,
    /// Checkpointing.
    pub checkpoint: CheckpointSection,
    /// The policy objective (rlvr-objectives registry; `kind` = grpo, dapo, dr_grpo, gspo, rloo,
    /// nfpo, owpo, mu_grpo, nsr).
    pub objective: ObjectiveConfig,
    /// The optimizer (rlvr-optim registry; `kind` = adamw, muon, pion).
    pub optimizer: OptimizerConfig,
    /// The reward program (rlvr-verifiers registry; `kind` = math, code, rubric).
    pub verifier: VerifierConfig,
    /// Optional advantage-shaping stages (rlvr-objectives `StagesConfig`: edas, avspo,
    /// curve_rl, lampo, tmn, pow3r, srar, dgg); all off by default.
    pub stages: StagesConfig,
    /// G2D: preference-set collection (`rlvr g2d-collect`) and offline DPO (`rlvr dpo`).
    pub g2d: G2dSection,
}

/// The policy model.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSection {
    /// A HuggingFace model directory (config.json, model.safetensors, tokenizer.json). Empty:
    /// build the bundled small model and warm-start it with `[sft]` (cached by its config hash).
    pub base: PathBuf,
    /// Width of the bundled model (`hidden_size`).
    pub hidden_size: usize,
    /// Depth of the bundled model (`num_hidden_layers`).
    pub num_layers: usize,
    /// Attention heads of the bundled model.
    pub num_heads: usize,
    /// Key/value heads of the bundled model (grouped-query attention when below `num_heads`).
    pub num_kv_heads: usize,
    /// MLP width of the bundled model (`intermediate_size`).
    pub intermediate_size: usize,
}

/// Supervised fine-tuning (the warm start of the bundled model, and `rlvr sft`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SftSection {
    /// Optimizer steps.
    pub steps: usize,
    /// Examples per step.
    pub batch_size: usize,
    /// Peak AdamW learning rate (linear warm-up over the first 5% of steps, then cosine to 10%).
    pub lr: f64,
    /// Where warm-started models are cached; a model is reused when its config hash matches.
    pub cache_dir: PathBuf,
    /// Print greedy held-out accuracy (on up to 200 held-out prompts) every this many steps
    /// (0 = never).
    pub eval_every: usize,
    /// Seed of the warm start (model init and SFT batches), separate from the run's `seed` so
    /// that runs with different RL seeds share one cached warm start.
    pub seed: u64,
}

/// Training and held-out data (JSONL; see `data.rs` for the line format).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DataSection {
    /// Training prompts.
    pub train: PathBuf,
    /// Held-out prompts.
    pub eval: PathBuf,
    /// Use at most this many held-out prompts (0 = all).
    pub eval_limit: usize,
    /// Render prompts with the tokenizer's chat template (when it has one and a line has
    /// `messages`, or always wrap `prompt` as a user message when this is true).
    pub chat_template: bool,
}

/// Sampling of the responses.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RolloutSection {
    /// Prompts per step.
    pub prompts_per_step: usize,
    /// Responses per prompt (G).
    pub group_size: usize,
    /// Longest response, in tokens.
    pub max_new_tokens: usize,
    /// Sampling temperature.
    pub temperature: f32,
    /// Nucleus sampling threshold (1 = off).
    pub top_p: f32,
    /// Top-k sampling (0 = off).
    pub top_k: usize,
    /// DAPO dynamic sampling: drop groups whose rewards are all equal and draw more prompts until
    /// the batch is full, for at most `max_resample_rounds` extra rollouts.
    pub dynamic_sampling: bool,
    /// Cap on the extra rollouts of dynamic sampling per step.
    pub max_resample_rounds: usize,
}

/// The RL update.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainSection {
    /// RL steps (one rollout batch each, or one stage with `stage_batches` > 1).
    pub steps: usize,
    /// Learning rate (constant after `warmup_steps` of linear warm-up).
    pub lr: f64,
    /// Linear warm-up steps.
    pub warmup_steps: usize,
    /// Optimizer steps per batch per epoch (the batch is split into this many mini-batches).
    pub mini_batches: usize,
    /// Passes over each rollout batch (with `[stages.dgg]` on, its `max_reuse` replaces this and
    /// DGG may stop the passes early).
    pub epochs: usize,
    /// Global gradient-norm clip (0 = off).
    pub grad_clip: f64,
    /// Mu-GRPO's few large stages: generate this many batches with one policy, then optimize
    /// through them (1 = on-policy).
    pub stage_batches: usize,
    /// Keep a frozen reference model for a KL term (needed by objectives with a KL coefficient
    /// and by OWPO).
    pub reference_model: bool,
}

/// Held-out evaluation (greedy decoding).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvalSection {
    /// Evaluate every this many steps (0 = only before and after training).
    pub every: usize,
    /// Longest response during evaluation.
    pub max_new_tokens: usize,
    /// Prompts per generation batch.
    pub batch_size: usize,
}

/// Checkpointing.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointSection {
    /// Save every this many steps (0 = only at the end or on interruption).
    pub every: usize,
    /// Keep this many most recent checkpoints.
    pub keep: usize,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            run_dir: PathBuf::new(),
            model: ModelSection::default(),
            sft: SftSection::default(),
            data: DataSection::default(),
            rollout: RolloutSection::default(),
            train: TrainSection::default(),
            eval: EvalSection::default(),
            checkpoint: CheckpointSection::default(),
            objective: kind_default("dapo"),
            optimizer: kind_default("adamw"),
            verifier: kind_default("math"),
            stages: StagesConfig::default(),
            g2d: G2dSection::default(),
        }
    }
}

/// A registry entry with all its fields at their defaults, e.g. `kind = "dapo"`.
pub fn kind_default<T: serde::de::DeserializeOwned>(kind: &str) -> T {
    toml::from_str(&format!("kind = \"{kind}\""))
        .unwrap_or_else(|e| panic!("registry default `{kind}` must deserialize: {e}"))
}

impl Default for ModelSection {
    fn default() -> Self {
        Self {
            base: PathBuf::new(),
            hidden_size: 128,
            num_layers: 4,
            num_heads: 4,
            num_kv_heads: 2,
            intermediate_size: 384,
        }
    }
}

impl Default for SftSection {
    fn default() -> Self {
        Self {
            steps: 1500,
            batch_size: 64,
            lr: 3e-3,
            cache_dir: PathBuf::from("runs/cache"),
            eval_every: 500,
            seed: 0,
        }
    }
}

impl Default for DataSection {
    fn default() -> Self {
        Self {
            train: PathBuf::from("datasets/arith/train.jsonl"),
            eval: PathBuf::from("datasets/arith/test.jsonl"),
            eval_limit: 0,
            chat_template: false,
        }
    }
}

impl Default for RolloutSection {
    fn default() -> Self {
        Self {
            prompts_per_step: 16,
            group_size: 8,
            max_new_tokens: 8,
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            dynamic_sampling: false,
            max_resample_rounds: 2,
        }
    }
}

impl Default for TrainSection {
    fn default() -> Self {
        Self {
            steps: 50,
            lr: 3e-5,
            warmup_steps: 5,
            mini_batches: 1,
            epochs: 1,
            grad_clip: 1.0,
            stage_batches: 1,
            reference_model: false,
        }
    }
}

impl Default for EvalSection {
    fn default() -> Self {
        Self {
            every: 25,
            max_new_tokens: 8,
            batch_size: 128,
        }
    }
}

impl Default for CheckpointSection {
    fn default() -> Self {
        Self { every: 25, keep: 2 }
    }
}

impl RunConfig {
    /// Reads a TOML file (or the built-in defaults when `path` is `None`) and applies `--set`
    /// overrides (`path.to.field=value`, the value parsed as TOML, else taken as a string).
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Self> {
        let text = match path {
            Some(p) => std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?,
            None => String::new(),
        };
        let origin = path.map_or_else(|| "<defaults>".to_string(), |p| p.display().to_string());
        let file: toml::Table =
            toml::from_str(&text).map_err(|e| Error::Config(format!("{origin}: {e}")))?;
        // Start from the defaults, so that `--set objective.eps_high=0.3` finds the section's
        // `kind` even when the file has no `[objective]`.
        let mut table = toml::Table::try_from(RunConfig::default()).expect("defaults serialize");
        merge(&mut table, file);
        for ov in overrides {
            apply_override(&mut table, ov)?;
        }
        let mut config: RunConfig = table
            .try_into()
            .map_err(|e: toml::de::Error| Error::Config(format!("{origin}: {e}")))?;
        config.model.base = expand_home(&config.model.base);
        config.validate()?;
        Ok(config)
    }

    /// Checks the values that serde cannot.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::Config(what.to_string()));
        if self.rollout.group_size < 2 {
            return bad("rollout.group_size must be at least 2 (group-relative advantages)");
        }
        if self.rollout.prompts_per_step == 0 || self.train.mini_batches == 0 {
            return bad("rollout.prompts_per_step and train.mini_batches must be positive");
        }
        if self.train.epochs == 0 || self.train.stage_batches == 0 {
            return bad("train.epochs and train.stage_batches must be positive");
        }
        if !(self.train.lr.is_finite() && self.train.lr > 0.0) {
            return bad("train.lr must be a positive number");
        }
        self.stages
            .validate()
            .map_err(|e| Error::Config(format!("stages: {e}")))?;
        if self.rollout.max_new_tokens == 0 {
            return bad("rollout.max_new_tokens must be positive");
        }
        if self.g2d.epochs == 0 || self.g2d.batch_size == 0 {
            return bad("g2d.epochs and g2d.batch_size must be positive");
        }
        if !(self.g2d.lr.is_finite() && self.g2d.lr > 0.0) {
            return bad("g2d.lr must be a positive number");
        }
        self.g2d
            .pairs()
            .validate()
            .and_then(|()| self.g2d.dpo().validate())
            .map_err(|e| Error::Config(format!("g2d: {e}")))?;
        Ok(())
    }

    /// The effective configuration as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("a RunConfig always serializes")
    }
}

/// Sections that are registries (`kind` selects a variant with its own knobs).
const REGISTRIES: [&str; 3] = ["objective", "optimizer", "verifier"];

/// Deep-merges `over` into `base`. A registry section whose `kind` changes is replaced whole,
/// since the knobs of one kind mean nothing to another.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => {
                let kind_changes = REGISTRIES.contains(&key.as_str())
                    && o.get("kind").is_some_and(|k| Some(k) != b.get("kind"));
                if kind_changes {
                    *b = o;
                } else {
                    merge(b, o);
                }
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Sets `a.b.c = value` in a TOML table, creating intermediate tables. Setting a registry's
/// `kind` to a new value resets that section to the new kind's defaults.
fn apply_override(table: &mut toml::Table, assignment: &str) -> Result<()> {
    let (key, raw) = assignment
        .split_once('=')
        .ok_or_else(|| Error::Config(format!("--set `{assignment}`: expected key=value")))?;
    let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    let parts: Vec<&str> = key.trim().split('.').collect();
    if let [section, "kind"] = parts.as_slice()
        && REGISTRIES.contains(section)
    {
        let section_table = toml::Table::from_iter([("kind".to_string(), value)]);
        merge(
            table,
            toml::Table::from_iter([(section.to_string(), toml::Value::Table(section_table))]),
        );
        return Ok(());
    }
    let (last, parents) = parts.split_last().expect("split always yields one part");
    let mut cursor = table;
    for part in parents {
        let entry = cursor
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cursor = entry
            .as_table_mut()
            .ok_or_else(|| Error::Config(format!("--set `{key}`: `{part}` is not a section")))?;
    }
    cursor.insert(last.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `configs/default.toml` documents the built-in defaults; it must stay equal to them.
    #[test]
    fn shipped_default_config_equals_the_built_in_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/default.toml");
        let shipped = RunConfig::load(Some(&path), &[]).unwrap();
        assert_eq!(shipped.to_toml(), RunConfig::default().to_toml());
    }

    /// Every shipped configuration parses and validates.
    #[test]
    fn shipped_configs_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
        let mut n = 0;
        for dir in [root.clone(), root.join("ablations")] {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "toml") {
                    RunConfig::load(Some(&path), &[])
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    n += 1;
                }
            }
        }
        assert!(
            n >= 11,
            "expected the default and ten ablation configs, found {n}"
        );
    }

    #[test]
    fn empty_file_gives_defaults() {
        let c = RunConfig::load(None, &[]).unwrap();
        assert_eq!(c.rollout.group_size, 8);
        assert!(c.to_toml().contains("kind = \"dapo\""));
    }

    #[test]
    fn overrides_parse_values_and_strings() {
        let sets = [
            "train.lr=0.5".to_string(),
            "data.train=foo.jsonl".to_string(),
        ];
        let c = RunConfig::load(None, &sets).unwrap();
        assert_eq!(c.train.lr, 0.5);
        assert_eq!(c.data.train, PathBuf::from("foo.jsonl"));
    }

    #[test]
    fn knob_override_keeps_the_default_kind_and_kind_override_resets_knobs() {
        let c = RunConfig::load(None, &["objective.entropy_coef=0.05".to_string()]).unwrap();
        assert!(
            c.to_toml().contains("kind = \"dapo\"") && c.to_toml().contains("entropy_coef = 0.05")
        );
        let sets = [
            "objective.eps_high=0.5".to_string(),
            "objective.kind=\"grpo\"".to_string(),
        ];
        let c = RunConfig::load(None, &sets).unwrap();
        assert_eq!(c.objective.name(), "grpo");
        assert_eq!(
            c.objective.common().eps_high,
            rlvr_objectives::ObjectiveConfig::from_kind("grpo")
                .unwrap()
                .common()
                .eps_high
        );
    }

    #[test]
    fn unknown_field_is_an_error_naming_it() {
        let err = RunConfig::load(None, &["train.lrr=0.5".to_string()]).unwrap_err();
        assert!(err.to_string().contains("lrr"), "{err}");
    }

    #[test]
    fn invalid_values_are_rejected() {
        let err = RunConfig::load(None, &["rollout.group_size=1".to_string()]).unwrap_err();
        assert!(err.to_string().contains("group_size"), "{err}");
    }

    #[test]
    fn printed_config_reloads_identically() {
        let c = RunConfig::load(None, &["objective.kind=\"grpo\"".to_string()]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, c.to_toml()).unwrap();
        assert_eq!(
            RunConfig::load(Some(&path), &[]).unwrap().to_toml(),
            c.to_toml()
        );
    }
}

/// `~/rest` → `$HOME/rest` (a config names `~/.cache/rlvr-rs/...` portably); other paths as is.
fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod expand_home_tests {
    use super::*;

    #[test]
    fn tilde_is_the_home_directory() {
        let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set in tests"));
        assert_eq!(expand_home(Path::new("~/m/x")), home.join("m/x"));
        assert_eq!(
            expand_home(Path::new("/abs/~/x")),
            PathBuf::from("/abs/~/x")
        );
        assert_eq!(expand_home(Path::new("rel")), PathBuf::from("rel"));
    }
}
