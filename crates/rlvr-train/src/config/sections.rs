//! The sections of the run configuration, one struct per component (`[model]`, `[rollout]`,
//! `[train]`, ...). Their default values are in `defaults.rs`.

use std::path::PathBuf;

use rlvr_models::WeightDtype;
use serde::{Deserialize, Serialize};

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
    /// The bundled model's characters (one token each, after `<pad>`, `<eos>`, `<unk>`).
    /// Empty: the bundled arithmetic alphabet (`model::char_tokenizer::ALPHABET`); tasks
    /// with other characters (the tool calls of `[env] kind = "calculator"`) list theirs.
    pub alphabet: String,
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
    /// Train only on what the policy writes in a multi-turn `completion`: the transcript is
    /// replayed through the `[env]` environment (`env/transcript.rs`) and its observations (tool
    /// responses, a game's feedback) are masked out of the loss, as in an RL episode. Off: the
    /// whole completion is the target. Needs `[env]`.
    pub mask_observations: bool,
}

/// Training and held-out data: JSONL or parquet files, or directories in the HuggingFace Hub
/// layout (see `data/` for the record format and the layout rules). Every record of both
/// splits is checked against the verifier when the run starts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DataSection {
    /// Training prompts: a `.jsonl` / `.json` (JSON lines) or `.parquet` file, or a directory
    /// in the Hub layout (`data/train-00000-of-00002.parquet`, `train.jsonl`, ...).
    pub train: PathBuf,
    /// Held-out prompts (a file or a Hub-layout directory, as `train`).
    pub eval: PathBuf,
    /// The split read when `train` is a directory.
    pub train_split: String,
    /// The split read when `eval` is a directory (`test`; `validation` for a Hub dataset that
    /// has no test split).
    pub eval_split: String,
    /// Use at most this many held-out prompts (0 = all).
    pub eval_limit: usize,
    /// Render prompts with the tokenizer's chat template (when it has one and a line has
    /// `messages`, or always wrap `prompt` as a user message when this is true).
    pub chat_template: bool,
    /// The field holding the text prompt (a dotted path reaches into nested objects). Empty:
    /// `prompt`, else GSM8K's `question`, else MATH's `problem`.
    pub prompt_field: String,
    /// The field holding the prompt as chat turns (`[{role, content}]`; used before the text
    /// prompt when a record has both). verl's parquet files keep them in `prompt`.
    pub messages_field: String,
    /// The field holding the gold answer (a dotted path reaches into nested objects, e.g.
    /// verl's `reward_model.ground_truth`), copied to the field the verifier reads (`answer`
    /// for math, `tests` for code, `rubric` for rubrics). Empty: the records already use the
    /// verifier's field names.
    pub answer_field: String,
    /// The field holding the record's id. Empty: `id`, else `task_id`, else
    /// `<file stem>:<line>` (JSONL, from 1) or `<file stem>:<row>` (parquet, from 0).
    pub id_field: String,
    /// A Jinja template writing the text prompt from each record's fields (empty: off), e.g.
    /// `"{{ text }}\nYour code should pass this test:\n{{ test_list[0] }}"` for MBPP. It replaces
    /// the prompt and chat-turn fields; a field a record lacks is an error naming the record.
    pub prompt_template: String,
    /// The records of the training split kept, by position from 0: `"start:end"`, either side
    /// optional (empty: all). With `eval_rows`, one file can hold both splits (MBPP: train
    /// `"600:974"`, test `"10:510"`).
    pub train_rows: String,
    /// The records of the held-out split kept, as `train_rows`; `eval_limit` applies after.
    pub eval_rows: String,
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
    /// Sampling temperature T. The policy that is trained is softmax(logits / T): the stored
    /// old log-probs and the update's log-probs are both taken at T, so the behaviour policy is
    /// the one whose log-probs are stored.
    pub temperature: f32,
    /// Nucleus sampling threshold (1 = off). Truncation makes the sampler differ from the
    /// policy; `objective.tis` corrects for it with the sampler's own log-probs.
    pub top_p: f32,
    /// Top-k sampling (0 = off); see `top_p`.
    pub top_k: usize,
    /// DAPO dynamic sampling: drop groups whose verifier rewards are all equal (DAPO's
    /// accuracy filter, before any reward shaping) and draw more prompts until the batch holds
    /// `prompts_per_step` groups, for at most `max_resample_rounds` extra rollouts. What a step
    /// does when the rounds run out first is `short_batch`. The advantage stages run once per
    /// step, on the kept batch.
    pub dynamic_sampling: bool,
    /// Cap on the extra rollouts of dynamic sampling per step (DAPO itself samples without a
    /// cap; a cap keeps a step from looping on a batch the policy solves or fails entirely).
    pub max_resample_rounds: usize,
    /// What a step does when dynamic sampling's rounds run out before the batch is full.
    pub short_batch: ShortBatch,
    /// Where the RL rollouts are sampled: in this process (`local`) or on OpenAI-compatible
    /// inference servers (`openai`, e.g. `rlvr-serve`) that get the policy's weights by
    /// `sync_every`. Evaluation and the offline modes always sample locally.
    pub engine: RolloutEngine,
    /// The servers of `engine = "openai"` (`http://HOST:PORT`, no path); requests go to them in
    /// turn (round robin).
    pub endpoints: Vec<String>,
    /// Requests in flight at once over all endpoints (`engine = "openai"`; each request is one
    /// response, so this bounds the rows a server decodes for this run).
    pub concurrency: usize,
    /// Whole-request timeout in seconds (`engine = "openai"`; a weight update is one request).
    pub request_timeout_s: f64,
    /// Retries of a request after a connection error or a 5xx answer, with exponential
    /// backoff (`engine = "openai"`).
    pub retries: u32,
    /// Optimizer steps between weight syncs to the servers (`engine = "openai"`; the first
    /// rollout always follows a sync). Above 1 the rollouts come from an older policy.
    pub sync_every: usize,
    /// Asynchronous rollouts: while step t trains, the first rollout round of steps t+1 ..=
    /// t+k is already being sampled (on the servers, or in a background thread on a snapshot of
    /// the policy), so a sample may come from weights up to k steps older than the ones it
    /// trains. Each sample records the step of its weights; a group with a sample staler than
    /// k is dropped and sampled again, and `objective.tis` corrects the rest with the
    /// sampler's log-probs (validation requires it). 0 is the synchronous loop.
    pub max_staleness: usize,
    /// The kind of server at `endpoints` (`engine = "openai"`), which decides how weights are
    /// synced and whether replies carry a weights version.
    pub server: ServerKind,
}

