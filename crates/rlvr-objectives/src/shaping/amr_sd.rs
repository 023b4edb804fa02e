//! AMR-SD: token multipliers from the Causal Information Gain of a self-generated reflection
//! hint, behind an asymmetric ReLU gate, annealed over the run.
//!
//! # Paper
//! Wei, Jian, Deng, Wang, Chai, Hu, Lin, Zhang, Yin, "AMR-SD: Asymmetric Meta-Reflective
//! Self-Distillation for Token-Level Credit Assignment",
//! [arXiv 2605.18529](https://arxiv.org/abs/2605.18529) (no code found). Specification:
//! `methods-extra.md` §16.
//!
//! # Formula \[PROPOSED] (spec steps 2–4; the sources give the design, not the equations)
//! CIG_{i,t} = ℓ^hint_{i,t} − ℓ_{i,t}: the policy's log-prob of response token t after
//! `prompt ⊕ hint_i` minus the sampling policy's. With the sequence advantage A_i:
//! - A_i > 0: m_t = 1 + λ_k·min(m_max, ReLU(CIG_t − τ⁺));
//! - A_i < 0: m_t = 1 + λ_k·min(m_max, ReLU(−CIG_t − τ⁻));
//! - A_i = 0 or no hint for the row: m_t = 1.
//!
//! Â_{i,t} = A_i·m_t: the sign and the base reward never change and most m_t are 1. The stage
//! returns A_i (m_t − 1) as token offsets (composable with CEPO's). λ_k = λ₀·max(0, 1 − k/K)
//! with K = `anneal_steps`, else half of the run's steps. The reflection that writes the hints
//! (spec step 1) is the trainer's; its knobs live here so that `[stages.amr_sd]` is one table.

use serde::{Deserialize, Serialize};

use crate::error::{Result, ensure};

/// Placeholders of the reflection templates, filled by the trainer.
pub mod placeholders {
    /// The problem (the rendered prompt text).
    pub const PROBLEM: &str = "{problem}";
    /// The verifier's result for the rollout, in words.
    pub const VERDICT: &str = "{verdict}";
    /// One correct rollout of the same group, or "(none)".
    pub const PEER: &str = "{peer}";
    /// The rollout under reflection.
    pub const RESPONSE: &str = "{response}";
    /// Phase 1's diagnosis (in the hint template).
    pub const DIAGNOSIS: &str = "{diagnosis}";
    /// The accepted hint (in the context template).
    pub const HINT: &str = "{hint}";
}

/// AMR-SD knobs (spec §16), all **\[PROPOSED]**: the gate and annealing (read by
/// [`amr_sd`]) and the reflection (read by the trainer: generation length, per-group hints,
/// leakage retries, the templates).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AmrSdConfig {
    /// τ⁺, the CIG a positive rollout's token must exceed before it is amplified (default 0.5;
    /// a negative value also amplifies tokens the hint made less likely).
    pub tau_pos: f64,
    /// τ⁻, the −CIG a negative rollout's token must exceed (default 1.0: stricter on negatives).
    pub tau_neg: f64,
    /// m_max, the cap of the gated excess, so m_t ≤ 1 + λ·m_max (default 1).
    pub m_max: f64,
    /// λ₀, the gate's weight at step 0 (default 0.5).
    pub lambda0: f64,
    /// K_anneal, steps over which λ decays linearly to 0; absent: half of the run's steps.
    pub anneal_steps: Option<u64>,
    /// One hint per group (from its worst rollout) instead of one per rollout (default false).
    pub per_group: bool,
    /// The longest diagnosis and the longest hint, in tokens (default 128).
    pub hint_max_tokens: usize,
    /// Regenerations of a hint that states the gold answer before it is dropped (default 2).
    pub max_regenerations: usize,
    /// Phase 1 (diagnose): the reflection prompt, with `{problem}`, `{verdict}`, `{peer}` and
    /// `{response}`.
    pub diagnose_template: String,
    /// Phase 2 (abstract): the prompt for a question-style hint, with `{problem}` and
    /// `{diagnosis}`.
    pub hint_template: String,
    /// The teacher's context between the prompt and the response, with `{hint}`.
    pub context_template: String,
}

