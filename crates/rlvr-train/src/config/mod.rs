//! The run configuration: one TOML file whose sections are the component configs, then
//! `--set path.to.field=value` overrides, applied in that order.
//!
//! Every field has a default, so an empty file is a valid run: the bundled arithmetic task on a
//! small model warm-started by supervised fine-tuning. `rlvr train --print-config` prints the
//! effective configuration, and the run directory keeps a copy (`config.toml`).
//!
//! This module is a leaf of the crate: it imports nothing but the error type. Each component
//! reads its own section (`rollout` reads `[rollout]`, the update `[train]`, ...); the section
//! types are in `sections.rs`, every default value in `defaults.rs`, and the load-time checks
//! (including the refusal of combinations that cannot work) in `validate.rs`.

mod defaults;
mod sections;
mod validate;

use std::path::{Path, PathBuf};

use rlvr_objectives::{ObjectiveConfig, StagesConfig};
use rlvr_optim::OptimizerConfig;
use rlvr_verifiers::VerifierConfig;
use serde::{Deserialize, Serialize};

pub use sections::{
    CheckpointSection, DataSection, EnvKind, EnvReward, EnvSection, EvalSection, G2dSection,
    LogSection, ModelSection, RolloutEngine, RolloutSection, ServerKind, SftSection, ShortBatch,
    TrainSection,
};

use crate::error::{Error, Result};

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
    /// What a run writes for people: TensorBoard events, sampled completions.
    pub log: LogSection,
    /// The policy objective (rlvr-objectives registry; `kind` = grpo, dapo, dr_grpo, gspo, rloo,
    /// nfpo, owpo, mu_grpo, nsr).
    pub objective: ObjectiveConfig,
    /// The optimizer (rlvr-optim registry; `kind` = adamw, muon, pion).
    pub optimizer: OptimizerConfig,
    /// The reward program (rlvr-verifiers registry; `kind` = math, code, rubric).
    pub verifier: VerifierConfig,
    /// Optional advantage-shaping stages (rlvr-objectives `StagesConfig`: edas, avspo,
    /// curve_rl, lampo, tmn, pow3r, srar, dgg, cepo, oppo, amr_sd); all off by default.
    pub stages: StagesConfig,
    /// G2D: preference-set collection (`rlvr g2d-collect`) and offline DPO (`rlvr dpo`).
    pub g2d: G2dSection,
    /// LoRA adapters on the policy (rlvr-models `LoraConfig`: `rank`, `alpha`, `dropout`,
    /// `target_modules`, `use_rslora`): the base is frozen and only the adapters train.
    /// Absent: full fine-tuning.
    pub lora: Option<rlvr_models::LoraConfig>,
    /// A multi-turn environment for the rollouts (`kind` = single_turn, calculator; see
    /// `env/`). Absent: one turn per prompt.
    pub env: Option<EnvSection>,
    /// Bi-NAC (rlvr-objectives `BinacConfig`): the policy also writes feedback on its drafts
    /// and revises with it (`step/binac.rs`). Absent: off.
    pub binac: Option<rlvr_objectives::BinacConfig>,
    /// GeoX-style self-play (rlvr-objectives `GeoxConfig`): proposals of grid-program tasks are
    /// rewarded by their learnability and answered by the same policy (`step/geox.rs`). Absent:
    /// off.
    pub geox: Option<rlvr_objectives::GeoxConfig>,
    /// SMEPO: masked expert traces after the training prompts (`data/guidance.rs`). Absent:
    /// off.
    pub smepo: Option<crate::data::guidance::SmepoConfig>,
}

/// A registry entry with all its fields at their defaults, e.g. `kind = "dapo"`.
pub fn kind_default<T: serde::de::DeserializeOwned>(kind: &str) -> T {
    toml::from_str(&format!("kind = \"{kind}\""))
        .unwrap_or_else(|e| panic!("registry default `{kind}` must deserialize: {e}"))
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

    /// Combinations that would be accepted and then fail or do nothing in a run are refused
    /// at load, and the message names the key.
    #[test]
    fn combinations_that_cannot_work_are_refused_naming_the_key() {
        let refused = |sets: &[&str], key: &str| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let err = RunConfig::load(None, &sets).unwrap_err().to_string();
            assert!(err.contains(key), "{sets:?}: {err}");
        };
        refused(&["stages.pow3r={}"], "stages.pow3r");
        refused(
            &["rollout.dynamic_sampling=true", "stages.avspo={}"],
            "stages.avspo",
        );
        refused(&["objective.tis=\"truncate\""], "objective.tis");
        refused(
            &["objective.tis=\"mask\"", "rollout.top_p=0.9"],
            "objective.tis_cap",
        );
        // The registry's DAPO window (20480/4096) at 8 new tokens.
        refused(&["objective.kind=\"owpo\""], "objective.overlong_max_len");
        refused(
            &[
                "objective.kind=\"grpo\"",
                "objective.kl_coef=0",
                "objective.kl_in_reward=true",
            ],
            "objective.kl_in_reward",
        );
        refused(&["rollout.temperature=0"], "rollout.temperature");
        refused(&["stages.scrl={}", "binac={}"], "stages.scrl");
        refused(&["stages.scrl={}", "stages.srar={}"], "scrl");
        refused(
            &["stages.scrl={answers=\"separated\", separator=\"\"}"],
            "scrl.separator",
        );
        // The working neighbours of those combinations load.
        for ok in [
            &["objective.tis=\"truncate\"", "rollout.top_p=0.9"][..],
            &[
                "objective.tis=\"mask\"",
                "objective.tis_cap=0.9",
                "rollout.top_k=5",
            ],
            &[
                "objective.kind=\"owpo\"",
                "objective.overlong_max_len=8",
                "objective.overlong_cache=2",
            ],
            &["rollout.dynamic_sampling=true", "stages.edas={}"],
        ] {
            let sets: Vec<String> = ok.iter().map(|s| s.to_string()).collect();
            RunConfig::load(None, &sets).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        }
    }

    /// The default DAPO overlong window lies inside the default response length, so the
    /// penalty can fire.
    #[test]
    fn the_default_overlong_window_fits_the_default_response_length() {
        let c = RunConfig::default();
        let k = c.objective.common();
        assert_eq!(k.overlong_max_len, c.rollout.max_new_tokens);
        assert!(k.overlong_max_len - k.overlong_cache < c.rollout.max_new_tokens);
        assert!(c.checkpoint.keep >= 3, "RELEX needs at least 3 checkpoints");
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
