//! Optional advantage-shaping stages of one step (rewards → sequence advantages → post-hoc
//! shapers → update gating), selected in the `[stages]` table and applied in a fixed order.
//!
//! The trainer calls [`StagesConfig::apply`] once per step with host-side values and
//! [`StagesConfig::gate_update`] once per mini-batch update; the [`ShapingState`] holds
//! everything that persists between steps (CurveRL's pool, the ACR EMA, DGG's window) and is
//! saved with the checkpoint. Every stage is off by default, so an empty `[stages]` table gives
//! the base estimator's advantages unchanged (plus the ACR metrics).
//!
//! [`relex`] is the offline piece: RELEX's rank-r checkpoint extrapolation per flattened tensor.

pub mod acr;
pub mod amr_sd;
pub mod cepo;
pub mod curve_rl;
pub mod delta;
pub mod dgg;
pub mod edas;
pub mod lampo;
pub mod oppo;
mod pipeline;
pub mod pow3r;
pub mod rebel;
pub mod relex;
pub mod scrl;
pub mod span_credit;
pub mod srar;
mod stats;
pub mod tmn;

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

pub use acr::{AcrConfig, AcrStats, AvspoConfig, VirtualSamples, advantage_collapse, avspo_group};
pub use amr_sd::{AmrSdConfig, AmrSdStats, amr_sd, amr_sd_multipliers};
pub use cepo::{
    CepoConfig, CepoSchedule, CepoStats, cepo, cepo_offsets, cepo_token_advantages, cepo_weights,
};
pub use curve_rl::{CurveAdvantage, CurveRlConfig, CurveRlOutput, bin_weights, curve_rl};
pub use delta::{DeltaConfig, DeltaScope, DeltaStats, delta, delta_pool};
pub use dgg::{DggConfig, DggState};
pub use edas::{EdasConfig, EdasMode, EdasStats, edas};
pub use lampo::{LampoConfig, lampo_advantages, pair_weight, rouge_l_f1};
pub use oppo::{OppoConfig, OppoStats, OppoTrace, oppo, oppo_token_advantages};
pub use pow3r::{Pow3rConfig, Pow3rOutput, RubricSpec, pow3r};
pub use rebel::{RebelConfig, RebelStats, StepCredit, rebel};
pub use relex::{RelexConfig, RelexFit, relex_fit};
pub use scrl::{
    AnswerFormat, ScrlConfig, ScrlCurriculum, ScrlStats, SubproblemAnswers, locate_answers,
    prefix_rewards, scrl, segment_token_offsets,
};
pub use span_credit::span_token_offsets;
pub use srar::{
    RubricItemKind, SrarConfig, StepJudgment, StepOffset, format_reward, srar_offsets, step_deltas,
    step_headers, token_offsets,
};
pub use tmn::{TmnConfig, TmnOutput, tmn};

use crate::error::Result;