impl Default for AmrSdConfig {
    fn default() -> Self {
        Self {
            tau_pos: 0.5,
            tau_neg: 1.0,
            m_max: 1.0,
            lambda0: 0.5,
            anneal_steps: None,
            per_group: false,
            hint_max_tokens: 128,
            max_regenerations: 2,
            diagnose_template: "Problem: {problem}\nAttempt: {response}\nVerifier: {verdict}\n\
                                A correct attempt: {peer}\nWhat went right or wrong in the \
                                attempt, and why?\nDiagnosis:"
                .into(),
            hint_template: "Problem: {problem}\nDiagnosis: {diagnosis}\nTurn the diagnosis into \
                            one short question that guides a solver, without the final \
                            answer.\nHint:"
                .into(),
            context_template: " Hint: {hint}\n".into(),
        }
    }
}

impl AmrSdConfig {
    /// Checks the ranges and that every template holds the placeholder it exists for.
    pub fn validate(&self) -> Result<()> {
        for (field, v) in [
            ("amr_sd.tau_pos", self.tau_pos),
            ("amr_sd.tau_neg", self.tau_neg),
        ] {
            ensure(v.is_finite(), field, v, "must be a finite number")?;
        }
        ensure(
            self.m_max.is_finite() && self.m_max > 0.0,
            "amr_sd.m_max",
            self.m_max,
            "must be > 0",
        )?;
        ensure(
            self.lambda0.is_finite() && self.lambda0 >= 0.0,
            "amr_sd.lambda0",
            self.lambda0,
            "must be >= 0",
        )?;
        ensure(
            self.anneal_steps != Some(0),
            "amr_sd.anneal_steps",
            0,
            "must be >= 1 (leave it out for half of the run's steps)",
        )?;
        ensure(
            self.hint_max_tokens >= 1,
            "amr_sd.hint_max_tokens",
            self.hint_max_tokens,
            "must be >= 1",
        )?;
        ensure(
            self.diagnose_template.contains(placeholders::RESPONSE),
            "amr_sd.diagnose_template",
            &self.diagnose_template,
            "must contain {response}, the rollout under reflection",
        )?;
        ensure(
            self.hint_template.contains(placeholders::DIAGNOSIS),
            "amr_sd.hint_template",
            &self.hint_template,
            "must contain {diagnosis}, phase 1's output",
        )?;
        ensure(
            self.context_template.contains(placeholders::HINT),
            "amr_sd.context_template",
            &self.context_template,
            "must contain {hint}, where the hint goes",
        )
    }

    /// K_anneal: `anneal_steps`, else half of `run_steps` (at least 1).
    pub fn anneal_horizon(&self, run_steps: u64) -> u64 {
        self.anneal_steps.unwrap_or(run_steps / 2).max(1)
    }

    /// λ_k = λ₀·max(0, 1 − k/K_anneal) at step `step` (0-based) of a run of `run_steps`.
    pub fn lambda(&self, step: u64, run_steps: u64) -> f64 {
        let k = self.anneal_horizon(run_steps) as f64;
        self.lambda0 * (1.0 - step as f64 / k).max(0.0)
    }

    /// The teacher's context for a hint.
    pub fn context(&self, hint: &str) -> String {
        self.context_template.replace(placeholders::HINT, hint)
    }
}

/// m_t for one response: the asymmetric ReLU gate on `cig` (one value per token) for the sign
/// of `advantage`, at weight `lambda`; all 1 when A = 0.
pub fn amr_sd_multipliers(cig: &[f32], advantage: f32, lambda: f64, cfg: &AmrSdConfig) -> Vec<f64> {
    cig.iter()
        .map(|&c| {
            let c = f64::from(c);
            let excess = if advantage > 0.0 {
                c - cfg.tau_pos
            } else if advantage < 0.0 {
                -c - cfg.tau_neg
            } else {
                0.0
            };
            1.0 + lambda * excess.max(0.0).min(cfg.m_max)
        })
        .collect()
}

/// AMR-SD's diagnostics over one step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AmrSdStats {
    /// Rows with a hint.
    pub hint_rows: usize,
    /// Share of the tokens of hinted rows with A ≠ 0 whose m_t > 1.
    pub gated_frac: f64,
    /// Mean m_t over the same tokens (1 when there are none).
    pub m_mean: f64,
    /// Mean CIG over the tokens of hinted rows with A > 0 (0 when there are none).
    pub cig_pos_mean: f64,
    /// Mean CIG over the tokens of hinted rows with A < 0 (0 when there are none).
    pub cig_neg_mean: f64,
}

