//! The load-time checks of a run configuration: ranges serde cannot express, and combinations
//! that would be accepted and then fail or do nothing inside a run. Each refusal names the key
//! and what is missing, so a bad run stops before the warm start.

use rlvr_objectives::TisMode;

use super::RunConfig;
use crate::error::{Error, Result};

impl RunConfig {
    /// Checks the values that serde cannot, and refuses combinations that cannot work.
    ///
    /// # Errors
    /// [`Error::Config`] naming the offending key.
    pub fn validate(&self) -> Result<()> {
        self.check_ranges()?;
        self.check_objective()?;
        self.check_stages()
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
        let truncated = self.rollout.top_p < 1.0 || self.rollout.top_k > 0;
        if k.tis != TisMode::Off && !truncated {
            return bad(
                "objective.tis corrects for a sampler that differs from the trained policy, and \
                 with rollout.top_p = 1 and rollout.top_k = 0 the sampler is the policy \
                 (softmax(logits / temperature)): every weight would be 1. Set rollout.top_p < 1 \
                 or rollout.top_k > 0, or objective.tis = \"off\"",
            );
        }
        if k.tis == TisMode::Mask && k.tis_cap >= 1.0 {
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
        Ok(())
    }
}

fn bad(what: &str) -> Result<()> {
    Err(Error::Config(what.to_string()))
}