/// The optional stages, applied in this order (issue 8); all off by default.
///
/// 1. reward composition: `pow3r` (rubric weights) → `srar` (r_base) → `lampo.rouge_beta`
///    (ROUGE-L auxiliary reward);
/// 2. sequence advantages: ACR (always) → one estimator (`rebel`, `scrl`, `tmn`,
///    `lampo.pairwise`, `curve_rl.advantage = "centered"`, else the objective's own) → `avspo` on collapsed
///    groups → CurveRL and TMN weights;
/// 3. post-hoc: `edas` on wrong rollouts' negative advantages, `srar` step offsets;
/// 4. token credit: `rebel` (its step advantages, from the estimator it replaces), `scrl`
///    (its segment offsets, [`StageOutput::segment_offsets`]), `cepo`
///    (per-token weights on the sequence advantage) or `oppo` (token
///    advantages from an oracle-prompted pass; it replaces the estimator and leaves the
///    sequence advantages 0), both as [`StageOutput::token_offsets`]; `amr_sd` (gated
///    multipliers from a reflection hint) adds its offsets to CEPO's;
/// 5. token loss coefficients: `delta` (DelTA, on the final sequence advantages), as
///    [`StageOutput::token_weights`];
/// 6. optimizer side: `dgg` ([`StagesConfig::gate_update`]).
///
/// At most one stage may replace the estimator; a config that asks for two is an error, and so
/// is `oppo` with a stage that changes sequence advantages it would discard (`avspo`, `edas`,
/// `cepo`, `amr_sd`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StagesConfig {
    /// ACR metric knobs (always computed).
    pub acr: AcrConfig,
    /// POW3R policy-aware rubric weights (needs `rubric_scores`).
    pub pow3r: Option<Pow3rConfig>,
    /// SRaR step-wise rubric reward and offsets (needs `response_texts`, `step_judgments`).
    pub srar: Option<SrarConfig>,
    /// LamPO pairwise advantage (needs `seq_logp_mean`) and ROUGE-L auxiliary reward (needs
    /// `response_texts`, `reference_solutions`).
    pub lampo: Option<LampoConfig>,
    /// TMN-Reweight for multi-task batches (needs `task_ids`).
    pub tmn: Option<TmnConfig>,
    /// AVSPO virtual samples for collapsed groups.
    pub avspo: Option<AvspoConfig>,
    /// CurveRL prompt weights.
    pub curve_rl: Option<CurveRlConfig>,
    /// EDAS error-diversity shaping (needs `passed`, `extracted_answers`).
    pub edas: Option<EdasConfig>,
    /// DGG update gating during batch reuse.
    pub dgg: Option<DggConfig>,
    /// CEPO contrastive token weights (needs `cepo_delta` while λ > 0).
    pub cepo: Option<CepoConfig>,
    /// OPPO self-oracle token advantages (needs `passed`, `token_logp`, `oracle_logp`).
    pub oppo: Option<OppoConfig>,
    /// AMR-SD gated token multipliers from a reflection hint (needs `token_logp`, `hint_logp`
    /// and `run_steps` or `anneal_steps` while λ > 0).
    pub amr_sd: Option<AmrSdConfig>,
    /// DelTA discriminative token coefficients (needs `response_tokens`).
    pub delta: Option<DeltaConfig>,
    /// ReBel belief-aware step advantages for multi-turn episodes (needs `episodes` and
    /// `response_tokens`); replaces the estimator.
    pub rebel: Option<RebelConfig>,
    /// SCRL subproblem rewards, normalized per position and credited per segment (needs
    /// `subproblems`); replaces the estimator.
    pub scrl: Option<ScrlConfig>,
}

/// What the trainer knows per sequence (flat, `[prompts × G]` row-major) and per prompt. A stage
/// that needs a field the caller left empty fails with a typed error naming it.
#[derive(Debug, Clone, Copy, Default)]
pub struct StageInput<'a> {
    /// Verifier rewards, one per sequence.
    pub rewards: &'a [f32],
    /// G, rollouts per prompt.
    pub group_size: usize,
    /// Verifier verdicts (correct or not), one per sequence.
    pub passed: &'a [bool],
    /// Extracted final answers (normalized by the verifier), one per sequence.
    pub extracted_answers: &'a [Option<String>],
    /// Mean sampler log-prob per sequence (LamPO's confidence).
    pub seq_logp_mean: &'a [f32],
    /// Decoded responses, one per sequence.
    pub response_texts: &'a [String],
    /// Reference solutions, one per sequence (repeated across its group), when the task has one.
    pub reference_solutions: &'a [Option<String>],
    /// Task ids, one per sequence (TMN's multi-task grouping).
    pub task_ids: &'a [String],
    /// Per-criterion rubric scores in [0, 1], one vector per sequence.
    pub rubric_scores: Option<&'a [Vec<f32>]>,
    /// Per-prompt rubric weights and categories (POW3R); `None` = weights 1, one category.
    pub rubrics: Option<&'a [RubricSpec]>,
    /// Per-sequence judge verdicts on the step rubric items (SRaR).
    pub step_judgments: Option<&'a [Vec<StepJudgment>]>,
    /// CEPO's δ_t = ℓ⁺_t − ℓ⁻_t per response token, one vector per sequence.
    pub cepo_delta: Option<&'a [Vec<f32>]>,
    /// The sampling policy's log-prob of each response token, one vector per sequence (OPPO's ℓ).
    pub token_logp: Option<&'a [Vec<f32>]>,
    /// The oracle-prompted policy's log-prob of each response token (OPPO's ℓᵒ).
    pub oracle_logp: Option<&'a [Vec<f32>]>,
    /// AMR-SD: the policy's log-prob of each response token after `prompt ⊕ hint` (ℓ^hint), one
    /// vector per sequence, empty for a sequence without a hint.
    pub hint_logp: Option<&'a [Vec<f32>]>,
    /// Steps of the whole run (AMR-SD's default K_anneal is half of it); 0 = unknown.
    pub run_steps: u64,
    /// Response token ids, one vector per sequence (DelTA counts them as opaque identities).
    pub response_tokens: Option<&'a [Vec<u32>]>,
    /// The policy steps of each sequence's multi-turn episode, with the environment's belief
    /// checks (ReBel).
    pub episodes: Option<&'a [Vec<StepCredit>]>,
    /// Each sequence's verdicts on its prompt's subproblems and where it answers them (SCRL).
    pub subproblems: Option<&'a [SubproblemAnswers]>,
}