/// The inference server behind `rollout.endpoints` (`rollout.server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// `rlvr-serve`: `POST /update_weights_from_disk`, replies carry `weights_version`, u64
    /// seeds (the local engine's exact seeds: the same tokens as local sampling).
    RlvrServe,
    /// SGLang: `POST /update_weights_from_disk {"model_path"}` answering `{"success": true}`;
    /// the client counts the versions itself; seeds below 2^63.
    Sglang,
    /// vLLM with `VLLM_SERVER_DEV_MODE=1`: `POST /collective_rpc {"method": "reload_weights",
    /// "kwargs": {"weights_path"}}` reloads the synced directory in place; the client counts
    /// the versions itself; seeds below 2^63.
    Vllm,
}

impl ServerKind {
    /// The name configs use.
    pub fn name(self) -> &'static str {
        match self {
            Self::RlvrServe => "rlvr-serve",
            Self::Sglang => "sglang",
            Self::Vllm => "vllm",
        }
    }
}

/// Where the rollouts are sampled (`rollout.engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RolloutEngine {
    /// `rlvr_models::generate` on the trainer's own policy.
    Local,
    /// `POST /v1/completions` on `rollout.endpoints`, with the weights synced from disk.
    Openai,
}

/// What a step does with a batch that dynamic sampling could not fill (`rollout.short_batch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShortBatch {
    /// Train on the groups it kept (reported as `rollout/kept_groups` <
    /// `rollout/wanted_groups`), rather than pad the batch with groups that carry no signal.
    Train,
    /// Stop the run with an error naming the step, as verl does when its generation batches
    /// run out: the data is too easy or too hard for the policy, and a run of short batches
    /// would quietly train on fewer prompts than configured.
    Error,
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
    /// Gradient accumulation: the most padded tokens (rows × longest row) one forward/backward
    /// holds. A mini-batch above it is split into micro-batches whose gradients are summed
    /// before its one optimizer step; each divides by the whole mini-batch's token and sequence
    /// counts, so the loss and gradient equal the unsplit ones. 0 = off (one pass per
    /// mini-batch).
    pub micro_batch_tokens: usize,
    /// Activation checkpointing of the RL update: burn's balanced strategy recomputes
    /// memory-bound activations in the backward pass instead of keeping them (same gradients,
    /// less memory, more time).
    pub gradient_checkpointing: bool,
    /// The LM head, log-softmax and entropy of the update over this many scored columns at a
    /// time, recomputed in the backward pass, so no `[B, T, vocab]` tensor exists at once
    /// (same log-probs and gradients). 0 = one pass.
    pub logprob_chunk: usize,
    /// Passes over each rollout batch (with `[stages.dgg]` on, its `max_reuse` replaces this and
    /// DGG may stop the passes early).
    pub epochs: usize,
    /// Global gradient-norm clip (0 = off).
    pub grad_clip: f64,
    /// Mu-GRPO's few large stages: generate this many batches with one policy, then optimize
    /// through them (1 = on-policy). This is Mu-GRPO's stage knob (the loss has none).
    pub stage_batches: usize,
    /// Keep a frozen reference model (its per-token KL is reported as `objective/kl_ref`).
    /// Objectives with a KL coefficient and OWPO keep one whatever this says. The reference is
    /// saved with every checkpoint, so `--resume` continues against the same reference.
    pub reference_model: bool,
    /// Storage type of the weights the run does not train: the reference model, and under
    /// `[lora]` the policy's frozen base (which the reference then shares). `"bf16"` or
    /// `"f16"` halve their memory; every forward pass still computes in f32, casting each
    /// weight where it is used (`rlvr_models::store_weights_as`). Under LoRA the update's
    /// peak rises instead (autodiff keeps each weight's f32 cast for the backward pass): it
    /// pays there only when the rollouts set the peak (docs/benchmarks.md).
    pub frozen_dtype: WeightDtype,
}

