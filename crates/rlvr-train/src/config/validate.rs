//! The load-time checks of a run configuration: ranges serde cannot express, and combinations
//! that would be accepted and then fail or do nothing inside a run. Each refusal names the key
//! and what is missing, so a bad run stops before the warm start.

use rlvr_models::WeightDtype;
use rlvr_objectives::TisMode;

use super::{RolloutEngine, RunConfig, ServerKind};
use crate::data::Rows;
use crate::data::template::check_template;
use crate::error::{Error, Result};

impl RunConfig {
    /// Checks the values that serde cannot, and refuses combinations that cannot work.
    ///
    /// # Errors
    /// [`Error::Config`] naming the offending key.
    pub fn validate(&self) -> Result<()> {
        self.check_ranges()?;
        self.check_data()?;
        self.check_staleness()?;
        self.check_objective()?;
        self.check_stages()?;
        self.check_engine()?;
        self.check_frozen_dtype()?;
        self.check_dense()?;
        self.check_task_rewards()?;
        self.check_env()?;
        self.check_rebel()?;
        self.check_binac()?;
        self.check_geox()?;
        self.check_scrl()?;
        self.check_smepo()?;
        self.check_lora()
    }

    /// `[smepo]`: its knobs, and hard-only guidance only where each plain group is judged
    /// before the step trains (not on a round sampled ahead by asynchronous rollouts).
    fn check_smepo(&self) -> Result<()> {
        let Some(smepo) = &self.smepo else {
            return Ok(());
        };
        smepo.validate()?;
        if smepo.prompts == crate::data::guidance::GuidedPrompts::Hard
            && self.rollout.max_staleness > 0
        {
            return bad(
                "smepo.prompts = \"hard\" needs rollout.max_staleness = 0 (a round sampled \
                 ahead is not judged hard or not before it is trained on)",
            );
        }
        Ok(())
    }

    /// `[env]`: budgets, a template that renders, and the parts of a run that assume one
    /// sampled turn per response (refused by key until they handle masked observations).
    fn check_env(&self) -> Result<()> {
        let Some(env) = &self.env else {
            if self.sft.mask_observations {
                return bad(
                    "sft.mask_observations = true needs [env]: the environment tells the \
                     completion's observations from the policy's turns",
                );
            }
            return Ok(());
        };
        if env.max_turns == 0 {
            return bad("env.max_turns must be at least 1");
        }
        if env.max_tokens == 0 {
            return bad("env.max_tokens must be at least 1");
        }
        if env.kind == super::EnvKind::Search {
            if env.top_k == 0 {
                return bad("env.top_k must be at least 1");
            }
            // The corpus is read when the run starts (`run::train`, before the warm start): a
            // path relative to where the config is loaded from need not resolve here.
            if env.corpus.is_none() {
                return bad(
                    "env.kind = \"search\" needs env.corpus (a JSON-lines file of {\"text\"} \
                     documents)",
                );
            }
        } else if env.corpus.is_some() {
            return bad(
                "env.corpus is the search environment's: set env.kind = \"search\" or remove it",
            );
        }
        let mut jinja = minijinja::Environment::new();
        jinja.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        jinja
            .render_str(
                &env.observation_template,
                minijinja::context! { observation => "x" },
            )
            .map_err(|e| Error::Config(format!("env.observation_template: {e}")))?;
        if env.tier.is_some() && env.reward != super::EnvReward::Tier {
            return bad("[env.tier] weights TIER's reward: set env.reward = \"tier\" or remove it");
        }
        if let Some(tier) = env.tier() {
            tier.check().map_err(Error::Config)?;
            if env.kind == super::EnvKind::SingleTurn {
                return bad(
                    "env.reward = \"tier\" scores tool calls, and env.kind = \"single_turn\" \
                     has no tools: choose an environment with tools or env.reward = \"verifier\"",
                );
            }
        }
        if self.rollout.max_staleness > 0 {
            return bad(
                "[env] episodes are not prefetched: set rollout.max_staleness = 0 or remove [env]",
            );
        }
        let per_token = [
            ("stages.srar", self.stages.srar.is_some()),
            ("stages.cepo", self.stages.cepo.is_some()),
            ("stages.oppo", self.stages.oppo.is_some()),
            ("stages.amr_sd", self.stages.amr_sd.is_some()),
            ("stages.delta", self.stages.delta.is_some()),
        ];
        if let Some((key, _)) = per_token.iter().find(|(_, on)| *on) {
            return Err(Error::Config(format!(
                "{key} assigns credit to every response token, and an [env] episode's response \
                 holds the environment's observations too: remove [{key}] or [env]"
            )));
        }
        if let rlvr_verifiers::VerifierConfig::Code(c) = &self.verifier
            && c.dense.is_some()
        {
            return bad(
                "verifier.dense maps line penalties to the tokens of one response, and an [env] \
                 episode's response holds several turns: remove [verifier.dense] or [env]",
            );
        }
        Ok(())
    }

