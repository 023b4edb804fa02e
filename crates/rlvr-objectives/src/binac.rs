//! Bi-NAC: a critic writes natural-language feedback on the actor's draft, the actor revises
//! with the feedback in context, and the critic is rewarded by the actor's improvement.
//!
//! # Paper
//! Singh, Sredharan, Chakraborty, Bedi, "RL with Learnable Textual Feedback: A Bilevel
//! Approach" (Bi-NAC), [arXiv 2605.24547](https://arxiv.org/abs/2605.24547), ICML 2026 (code
//! announced, not available). Specification: `methods-extra.md` §18.
//!
//! # The loop \[PROPOSED] (the paper's stated structure filled with standard choices)
//! For a draft y⁰ of prompt x with reward r⁰, the critic samples M feedbacks f_m ~ q(·|x, y⁰)
//! and for each the actor samples G' revisions y¹ ~ π(·|x, y⁰, f_m). The critic's reward is the
//! improvement it caused, less a length and an answer-leak penalty:
//!
//! R_c(f_m) = mean_j r(y¹_{m,j}) − r⁰ − λ_len·|f_m| / L_max − λ_leak·1[f_m states the answer].
//!
//! The feedbacks of one draft form a GRPO group (advantages from R_c) and the revisions of one
//! feedback another (advantages from their verifier rewards), estimated with the objective's own
//! estimator. The Stackelberg order (critic = leader, scored against the current actor, the
//! follower) is approximated by alternation: the actor trains every step, the critic's
//! feedbacks enter the loss on every K_a-th step only ([`critic_step`]). Actor and critic share
//! the policy's weights (the "same base" variant of the spec; no second model).

use serde::{Deserialize, Serialize};

use crate::advantage::{AdvantageConfig, compute_advantages};
use crate::error::{Error, Result, ensure};

/// Placeholders of the Bi-NAC templates, filled by the trainer.
pub mod placeholders {
    /// The problem (the prompt's text).
    pub const PROBLEM: &str = "{problem}";
    /// The actor's draft.
    pub const DRAFT: &str = "{draft}";
    /// The critic's feedback (in the revision template).
    pub const FEEDBACK: &str = "{feedback}";
}

/// Bi-NAC knobs (spec §18; every one **\[PROPOSED]** but M, G' and K_a, which are the spec's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BinacConfig {
    /// M, feedbacks the critic writes per draft (default 4; at least 2, a GRPO group).
    pub feedbacks: usize,
    /// G', revisions the actor writes per feedback (default 2; at least 2).
    pub revisions: usize,
    /// Drafts of each prompt's group that get feedback: the group's first ones (default 1).
    pub drafts_per_group: usize,
    /// K_a, actor steps per critic step: the feedbacks train on steps k with
    /// (k + 1) mod K_a = 0 (default 4; 1 trains the critic every step).
    pub actor_steps_per_critic_step: usize,
    /// L_max, the longest feedback in tokens (default 32).
    pub feedback_max_tokens: usize,
    /// λ_len, the penalty of a feedback of L_max tokens (linear in its length; default 0.1).
    pub length_penalty: f64,
    /// λ_leak, the penalty of a feedback that states the gold answer (default 1).
    pub leak_penalty: f64,
    /// The critic's prompt, with `{problem}` and `{draft}`.
    pub critic_template: String,
    /// The actor's revision prompt, with `{problem}`, `{draft}` and `{feedback}`.
    pub revision_template: String,
}

impl Default for BinacConfig {
    fn default() -> Self {
        // Upper case, no newline: readable by the bundled model's character tokenizer too.
        Self {
            feedbacks: 4,
            revisions: 2,
            drafts_per_group: 1,
            actor_steps_per_critic_step: 4,
            feedback_max_tokens: 32,
            length_penalty: 0.1,
            leak_penalty: 1.0,
            critic_template: "{problem}{draft} FEEDBACK:".into(),
            revision_template: "{problem}{draft} FEEDBACK:{feedback}; REVISED: {problem}".into(),
        }
    }
}

impl BinacConfig {
    /// Checks the counts, the penalties and that each template holds its placeholders.
    pub fn validate(&self) -> Result<()> {
        for (field, v) in [
            ("binac.feedbacks", self.feedbacks),
            ("binac.revisions", self.revisions),
        ] {
            ensure(v >= 2, field, v, "must be >= 2 (a GRPO group)")?;
        }
        for (field, v) in [
            ("binac.drafts_per_group", self.drafts_per_group),
            (
                "binac.actor_steps_per_critic_step",
                self.actor_steps_per_critic_step,
            ),
            ("binac.feedback_max_tokens", self.feedback_max_tokens),
        ] {
            ensure(v >= 1, field, v, "must be >= 1")?;
        }
        for (field, v) in [
            ("binac.length_penalty", self.length_penalty),
            ("binac.leak_penalty", self.leak_penalty),
        ] {
            ensure(v.is_finite() && v >= 0.0, field, v, "must be >= 0")?;
        }
        use placeholders as ph;
        let critic = &self.critic_template;
        ensure(
            critic.contains(ph::PROBLEM) && critic.contains(ph::DRAFT),
            "binac.critic_template",
            critic,
            "must contain {problem} and {draft}",
        )?;
        let revision = &self.revision_template;
        ensure(
            revision.contains(ph::PROBLEM) && revision.contains(ph::FEEDBACK),
            "binac.revision_template",
            revision,
            "must contain {problem} and {feedback}",
        )?;
        Ok(())
    }
}

/// Whether RL step `step` (0-based) trains the critic: every K_a-th step.
pub fn critic_step(cfg: &BinacConfig, step: u64) -> bool {
    (step + 1).is_multiple_of(cfg.actor_steps_per_critic_step.max(1) as u64)
}