/// Held-out evaluation (greedy decoding; with `k` > 1 also k samples per prompt for pass@k).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvalSection {
    /// Evaluate every this many steps (0 = only before and after training).
    pub every: usize,
    /// Longest response during evaluation.
    pub max_new_tokens: usize,
    /// Prompts per generation batch.
    pub batch_size: usize,
    /// Samples per held-out prompt for the unbiased pass@k (1 = greedy pass@1 only). Above 1,
    /// each evaluation also samples k responses per prompt at the rollout temperature (and
    /// top-p / top-k) and logs `eval/pass@k` and the sampled pass@1 `eval/sampled_pass@1`.
    pub k: usize,
}

/// What a run writes for people to look at, beside `metrics.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSection {
    /// Write every metric of every step as a TensorBoard scalar to
    /// `<run>/tb/events.out.tfevents.<time>.<host>` (`tensorboard --logdir runs/`).
    pub tensorboard: bool,
    /// Write the sampled completions of every N-th step (prompt, response, reward, advantage,
    /// verdict, extracted answer) to `<run>/completions/step-<k>.jsonl` and `.md` (0 = never).
    pub completions_every: usize,
}

/// Checkpointing.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointSection {
    /// Save every this many steps (0 = only at the end or on interruption).
    pub every: usize,
    /// Keep this many most recent checkpoints (`rlvr relex` fits the trajectory through them and
    /// needs at least 3).
    pub keep: usize,
}