/// Per-sequence token offsets A_i (m_t − 1) and the diagnostics. `hint_logp[i]` is ℓ^hint of
/// sequence i (one per response token), or empty when the row has no hint (its offsets are then
/// empty: m = 1); `logp[i]` is ℓ, the sampling policy's; `advantages[i]` is A_i.
///
/// # Panics
/// If a non-empty `hint_logp[i]` and `logp[i]` differ in length.
pub fn amr_sd(
    hint_logp: &[Vec<f32>],
    logp: &[Vec<f32>],
    advantages: &[f32],
    lambda: f64,
    cfg: &AmrSdConfig,
) -> (Vec<Vec<f32>>, AmrSdStats) {
    let mut s = AmrSdStats::default();
    let (mut n_gate, mut n_pos, mut n_neg) = (0usize, 0usize, 0usize);
    let mut m_sum = 0.0;
    let mut offsets = Vec::with_capacity(hint_logp.len());
    for ((hint, old), &a) in hint_logp.iter().zip(logp).zip(advantages) {
        if hint.is_empty() {
            offsets.push(Vec::new());
            continue;
        }
        assert_eq!(hint.len(), old.len(), "one hint log-prob per token");
        s.hint_rows += 1;
        let cig: Vec<f32> = hint.iter().zip(old).map(|(h, l)| h - l).collect();
        let m = amr_sd_multipliers(&cig, a, lambda, cfg);
        if a != 0.0 {
            n_gate += m.len();
            m_sum += m.iter().sum::<f64>();
            s.gated_frac += m.iter().filter(|&&x| x > 1.0).count() as f64;
            let c: f64 = cig.iter().map(|&x| f64::from(x)).sum();
            if a > 0.0 {
                s.cig_pos_mean += c;
                n_pos += cig.len();
            } else {
                s.cig_neg_mean += c;
                n_neg += cig.len();
            }
        }
        let a = f64::from(a);
        offsets.push(m.into_iter().map(|x| (a * (x - 1.0)) as f32).collect());
    }
    s.gated_frac /= n_gate.max(1) as f64;
    s.m_mean = if n_gate == 0 {
        1.0
    } else {
        m_sum / n_gate as f64
    };
    s.cig_pos_mean /= n_pos.max(1) as f64;
    s.cig_neg_mean /= n_neg.max(1) as f64;
    (offsets, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// λ₀ = 0.5, K = 4: 0.5, 0.375, 0.25, 0.125, 0, 0; without `anneal_steps` K is half the run
    /// (10 steps → K = 5: λ at step 5 is 0), and a one-step run still gets K = 1.
    #[test]
    fn lambda_anneals_to_zero_and_stops() {
        let cfg = AmrSdConfig {
            anneal_steps: Some(4),
            ..AmrSdConfig::default()
        };
        let l: Vec<f64> = (0..6).map(|k| cfg.lambda(k, 100)).collect();
        assert_eq!(l, [0.5, 0.375, 0.25, 0.125, 0.0, 0.0]);
        let half = AmrSdConfig::default();
        assert_eq!(half.anneal_horizon(10), 5);
        assert_eq!(half.lambda(5, 10), 0.0);
        assert_eq!(half.anneal_horizon(1), 1);
    }

    /// A > 0 with τ⁺ = 0.5, m_max = 1, λ = 0.5: CIG (0.4, 0.5, 1.0, 3.0) → excess (0, 0, 0.5,
    /// capped 1) → m = (1, 1, 1.25, 1.5). The same CIG on A < 0 (τ⁻ = 1) gates nothing; its
    /// negation (−0.4, −1.0, −1.5, −3.0) → (1, 1, 1.25, 1.5). A = 0 → all 1.
    #[test]
    fn the_gate_is_asymmetric_and_capped() {
        let cfg = AmrSdConfig::default();
        let cig = [0.4, 0.5, 1.0, 3.0];
        assert_eq!(
            amr_sd_multipliers(&cig, 2.0, 0.5, &cfg),
            [1.0, 1.0, 1.25, 1.5]
        );
        assert_eq!(amr_sd_multipliers(&cig, -2.0, 0.5, &cfg), [1.0; 4]);
        assert_eq!(
            amr_sd_multipliers(&[-0.4, -1.0, -1.5, -3.0], -2.0, 0.5, &cfg),
            [1.0, 1.0, 1.25, 1.5]
        );
        assert_eq!(amr_sd_multipliers(&cig, 0.0, 0.5, &cfg), [1.0; 4]);
    }
}