/// One step's Bi-NAC rollouts as numbers, laid out draft-major: `draft_rewards[d]`,
/// `feedback_tokens[d·M + m]`, `leaked[d·M + m]`, `revision_rewards[(d·M + m)·G' + j]`.
#[derive(Debug, Clone, Copy)]
pub struct BinacRollouts<'a> {
    /// r⁰ of each draft given feedback.
    pub draft_rewards: &'a [f32],
    /// |f_m| in tokens, per feedback.
    pub feedback_tokens: &'a [usize],
    /// Whether each feedback states the gold answer.
    pub leaked: &'a [bool],
    /// r(y¹) of each revision.
    pub revision_rewards: &'a [f32],
}

/// What [`binac_advantages`] computes.
#[derive(Debug, Clone, PartialEq)]
pub struct BinacAdvantages {
    /// mean_j r(y¹_{m,j}) − r⁰, per feedback (before the penalties).
    pub improvement: Vec<f32>,
    /// R_c, per feedback.
    pub critic_rewards: Vec<f32>,
    /// The feedbacks' advantages (groups of M: one per draft).
    pub feedback_advantages: Vec<f32>,
    /// The revisions' advantages (groups of G': one per feedback).
    pub revision_advantages: Vec<f32>,
}

/// R_c per feedback and the GRPO-style advantages of the feedback and revision groups, with
/// the objective's estimator `adv` (see the module docs).
///
/// # Errors
/// [`Error::RaggedGroups`] when the slices do not have the draft-major layout of
/// [`BinacRollouts`], and the estimator's errors (a non-finite reward).
pub fn binac_advantages(
    cfg: &BinacConfig,
    adv: &AdvantageConfig,
    r: &BinacRollouts<'_>,
) -> Result<BinacAdvantages> {
    let (m, g) = (cfg.feedbacks, cfg.revisions);
    let feedbacks = r.draft_rewards.len() * m;
    for (len, group_size) in [
        (r.feedback_tokens.len(), feedbacks),
        (r.leaked.len(), feedbacks),
        (r.revision_rewards.len(), feedbacks * g),
    ] {
        if len != group_size {
            return Err(Error::RaggedGroups { len, group_size });
        }
    }
    let improvement: Vec<f32> = r
        .revision_rewards
        .chunks(g)
        .enumerate()
        .map(|(f, revs)| {
            let mean = revs.iter().map(|&x| f64::from(x)).sum::<f64>() / g as f64;
            (mean - f64::from(r.draft_rewards[f / m])) as f32
        })
        .collect();
    let critic_rewards: Vec<f32> = improvement
        .iter()
        .enumerate()
        .map(|(f, &imp)| {
            let len = r.feedback_tokens[f] as f64 / cfg.feedback_max_tokens.max(1) as f64;
            let leak = if r.leaked[f] { cfg.leak_penalty } else { 0.0 };
            (f64::from(imp) - cfg.length_penalty * len - leak) as f32
        })
        .collect();
    let feedback_advantages = if feedbacks == 0 {
        Vec::new()
    } else {
        compute_advantages(adv, &critic_rewards, m)?.values
    };
    let revision_advantages = if feedbacks == 0 {
        Vec::new()
    } else {
        compute_advantages(adv, r.revision_rewards, g)?.values
    };
    Ok(BinacAdvantages {
        improvement,
        critic_rewards,
        feedback_advantages,
        revision_advantages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// K_a = 4: steps 3, 7, 11 train the critic (0-based), the others do not; K_a = 1: all.
    #[test]
    fn the_critic_trains_every_k_a_th_step() {
        let cfg = BinacConfig::default();
        let due: Vec<u64> = (0..12).filter(|&s| critic_step(&cfg, s)).collect();
        assert_eq!(due, [3, 7, 11]);
        let every = BinacConfig {
            actor_steps_per_critic_step: 1,
            ..cfg
        };
        assert!((0..5).all(|s| critic_step(&every, s)));
    }

    /// One draft (r⁰ = 0), M = 2, G' = 2, no length penalty: revisions (1, 1) and (0, 1) give
    /// improvements 1 and 0.5; the second feedback leaks (λ_leak = 1), so R_c = (1, −0.5) and
    /// the feedback advantages are ±0.75 / 1.0607 = ±0.7071 (unbiased std of two values:
    /// their gap / √2).
    #[test]
    fn the_critic_is_paid_by_the_improvement() {
        let cfg = BinacConfig {
            feedbacks: 2,
            length_penalty: 0.0,
            ..BinacConfig::default()
        };
        let r = BinacRollouts {
            draft_rewards: &[0.0],
            feedback_tokens: &[3, 5],
            leaked: &[false, true],
            revision_rewards: &[1.0, 1.0, 0.0, 1.0],
        };
        let out = binac_advantages(&cfg, &AdvantageConfig::default(), &r).unwrap();
        assert_eq!(out.improvement, [1.0, 0.5]);
        assert_eq!(out.critic_rewards, [1.0, -0.5]);
        let s = std::f32::consts::FRAC_1_SQRT_2;
        for (got, want) in out.feedback_advantages.iter().zip([s, -s]) {
            assert!((got - want).abs() < 1e-5, "{:?}", out.feedback_advantages);
        }
        assert_eq!(out.revision_advantages[..2], [0.0, 0.0]);
        let bad = BinacRollouts {
            leaked: &[false],
            ..r
        };
        assert!(binac_advantages(&cfg, &AdvantageConfig::default(), &bad).is_err());
    }
}