impl<'a> StageInput<'a> {
    /// An input with rewards and group size only; set the other fields as the stages need.
    pub fn new(rewards: &'a [f32], group_size: usize) -> Self {
        Self {
            rewards,
            group_size,
            ..Self::default()
        }
    }
}

/// The stages' result for one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StageOutput {
    /// Rewards after reward composition (what the advantages were computed from).
    pub rewards: Vec<f32>,
    /// Per-sequence advantages after estimators and shapers, before the weights.
    pub advantages: Vec<f32>,
    /// Per-sequence loss weights (CurveRL prompt weight × TMN difficulty weight), 1 if none.
    pub weights: Vec<f32>,
    /// SRaR per-token offsets as character spans, one list per sequence (empty without SRaR);
    /// map them with [`token_offsets`].
    pub step_offsets: Vec<Vec<StepOffset>>,
    /// SCRL's segment offsets A_{i,k} − A_{i,L} as disjoint character spans, one list per
    /// sequence (empty without SCRL); every token of a segment gets the whole offset: map them
    /// with [`segment_token_offsets`].
    pub segment_offsets: Vec<Vec<StepOffset>>,
    /// Per-token additions to the sequence advantage, one value per response token (CEPO's
    /// A_i λ (w̃_t − 1), or OPPO's token advantages); an empty vector per sequence without them.
    /// Like `advantages`, before the weights.
    pub token_offsets: Vec<Vec<f32>>,
    /// Per-token loss coefficients c (DelTA), one value per response token, for a
    /// self-normalized aggregation (`PolicyBatch::with_token_coef`); an empty vector per
    /// sequence without them.
    pub token_weights: Vec<Vec<f32>>,
    /// `shaping/...` metrics (ACR always).
    pub metrics: BTreeMap<String, f64>,
}

impl StageOutput {
    /// The per-sequence advantage to put in the batch: `advantages[i] · weights[i]` (a
    /// non-negative per-sequence weight on the clipped surrogate equals weighting its loss).
    pub fn weighted_advantages(&self) -> Vec<f32> {
        self.advantages
            .iter()
            .zip(&self.weights)
            .map(|(a, w)| a * w)
            .collect()
    }
}

/// Everything the stages carry from one step to the next (serde, saved with the checkpoint).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShapingState {
    /// Steps applied so far (AVSPO's threshold schedule, uniform seeds).
    pub step: u64,
    /// EMA of ACR (`None` before the first step).
    pub acr_ema: Option<f64>,
    /// CurveRL's lagged pool of mixed pass rates, one vector per batch, oldest first.
    pub curve_rl_pool: VecDeque<Vec<f64>>,
    /// DGG's window.
    pub dgg: DggState,
}