    /// `[stages.rebel]` needs episodes whose turns carry belief checks.
    fn check_rebel(&self) -> Result<()> {
        if self.stages.rebel.is_none() {
            return Ok(());
        }
        match &self.env {
            Some(env) if env.kind.tracks_beliefs() => Ok(()),
            _ => bad(
                "stages.rebel credits each turn's stated belief, so it needs an [env] whose \
                 turns carry belief checks: set env.kind = \"guess_number\" or remove \
                 [stages.rebel]",
            ),
        }
    }

    /// `[binac]`: its knobs, and the rollout paths its nested generation is written for (local,
    /// synchronous, one turn per prompt).
    fn check_binac(&self) -> Result<()> {
        let Some(binac) = &self.binac else {
            return Ok(());
        };
        binac.validate().map_err(|e| Error::Config(e.to_string()))?;
        if self.env.is_some() {
            return bad(
                "[binac] revises one-turn drafts, and [env] rolls out episodes: remove one",
            );
        }
        if self.rollout.engine != super::RolloutEngine::Local {
            return bad(
                "[binac] samples its feedbacks and revisions locally: set rollout.engine = \
                 \"local\" or remove [binac]",
            );
        }
        if self.rollout.max_staleness > 0 {
            return bad("[binac] scores the critic against the current actor: set \
                 rollout.max_staleness = 0 or remove [binac]");
        }
        Ok(())
    }

    /// `[geox]`: its knobs, the grid-program verifier whose records it proposes for, and the
    /// rollout paths its nested generation is written for.
    fn check_geox(&self) -> Result<()> {
        let Some(geox) = &self.geox else {
            return Ok(());
        };
        geox.validate().map_err(|e| Error::Config(e.to_string()))?;
        if self.verifier.kind() != rlvr_verifiers::Kind::GridProgram {
            return bad(
                "[geox] proposes and solves grid-program tasks: set [verifier] kind = \
                 \"grid_program\" or remove [geox]",
            );
        }
        if self.env.is_some() || self.binac.is_some() {
            return bad("[geox] self-plays one-turn tasks: remove [env] and [binac], or [geox]");
        }
        if self.rollout.engine != super::RolloutEngine::Local {
            return bad(
                "[geox] samples the answers to proposed tasks locally: set rollout.engine = \
                 \"local\" or remove [geox]",
            );
        }
        if self.rollout.max_staleness > 0 {
            return bad("[geox] scores proposals against the current solver: set \
                 rollout.max_staleness = 0 or remove [geox]");
        }
        if self.rollout.dynamic_sampling {
            return bad(
                "rollout.dynamic_sampling drops groups by the verifier's validity rewards \
                 before [geox] replaces the proposers' with learnability: turn it off or \
                 remove [geox]",
            );
        }
        Ok(())
    }