/// G2D (methods-extra §12): the static preference set (`rlvr g2d-collect`) and the offline DPO
/// that trains on it (`rlvr dpo`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct G2dSection {
    /// The most (chosen, rejected) pairs per prompt.
    pub pairs_per_prompt: usize,
    /// Drop a pair whose longer response exceeds this many times the shorter one.
    pub max_length_ratio: f64,
    /// DPO's β.
    pub beta: f64,
    /// DPO learning rate (constant, AdamW unless `[optimizer]` says otherwise).
    pub lr: f64,
    /// Passes over the preference set.
    pub epochs: usize,
    /// Pairs per DPO update.
    pub batch_size: usize,
}

impl G2dSection {
    /// G2D's pair-selection knobs.
    pub fn pairs(&self) -> rlvr_objectives::G2dConfig {
        rlvr_objectives::G2dConfig {
            pairs_per_prompt: self.pairs_per_prompt,
            max_length_ratio: self.max_length_ratio,
        }
    }

    /// DPO's knobs.
    pub fn dpo(&self) -> rlvr_objectives::DpoConfig {
        rlvr_objectives::DpoConfig { beta: self.beta }
    }
}

/// A multi-turn environment for the rollouts (`[env]`; see `env/`). Absent: one turn per
/// prompt on the plain path.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvSection {
    /// Which environment: `single_turn` (prompt → answer, the plain path's episodes),
    /// `calculator` (a `calculator` tool called as `<tool_call>{json}</tool_call>`),
    /// `guess_number` (probes `N?` answered `L` / `H` / `=`, then the number) or `search` (a
    /// `search` tool over `corpus`).
    pub kind: EnvKind,
    /// The search environment's corpus: JSON lines `{"id", "text"}` (only with
    /// `kind = "search"`, which needs it).
    pub corpus: Option<std::path::PathBuf>,
    /// Documents per search result (`kind = "search"`), at least 1.
    pub top_k: usize,
    /// Most policy turns per episode (each at most `rollout.max_new_tokens` tokens, or
    /// `eval.max_new_tokens` when evaluating).
    pub max_turns: usize,
    /// Most tokens after the prompt, policy turns and observations together.
    pub max_tokens: usize,
    /// minijinja template of what follows a policy turn, with the environment's reply as
    /// `observation`: `"{{ observation }}"` for the bundled model; a chat model needs its
    /// turn markup, e.g. ChatML's `"<|im_end|>\n<|im_start|>user\n{{ observation
    /// }}<|im_end|>\n<|im_start|>assistant\n"`.
    pub observation_template: String,
    /// What an episode earns: `verifier` (the verifier's score of the answer turn, plus any
    /// turn rewards) or `tier` (TIER's per-call format, schema and execution checks with the
    /// answer's score, weighted by `[env.tier]`; `env/tier.rs`).
    pub reward: EnvReward,
    /// TIER's weights (only with `reward = "tier"`; defaults when absent).
    pub tier: Option<crate::env::tier::TierConfig>,
}

impl EnvSection {
    /// The TIER weights in force, when `reward = "tier"`.
    pub fn tier(&self) -> Option<crate::env::tier::TierConfig> {
        (self.reward == EnvReward::Tier).then(|| self.tier.clone().unwrap_or_default())
    }
}

/// The rewards of `[env] reward`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvReward {
    /// The verifier's score of the answer turn, plus the environment's turn rewards.
    #[default]
    Verifier,
    /// TIER (`env/tier.rs`): `w_F·F + w_S·S + w_E·E + w_A·answer − p·failed calls`, plus
    /// the turn rewards.
    Tier,
}

/// The environments of `[env] kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvKind {
    /// Prompt → answer → verifier (`env/single_turn.rs`).
    SingleTurn,
    /// Arithmetic with a calculator tool (`env/calculator.rs`).
    Calculator,
    /// A hidden number found by probes answered lower / higher (`env/guess_number.rs`).
    GuessNumber,
    /// Questions answered from a local corpus through a BM25 search tool (`env/search.rs`).
    Search,
}

impl EnvKind {
    /// Whether the environment's turns carry [`crate::env::Turn::belief`] (what
    /// `[stages.rebel]` needs): only the guess-number game asks for a stated belief.
    pub fn tracks_beliefs(self) -> bool {
        self == Self::GuessNumber
    }
}
