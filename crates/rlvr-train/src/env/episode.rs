//! The batched rollout of multi-turn episodes, token-in/token-out.
//!
//! Every row starts from its prompt's ids. Each turn, the rows still playing are sampled
//! together ([`generate_with_stop_strings`]: a turn ends at a stop token, at `</tool_call>`
//! at the environment's stop strings ([`Environment::stop_strings`]: `</tool_call>` when it
//! has tools), or at the per-turn token limit); a row's sampled ids go on
//! its trajectory with loss mask 1 and their sampling log-probs, its decoded text goes to its
//! environment, and the reply is rendered by the observation template, encoded on its own and
//! appended with loss mask 0. Nothing is ever re-tokenized from text: the trajectory the
//! trainer packs is the ids the policy read and wrote (verl#6501, #6719 are the drift this
//! avoids). An episode ends on [`Reply::Final`], after `max_turns` policy turns, or when the
//! next observation would pass `max_tokens`; only a `Final` turn is an answer the verifier
//! scores (the others leave `final_text` empty).
//!
//! Who samples a turn is a [`TurnSampler`]: the local policy ([`LocalTurns`]) or inference
//! servers (`rollout_engine::RemoteTurns`, token ids in and out of the completions API), the
//! same seeds giving the same tokens.

use minijinja::UndefinedBehavior;
use rlvr_models::{
    CausalLm, FinishReason, Generation, GenerationConfig, Tokenizer, generate_with_stop_strings,
};
use rlvr_objectives::StepCredit;

use crate::env::{CallCheck, Environment, Reply};
use crate::error::{Error, Result};

/// The budgets and formatting of an episode.
#[derive(Debug, Clone)]
pub struct EpisodeSettings {
    /// Most policy turns.
    pub max_turns: usize,
    /// Most response tokens (policy and observation tokens together) after the prompt.
    pub max_tokens: usize,
    /// minijinja template of an observation's text, with `observation` in scope.
    pub observation_template: String,
}

/// One row's episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    /// Everything after the prompt: policy turns and observations, in order.
    pub response: Vec<u32>,
    /// Per response token: `true` for the policy's own tokens (trained on).
    pub loss_mask: Vec<bool>,
    /// Per response token: the sampling log-prob (T = 1, as [`rlvr_models::Generation`]) of
    /// the policy's tokens, 0 on observation tokens.
    pub logp: Vec<f32>,
    /// Why the last policy turn stopped.
    pub finish: FinishReason,
    /// The answer turn's text when the environment ended the episode; `None` when a budget
    /// did.
    pub final_text: Option<String>,
    /// Policy turns taken.
    pub turns: usize,
    /// The environment's turn rewards, summed.
    pub env_reward: f32,
    /// Every tool call written, in order, with its checks.
    pub calls: Vec<CallCheck>,
    /// Per policy turn: its response tokens and, when the environment tracks beliefs, its
    /// belief check (ReBel's step credit); the check's fields are empty otherwise.
    pub steps: Vec<StepCredit>,
}

impl Trajectory {
    fn new() -> Self {
        Self {
            response: Vec::new(),
            loss_mask: Vec::new(),
            logp: Vec::new(),
            finish: FinishReason::Stop,
            final_text: None,
            turns: 0,
            env_reward: 0.0,
            calls: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// Tool calls that were not executed (malformed, invalid, or failed).
    pub fn failed_calls(&self) -> usize {
        self.calls.iter().filter(|c| !c.executed).count()
    }

    fn push(&mut self, ids: &[u32], logp: Option<&[f32]>) {
        self.response.extend_from_slice(ids);
        self.loss_mask
            .extend(std::iter::repeat_n(logp.is_some(), ids.len()));
        match logp {
            Some(lp) => self.logp.extend_from_slice(lp),
            None => self.logp.extend(std::iter::repeat_n(0.0, ids.len())),
        }
    }
}

/// Samples one turn for the rows of an episode batch that are still playing.
pub trait TurnSampler {
    /// One generation per context (context `j` belongs to episode row `rows[j]`), seeded as row
    /// `j` of `rlvr_models::generate(_, contexts, cfg, seed)`, ending at a stop token, at the
    /// first of `stops` written, or after `cfg.max_new_tokens`.
    ///
    /// # Errors
    /// The sampler's: a tokenizer or a server failure.
    fn sample(
        &mut self,
        rows: &[usize],
        contexts: &[Vec<u32>],
        cfg: &GenerationConfig,
        stops: &[String],
        seed: u64,
    ) -> Result<Vec<Generation>>;
}

/// Turns sampled by a policy in this process.
pub struct LocalTurns<'a> {
    /// The no-grad policy.
    pub policy: &'a CausalLm,
    /// Its tokenizer (stop strings are matched on decoded text).
    pub tokenizer: &'a Tokenizer,
}

impl TurnSampler for LocalTurns<'_> {
    fn sample(
        &mut self,
        _rows: &[usize],
        contexts: &[Vec<u32>],
        cfg: &GenerationConfig,
        stops: &[String],
        seed: u64,
    ) -> Result<Vec<Generation>> {
        Ok(generate_with_stop_strings(
            self.policy,
            self.tokenizer,
            contexts,
            cfg,
            stops,
            seed,
        )?)
    }
}

