//! Every default value of the run configuration, in one place: an empty TOML file (or no file)
//! is this run. `configs/default.toml` spells the same values out and a test keeps the two equal.

use std::path::PathBuf;

use rlvr_models::WeightDtype;
use rlvr_objectives::{ObjectiveConfig, StagesConfig};

use super::RunConfig;
use super::kind_default;
use super::sections::{
    CheckpointSection, DataSection, EnvKind, EnvSection, EvalSection, G2dSection, LogSection,
    ModelSection, RolloutEngine, RolloutSection, ServerKind, SftSection, ShortBatch, TrainSection,
};

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
            log: LogSection::default(),
            objective: default_objective(),
            optimizer: kind_default("adamw"),
            verifier: kind_default("math"),
            stages: StagesConfig::default(),
            g2d: G2dSection::default(),
            lora: None,
            env: None,
            binac: None,
            geox: None,
            smepo: None,
        }
    }
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
            alphabet: String::new(),
        }
    }
}

impl Default for SftSection {
    fn default() -> Self {
        Self {
            steps: 3000,
            batch_size: 64,
            lr: 4e-4,
            cache_dir: PathBuf::from("runs/cache"),
            eval_every: 500,
            seed: 0,
            mask_observations: false,
        }
    }
}

impl Default for DataSection {
    fn default() -> Self {
        Self {
            train: PathBuf::from("datasets/arith/train.jsonl"),
            eval: PathBuf::from("datasets/arith/test.jsonl"),
            train_split: "train".into(),
            eval_split: "test".into(),
            eval_limit: 0,
            chat_template: false,
            prompt_field: String::new(),
            messages_field: "messages".into(),
            answer_field: String::new(),
            id_field: String::new(),
            prompt_template: String::new(),
            train_rows: String::new(),
            eval_rows: String::new(),
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
            short_batch: ShortBatch::Train,
            engine: RolloutEngine::Local,
            endpoints: Vec::new(),
            concurrency: 8,
            request_timeout_s: 600.0,
            retries: 3,
            sync_every: 1,
            max_staleness: 0,
            server: ServerKind::RlvrServe,
        }
    }
}

impl Default for TrainSection {
    fn default() -> Self {
        Self {
            steps: 100,
            lr: 3e-5,
            warmup_steps: 5,
            mini_batches: 1,
            micro_batch_tokens: 0,
            gradient_checkpointing: false,
            logprob_chunk: 0,
            epochs: 1,
            grad_clip: 1.0,
            stage_batches: 1,
            reference_model: false,
            frozen_dtype: WeightDtype::F32,
        }
    }
}

impl Default for EvalSection {
    fn default() -> Self {
        Self {
            every: 25,
            max_new_tokens: 8,
            batch_size: 128,
            k: 1,
        }
    }
}

impl Default for LogSection {
    fn default() -> Self {
        Self {
            tensorboard: true,
            completions_every: 10,
        }
    }
}

impl Default for CheckpointSection {
    fn default() -> Self {
        // Five evenly spaced checkpoints over the default 50 steps: enough points for RELEX.
        Self { every: 10, keep: 5 }
    }
}

impl Default for G2dSection {
    fn default() -> Self {
        Self {
            pairs_per_prompt: 4,
            max_length_ratio: 3.0,
            beta: 0.1,
            lr: 5e-7,
            epochs: 1,
            batch_size: 8,
        }
    }
}

/// The default objective: DAPO with its knobs at the paper's values, except the soft overlong
/// window, which is scaled to the default `rollout.max_new_tokens` (8): L_max = 8 and
/// L_cache = 2, the paper's ratio 4096/20480 rounded. The paper's 20480/4096 would never fire
/// at this length (and is refused at load, see `validate.rs`).
fn default_objective() -> ObjectiveConfig {
    toml::from_str("kind = \"dapo\"\noverlong_max_len = 8\noverlong_cache = 2")
        .expect("the default objective deserializes")
}

impl Default for EnvSection {
    fn default() -> Self {
        Self {
            kind: EnvKind::SingleTurn,
            corpus: None,
            top_k: 2,
            max_turns: 4,
            max_tokens: 512,
            observation_template: "{{ observation }}".into(),
            reward: super::EnvReward::Verifier,
            tier: None,
        }
    }
}