    /// `[stages.scrl]` reads the subproblems' answers from one sampled response per prompt.
    fn check_scrl(&self) -> Result<()> {
        if self.stages.scrl.is_none() {
            return Ok(());
        }
        if self.env.is_some() {
            return bad(
                "stages.scrl finds each subproblem's answer in a one-turn response, and [env] \
                 rolls out multi-turn episodes: remove one of them",
            );
        }
        if self.binac.is_some() {
            return bad(
                "stages.scrl credits the drafts' subproblems and [binac] trains revisions with \
                 the objective's estimator: remove one of them",
            );
        }
        Ok(())
    }

    /// `[verifier.dense]` (the dense code reward): its knobs, and a place where its line
    /// penalties reach the tokens (the top-level code verifier, not a composite part).
    fn check_dense(&self) -> Result<()> {
        use rlvr_verifiers::VerifierConfig;
        match &self.verifier {
            VerifierConfig::Code(c) => c.check_dense().map_err(|e| Error::Config(e.to_string())),
            VerifierConfig::Composite(c) => {
                for (i, p) in c.parts.iter().enumerate() {
                    if let VerifierConfig::Code(code) = &p.verifier
                        && code.dense.is_some()
                    {
                        return Err(Error::Config(format!(
                            "verifier.parts[{i}].dense: the dense code reward's line penalties \
                             reach the tokens only from the top-level code verifier: use \
                             [verifier] kind = \"code\" with [verifier.dense]"
                        )));
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// `[verifier] kind = "k2v"` or `"ecpo"`: its weights (and for k2v its penalty and
    /// criteria); each refusal names the key.
    fn check_task_rewards(&self) -> Result<()> {
        match &self.verifier {
            rlvr_verifiers::VerifierConfig::K2v(c) => {
                c.validate().map_err(|e| Error::Config(e.to_string()))
            }
            rlvr_verifiers::VerifierConfig::Ecpo(c) => {
                c.validate().map_err(|e| Error::Config(e.to_string()))
            }
            _ => Ok(()),
        }
    }

    /// The remote rollout engine's keys: endpoints it can reach with this client, positive
    /// limits, and no endpoint list that the local engine would ignore.
    fn check_engine(&self) -> Result<()> {
        let r = &self.rollout;
        if r.engine == RolloutEngine::Local {
            if !r.endpoints.is_empty() {
                return bad(
                    "rollout.endpoints is set and rollout.engine = \"local\" samples in this \
                     process (the endpoints would be ignored): set rollout.engine = \"openai\" \
                     or remove rollout.endpoints",
                );
            }
            return Ok(());
        }
        if r.endpoints.is_empty() {
            return bad(
                "rollout.engine = \"openai\" samples on inference servers and \
                 rollout.endpoints is empty: list them, e.g. \
                 rollout.endpoints = [\"http://127.0.0.1:8000\"]",
            );
        }
        for (i, e) in r.endpoints.iter().enumerate() {
            let host = e.strip_prefix("http://").unwrap_or("");
            let host = host.strip_suffix('/').unwrap_or(host);
            if host.is_empty() || host.contains('/') {
                return Err(Error::Config(format!(
                    "rollout.endpoints[{i}] = {e:?}: expected http://HOST:PORT (plain HTTP, \
                     no path; the client appends /v1/completions and \
                     /update_weights_from_disk)"
                )));
            }
        }
        if r.concurrency == 0 {
            return bad("rollout.concurrency must be at least 1 (requests in flight)");
        }
        if !(r.request_timeout_s.is_finite() && r.request_timeout_s > 0.0) {
            return bad("rollout.request_timeout_s must be a positive number of seconds");
        }
        if r.sync_every == 0 {
            return bad(
                "rollout.sync_every must be at least 1 (optimizer steps between weight syncs)",
            );
        }
        Ok(())
    }

    /// Asynchronous rollouts train on samples from older weights: the correction must be on
    /// and possible (the samples' log-probs are the untruncated T = 1 sampler's), and the
    /// servers must get every step's weights (the staleness bound is the pipeline's).
    fn check_staleness(&self) -> Result<()> {
        let r = &self.rollout;
        if r.max_staleness == 0 {
            return Ok(());
        }
        let k = r.max_staleness;
        if self.objective.common().tis == TisMode::Off {
            return Err(Error::Config(format!(
                "rollout.max_staleness = {k} trains on samples from weights up to {k} steps \
                 old, and objective.tis = \"off\" would treat them as on-policy: set \
                 objective.tis = \"truncate\" (or \"mask\")"
            )));
        }
        if r.temperature != 1.0 || r.top_p < 1.0 || r.top_k > 0 {
            return Err(Error::Config(format!(
                "rollout.max_staleness = {k} corrects stale samples with the log-probs they were \
                 sampled with, which are the untruncated policy's at temperature 1: set \
                 rollout.temperature = 1, rollout.top_p = 1 and rollout.top_k = 0 (got {}, {}, \
                 {})",
                r.temperature, r.top_p, r.top_k
            )));
        }
        if r.engine == RolloutEngine::Openai && r.server != ServerKind::RlvrServe {
            return Err(Error::Config(format!(
                "rollout.max_staleness = {k} needs each reply's weights version, which only \
                 rollout.server = \"rlvr-serve\" reports (got \"{}\")",
                r.server.name()
            )));
        }
        if r.engine == RolloutEngine::Openai && r.sync_every != 1 {
            return Err(Error::Config(format!(
                "rollout.max_staleness = {k} bounds how old the servers' weights may be, and \
                 rollout.sync_every = {} would leave them older: set rollout.sync_every = 1",
                r.sync_every
            )));
        }
        Ok(())
    }

    /// A narrower storage type for frozen weights needs frozen weights: a reference model or
    /// a LoRA base.
    fn check_frozen_dtype(&self) -> Result<()> {
        let dtype = self.train.frozen_dtype;
        let reference = self.train.reference_model || self.objective.needs_reference();
        if dtype != WeightDtype::F32 && !reference && self.lora.is_none() {
            return Err(Error::Config(format!(
                "train.frozen_dtype = \"{}\" stores the weights the run does not train \
                 narrower (a reference model, the frozen base under [lora]), and this run has \
                 neither (no KL term, train.reference_model = false, no [lora]): remove \
                 train.frozen_dtype",
                dtype.name()
            )));
        }
        Ok(())
    }

    fn check_lora(&self) -> Result<()> {
        let Some(lora) = &self.lora else {
            return Ok(());
        };
        lora.validate().map_err(|e| match e {
            rlvr_models::Error::InvalidConfig { field, reason } => {
                Error::Config(format!("lora.{field}: {reason}"))
            }
            other => Error::Config(format!("lora: {other}")),
        })?;
        if self.stages.dgg.is_some() {
            return bad(
                "stages.dgg gates on the LM head's gradient energy, and under [lora] the head is \
                 frozen (no gradient): remove [stages.dgg] or [lora]",
            );
        }
        Ok(())
    }

    fn check_ranges(&self) -> Result<()> {
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
        if self.rollout.max_new_tokens == 0 {
            return bad("rollout.max_new_tokens must be positive");
        }
        if !(self.rollout.temperature.is_finite() && self.rollout.temperature > 0.0) {
            return bad(
                "rollout.temperature must be a positive number (the policy is softmax(logits / T))",
            );
        }
        if !(self.rollout.top_p > 0.0 && self.rollout.top_p <= 1.0) {
            return bad("rollout.top_p must be in (0, 1]");
        }
        if self.eval.k == 0 {
            return bad("eval.k must be at least 1 (1 = greedy pass@1 only)");
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
            .map_err(|e| Error::Config(format!("g2d: {e}")))
    }

    fn check_data(&self) -> Result<()> {
        let d = &self.data;
        for (key, split) in [
            ("train_split", &d.train_split),
            ("eval_split", &d.eval_split),
        ] {
            if split.trim().is_empty() || split.contains(['/', '\\']) {
                return Err(Error::Config(format!(
                    "data.{key} = {split:?}: a split name (`train`, `test`, `validation`, ...) \
                     is needed to pick a directory's files"
                )));
            }
        }
        let fields = [
            ("prompt_field", &d.prompt_field),
            ("messages_field", &d.messages_field),
            ("answer_field", &d.answer_field),
            ("id_field", &d.id_field),
        ];
        for (key, path) in fields {
            let malformed = path.split('.').any(|part| part.trim().is_empty());
            if malformed && !(path.is_empty() && key != "messages_field") {
                return Err(Error::Config(format!(
                    "data.{key} = {path:?}: a field name, or a dotted path `a.b` into nested \
                     objects, is needed{}",
                    if key == "messages_field" {
                        " (chat turns are read from it; the default is \"messages\")"
                    } else {
                        " (or \"\" for the default)"
                    }
                )));
            }
        }
        for (key, rows) in [("train_rows", &d.train_rows), ("eval_rows", &d.eval_rows)] {
            Rows::parse(rows).map_err(|e| Error::Config(format!("data.{key} = {e}")))?;
        }
        if !d.prompt_template.is_empty() {
            check_template(&d.prompt_template)
                .map_err(|e| Error::Config(format!("data.prompt_template: {e}")))?;
        }
        let same = |a: &str, b: &str| !a.is_empty() && a == b;
        if same(&d.prompt_field, &d.messages_field) {
            return Err(Error::Config(format!(
                "data.prompt_field and data.messages_field are both {:?}: one field cannot be \
                 both the text prompt and the chat turns",
                d.prompt_field
            )));
        }
        for (key, other) in [
            ("prompt_field", &d.prompt_field),
            ("messages_field", &d.messages_field),
        ] {
            if same(&d.answer_field, other) {
                return Err(Error::Config(format!(
                    "data.answer_field and data.{key} are both {other:?}: the gold answer would \
                     be the prompt itself"
                )));
            }
        }
        Ok(())
    }

    /// Gradient accumulation is exact when every micro-batch divides by the mini-batch's
    /// response-token counts; losses that remove tokens by the current policy's ratios or draw
    /// random numbers per batch shape would see a different loss when split.
    fn check_micro_batches(&self) -> Result<()> {
        let kind = self.objective.name();
        let split_changes_loss = match kind {
            "mu_grpo" => Some("its veto removes tokens by the current ratios"),
            "nsr" => Some("its random draws are made per batch shape"),
            _ if self.objective.common().tis == TisMode::Mask => {
                Some("objective.tis = \"mask\" removes tokens from the denominators")
            }
            _ => None,
        };
        match split_changes_loss {
            Some(why) => Err(Error::Config(format!(
                "train.micro_batch_tokens = {} splits mini-batches for gradient accumulation, \
                 and objective.kind = \"{kind}\" cannot be split exactly ({why}): set \
                 train.micro_batch_tokens = 0 or use train.mini_batches",
                self.train.micro_batch_tokens
            ))),
            None => Ok(()),
        }
    }

    fn check_objective(&self) -> Result<()> {
        self.objective
            .validate()
            .map_err(|e| Error::Config(format!("objective: {e}")))?;
        let k = self.objective.common();
        let max_new = self.rollout.max_new_tokens;
        if k.overlong_penalty != 0.0
            && k.overlong_max_len > 0
            && k.overlong_max_len.saturating_sub(k.overlong_cache) >= max_new
        {
            return Err(Error::Config(format!(
                "objective.overlong_max_len = {} with objective.overlong_cache = {} penalizes \
                 only responses longer than {} tokens, and rollout.max_new_tokens = {max_new} \
                 caps them below that: the overlong penalty would never fire. DAPO's L_max is \
                 the longest response: set objective.overlong_max_len = {max_new} with \
                 objective.overlong_cache below it, or objective.overlong_max_len = 0 (off)",
                k.overlong_max_len,
                k.overlong_cache,
                k.overlong_max_len.saturating_sub(k.overlong_cache)
            )));
        }
        if k.kl_in_reward && k.kl_coef == 0.0 {
            return bad(
                "objective.kl_in_reward = true puts -kl_coef * KL into the reward, and \
                 objective.kl_coef = 0: set a positive kl_coef or kl_in_reward = false",
            );
        }
        if self.train.micro_batch_tokens > 0 {
            self.check_micro_batches()?;
        }
        let truncated = self.rollout.top_p < 1.0 || self.rollout.top_k > 0;
        // On a server at T = 1 without truncation the sampler's own log-probs come back with
        // the tokens (rlvr-serve reports them at T = 1): TIS corrects the server/trainer gap;
        // so do the samples of asynchronous rollouts, against the weights that drew them.
        let remote_sampler = (self.rollout.engine == RolloutEngine::Openai
            || self.rollout.max_staleness > 0)
            && self.rollout.temperature == 1.0;
        if k.tis != TisMode::Off && !truncated && !remote_sampler {
            return bad(
                "objective.tis corrects for a sampler that differs from the trained policy, and \
                 with rollout.top_p = 1 and rollout.top_k = 0 the sampler is the policy \
                 (softmax(logits / temperature)): every weight would be 1. Set rollout.top_p < 1 \
                 or rollout.top_k > 0, or objective.tis = \"off\" (with rollout.engine = \
                 \"openai\" at rollout.temperature = 1 the server's log-probs are the \
                 sampler's)",
            );
        }
        if k.tis == TisMode::Mask && k.tis_cap >= 1.0 && truncated {
            return bad(
                "objective.tis = \"mask\" drops tokens whose weight pi/pi_sampler exceeds \
                 objective.tis_cap, and truncated sampling only raises the sampler's \
                 probabilities (the weight is at most 1): set objective.tis_cap below 1",
            );
        }
        Ok(())
    }

    fn check_stages(&self) -> Result<()> {
        self.stages
            .validate()
            .map_err(|e| Error::Config(format!("stages: {e}")))?;
        if self.stages.pow3r.is_some() {
            return bad(
                "stages.pow3r re-weights per-criterion rubric scores, and no verifier of this \
                 trainer returns them (a verdict is one reward per response): remove \
                 [stages.pow3r]",
            );
        }
        if self.rollout.dynamic_sampling && self.stages.avspo.is_some() {
            return bad(
                "stages.avspo acts on collapsed groups (all rewards equal), which \
                 rollout.dynamic_sampling removes before the stages run: turn one of them off",
            );
        }
        if self.stages.delta.is_some() {
            use rlvr_objectives::Aggregation;
            let aggregation = self.objective.common().aggregation;
            if !matches!(
                aggregation,
                Aggregation::TokenMean | Aggregation::SeqMeanTokenMean
            ) {
                return Err(Error::Config(format!(
                    "stages.delta divides the surrogate by the sum of its token coefficients, \
                     which replaces a token count: objective.aggregation = {aggregation:?} has \
                     none; use \"token_mean\" or \"seq_mean_token_mean\", or remove \
                     [stages.delta]"
                )));
            }
        }
        let token_credit = [
            ("stages.cepo", self.stages.cepo.is_some()),
            ("stages.oppo", self.stages.oppo.is_some()),
            ("stages.amr_sd", self.stages.amr_sd.is_some()),
        ];
        let kind = self.verifier.kind();
        if let Some((key, _)) = token_credit.iter().find(|(_, on)| *on)
            && matches!(
                kind,
                rlvr_verifiers::Kind::Code | rlvr_verifiers::Kind::Rubric
            )
        {
            return Err(Error::Config(format!(
                "{key} needs the gold answer (in the policy's context, or to check hints for \
                 leakage), and the {kind:?} verifier's reference is not an answer: remove [{key}]"
            )));
        }
        Ok(())
    }
}

fn bad(what: &str) -> Result<()> {
    Err(Error::Config(what.to_string()))
}