/// Renders observations with the configured template (`env.observation_template`).
pub struct ObservationFormat {
    env: minijinja::Environment<'static>,
}

impl ObservationFormat {
    /// The format of template `source`, with `observation` in scope.
    ///
    /// # Errors
    /// [`Error::Config`] naming `env.observation_template` when it does not parse.
    pub fn new(source: &str) -> Result<Self> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.add_template_owned("observation", source.to_owned())
            .map_err(|e| Error::Config(format!("env.observation_template: {e}")))?;
        Ok(Self { env })
    }

    /// The text of `observation` as the policy reads it.
    ///
    /// # Errors
    /// [`Error::Config`] when the template does not render (e.g. an undefined variable).
    pub fn render(&self, observation: &str) -> Result<String> {
        let t = self.env.get_template("observation").expect("added in new");
        t.render(minijinja::context! { observation })
            .map_err(|e| Error::Config(format!("env.observation_template: {e}")))
    }
}

/// Plays one episode per row: `envs[i]` (already reset) against the policy from `prompts[i]`,
/// its turns sampled by `sampler`. `gen_cfg.max_new_tokens` is the per-turn limit; turn 0 samples with `seed`
/// itself (so a one-turn episode draws the tokens [`rlvr_models::generate`] draws), later
/// turns with seeds mixed from it.
///
/// # Errors
/// The sampler's, a tokenizer failure, or an observation template that does not render.
pub fn run_episodes(
    sampler: &mut dyn TurnSampler,
    tokenizer: &Tokenizer,
    envs: &mut [Box<dyn Environment>],
    prompts: &[Vec<u32>],
    gen_cfg: &GenerationConfig,
    settings: &EpisodeSettings,
    seed: u64,
) -> Result<Vec<Trajectory>> {
    assert_eq!(envs.len(), prompts.len(), "one environment per row");
    let format = ObservationFormat::new(&settings.observation_template)?;
    // Every row plays the same kind of environment.
    let stops = envs.first().map(|e| e.stop_strings()).unwrap_or_default();
    let mut out: Vec<Trajectory> = prompts.iter().map(|_| Trajectory::new()).collect();
    let mut playing: Vec<usize> = (0..prompts.len()).collect();
    for turn in 0..settings.max_turns {
        if playing.is_empty() {
            break;
        }
        let room = playing
            .iter()
            .map(|&i| settings.max_tokens.saturating_sub(out[i].response.len()))
            .max()
            .unwrap_or(0);
        let cfg = GenerationConfig {
            max_new_tokens: gen_cfg.max_new_tokens.min(room),
            ..gen_cfg.clone()
        };
        if cfg.max_new_tokens == 0 {
            break;
        }
        let contexts: Vec<Vec<u32>> = playing
            .iter()
            .map(|&i| [prompts[i].as_slice(), &out[i].response].concat())
            .collect();
        // Turn 0 keeps the seed (rows then draw what the plain path draws); later turns
        // move it by a multiple of the golden-ratio constant (rows mix it again: row_seed).
        let turn_seed = seed.wrapping_add((turn as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let gens = sampler.sample(&playing, &contexts, &cfg, &stops, turn_seed)?;
        let mut still = Vec::with_capacity(playing.len());
        for (&i, g) in playing.iter().zip(gens) {
            let t = &mut out[i];
            // A row with less room than the batch's limit keeps only what fits.
            let keep = g.tokens.len().min(settings.max_tokens - t.response.len());
            let start = t.response.len();
            t.push(&g.tokens[..keep], Some(&g.logprobs[..keep]));
            t.finish = if keep < g.tokens.len() {
                FinishReason::Length
            } else {
                g.finish_reason
            };
            t.turns += 1;
            let text = tokenizer.decode_skip_special(&g.tokens[..keep])?;
            let reply = envs[i].step(&text);
            t.env_reward += reply.reward;
            t.calls.extend(reply.calls);
            let belief = reply.belief.unwrap_or_default();
            t.steps.push(StepCredit {
                start,
                end: t.response.len(),
                key: belief.key,
                state: belief.state,
                task: belief.task,
                format_ok: belief.format_ok,
            });
            match reply.reply {
                Reply::Final => t.final_text = Some(envs[i].answer_text(&text).to_string()),
                Reply::Observation(obs) => {
                    let ids = tokenizer.encode(&format.render(&obs)?)?;
                    let fits = t.response.len() + ids.len() < settings.max_tokens;
                    if fits && turn + 1 < settings.max_turns {
                        t.push(&ids, None);
                        still.push(i);
                    }
                }
            }
        }
        playing = still;
    }
    Ok(out)
}