impl StagesConfig {
    /// Checks every enabled stage's ranges and that at most one stage replaces the estimator.
    pub fn validate(&self) -> Result<()> {
        self.acr.validate()?;
        if let Some(c) = &self.pow3r {
            c.validate()?;
        }
        if let Some(c) = &self.srar {
            c.validate()?;
        }
        if let Some(c) = &self.lampo {
            c.validate()?;
        }
        if let Some(c) = &self.tmn {
            c.validate()?;
        }
        if let Some(c) = &self.avspo {
            c.validate()?;
        }
        if let Some(c) = &self.curve_rl {
            c.validate()?;
        }
        if let Some(c) = &self.edas {
            c.validate()?;
        }
        if let Some(c) = &self.dgg {
            c.validate()?;
        }
        if let Some(c) = &self.cepo {
            c.validate()?;
        }
        if let Some(c) = &self.amr_sd {
            c.validate()?;
        }
        if let Some(c) = &self.oppo {
            c.validate()?;
            let discarded: Vec<&str> = [
                ("avspo", self.avspo.is_some()),
                ("edas", self.edas.is_some()),
                ("cepo", self.cepo.is_some()),
                ("amr_sd", self.amr_sd.is_some()),
            ]
            .into_iter()
            .filter_map(|(k, on)| on.then_some(k))
            .collect();
            crate::error::ensure(
                discarded.is_empty(),
                "oppo",
                discarded.join(" + "),
                "oppo replaces the sequence advantages by token advantages: avspo, edas, cepo \
                 and amr_sd would act on values it discards",
            )?;
        }
        if let Some(c) = &self.rebel {
            c.validate()?;
            crate::error::ensure(
                self.cepo.is_none(),
                "rebel",
                "cepo",
                "cepo's token offsets replace rebel's step advantages: remove one of them",
            )?;
        }
        if let Some(c) = &self.scrl {
            c.validate()?;
            let clashing: Vec<&str> = [
                ("srar", self.srar.is_some()),
                ("avspo", self.avspo.is_some()),
            ]
            .into_iter()
            .filter_map(|(k, on)| on.then_some(k))
            .collect();
            crate::error::ensure(
                clashing.is_empty(),
                "scrl",
                clashing.join(" + "),
                "scrl credits each subproblem's segment: srar's step spans would credit the same \
                 characters twice, and avspo would replace the final-position advantages its \
                 segment offsets are relative to",
            )?;
        }
        if let Some(c) = &self.delta {
            c.validate()?;
            crate::error::ensure(
                self.oppo.is_none(),
                "delta",
                "oppo",
                "delta splits groups by the sign of the sequence advantage, which oppo sets to 0 \
                 (every coefficient would be 1): remove one of them",
            )?;
        }
        let replacers = self.estimators();
        crate::error::ensure(
            replacers.len() <= 1,
            "stages",
            replacers.join(" + "),
            "at most one of tmn, lampo.pairwise, curve_rl.advantage = \"centered\", oppo, rebel, \
             scrl may replace the advantage estimator",
        )
    }

    /// The enabled stages that replace the sequence estimator.
    fn estimators(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.tmn.is_some() {
            out.push("tmn");
        }
        if self.lampo.is_some_and(|l| l.pairwise) {
            out.push("lampo");
        }
        if self
            .curve_rl
            .is_some_and(|c| c.advantage == CurveAdvantage::Centered)
        {
            out.push("curve_rl");
        }
        if self.oppo.is_some() {
            out.push("oppo");
        }
        if self.rebel.is_some() {
            out.push("rebel");
        }
        if self.scrl.is_some() {
            out.push("scrl");
        }
        out
    }

    /// Whether the trainer should apply this mini-batch update (DGG; always true when `dgg` is
    /// off). `false`: zero the gradients, skip the optimizer step and end the reuse of the batch.
    pub fn gate_update(
        &self,
        state: &mut ShapingState,
        lm_head_grad_norm: f64,
        epoch: usize,
    ) -> bool {
        match &self.dgg {
            Some(cfg) => state.dgg.gate(cfg, lm_head_grad_norm, epoch),
            None => true,
        }
    }

    /// Passes over one rollout batch: DGG's K when on, else `epochs`.
    pub fn max_epochs(&self, epochs: usize) -> usize {
        self.dgg.map_or(epochs, |d| d.max_reuse)
    }
}
