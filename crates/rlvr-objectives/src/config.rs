//! `ObjectiveConfig`: the registry of objectives, selected by `kind` in TOML.

use serde::{Deserialize, Serialize};

use crate::advantage::AdvantageConfig;
use crate::batch::PolicyBatch;
use crate::error::Result;
use crate::loss::grpo::{DapoConfig, DrGrpoConfig, GrpoConfig, RlooConfig, clipped_loss};
use crate::loss::gspo::GspoConfig;
use crate::loss::knobs::PgKnobs;
use crate::loss::mu_grpo::{MuGrpoConfig, mu_grpo_loss};
use crate::loss::nfpo::{NfpoConfig, nfpo_loss};
use crate::loss::nsr::{NsrConfig, nsr_loss};
use crate::loss::owpo::{OwpoConfig, owpo_loss};
use crate::loss::{LossContext, LossOutput};
use crate::reward_shaping::{ShapingInput, ShapingStats, shape_rewards};

/// The objective registry: `[objective] kind = "grpo"` plus any of that kind's knobs, every one
/// defaulted (see each config and the crate README's table). An unknown `kind` fails with
/// serde's list of valid names; a misspelt knob fails too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ObjectiveConfig {
    /// GRPO (arXiv 2402.03300).
    Grpo(GrpoConfig),
    /// DAPO (arXiv 2503.14476).
    Dapo(DapoConfig),
    /// Dr. GRPO (arXiv 2503.20783).
    DrGrpo(DrGrpoConfig),
    /// GSPO (arXiv 2507.18071).
    Gspo(GspoConfig),
    /// RLOO advantages with the PPO clip (arXiv 2402.14740).
    Rloo(RlooConfig),
    /// NFPO (arXiv 2605.20865) [PROPOSED form].
    Nfpo(NfpoConfig),
    /// OWPO (arXiv 2605.22156) [PROPOSED weight].
    Owpo(OwpoConfig),
    /// Mu-GRPO (arXiv 2605.17570) [PROPOSED values].
    MuGrpo(MuGrpoConfig),
    /// NSR (arXiv 2605.22703) [PROPOSED lower side and band].
    Nsr(NsrConfig),
}

impl Default for ObjectiveConfig {
    fn default() -> Self {
        Self::Dapo(DapoConfig::default())
    }
}

impl ObjectiveConfig {
    /// Every registry name, in the order of the variants.
    pub const KINDS: [&'static str; 9] = [
        "grpo", "dapo", "dr_grpo", "gspo", "rloo", "nfpo", "owpo", "mu_grpo", "nsr",
    ];

    /// The entry `kind` with all its knobs at their defaults, or `None` for an unknown name.
    pub fn from_kind(kind: &str) -> Option<Self> {
        Some(match kind {
            "grpo" => Self::Grpo(GrpoConfig::default()),
            "dapo" => Self::Dapo(DapoConfig::default()),
            "dr_grpo" => Self::DrGrpo(DrGrpoConfig::default()),
            "gspo" => Self::Gspo(GspoConfig::default()),
            "rloo" => Self::Rloo(RlooConfig::default()),
            "nfpo" => Self::Nfpo(NfpoConfig::default()),
            "owpo" => Self::Owpo(OwpoConfig::default()),
            "mu_grpo" => Self::MuGrpo(MuGrpoConfig::default()),
            "nsr" => Self::Nsr(NsrConfig::default()),
            _ => return None,
        })
    }

    /// The registry name (`kind`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Grpo(_) => "grpo",
            Self::Dapo(_) => "dapo",
            Self::DrGrpo(_) => "dr_grpo",
            Self::Gspo(_) => "gspo",
            Self::Rloo(_) => "rloo",
            Self::Nfpo(_) => "nfpo",
            Self::Owpo(_) => "owpo",
            Self::MuGrpo(_) => "mu_grpo",
            Self::Nsr(_) => "nsr",
        }
    }

    /// The knobs every objective shares.
    pub fn common(&self) -> PgKnobs {
        match self {
            Self::Grpo(c) => c.common(),
            Self::Dapo(c) => c.common(),
            Self::DrGrpo(c) => c.common(),
            Self::Gspo(c) => c.common(),
            Self::Rloo(c) => c.common(),
            Self::Nfpo(c) => c.common(),
            Self::Owpo(c) => c.common(),
            Self::MuGrpo(c) => c.common(),
            Self::Nsr(c) => c.common(),
        }
    }

    /// How rewards become advantages for this objective (e.g. `dr_grpo` → mean only, `rloo` →
    /// leave-one-out).
    pub fn advantage_config(&self) -> AdvantageConfig {
        self.common().advantage_config()
    }

    /// Checks the shared knobs' ranges (method knobs are checked by their loss).
    pub fn validate(&self) -> Result<()> {
        self.common().validate()
    }

    /// Whether the loss needs `ref_logp` (a KL term in the loss, or OWPO), i.e. whether the
    /// trainer must keep a reference model.
    pub fn needs_reference(&self) -> bool {
        let c = self.common();
        matches!(self, Self::Owpo(_)) || (c.kl_coef > 0.0)
    }

    /// Reward shaping on host values before advantages: DAPO's soft overlong penalty and, with
    /// `kl_in_reward`, −β·KL per sequence. `rewards` are changed in place.
    pub fn shape_rewards(&self, rewards: &mut [f32], input: &ShapingInput) -> Result<ShapingStats> {
        shape_rewards(&self.common(), rewards, input)
    }

    /// Whether the trainer should replace the reference by the current policy after
    /// `optimizer_steps` optimizer steps (OWPO's ratchet; always false for the other objectives).
    pub fn reference_update_due(&self, optimizer_steps: usize) -> bool {
        match self {
            Self::Owpo(c) => c.reference_update_due(optimizer_steps),
            _ => false,
        }
    }

    /// The scalar loss and its `objective/...` metrics on one mini-batch.
    pub fn loss(&self, batch: &PolicyBatch, ctx: &LossContext) -> Result<LossOutput> {
        match self {
            Self::Grpo(_) | Self::Dapo(_) | Self::DrGrpo(_) | Self::Gspo(_) | Self::Rloo(_) => {
                clipped_loss(batch, &self.common(), ctx)
            }
            Self::Nfpo(c) => nfpo_loss(batch, c, ctx),
            Self::Owpo(c) => owpo_loss(batch, c, ctx),
            Self::MuGrpo(c) => mu_grpo_loss(batch, c, ctx),
            Self::Nsr(c) => nsr_loss(batch, c, ctx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advantage::AdvantageEstimator;
    use crate::aggregate::Aggregation;

    fn from_toml(s: &str) -> std::result::Result<ObjectiveConfig, toml::de::Error> {
        toml::from_str(s)
    }

    #[test]
    fn every_kind_deserializes_with_defaults_and_round_trips() {
        for kind in ObjectiveConfig::KINDS {
            let c = from_toml(&format!("kind = \"{kind}\"")).unwrap();
            assert_eq!(c.name(), kind);
            assert_eq!(ObjectiveConfig::from_kind(kind), Some(c.clone()));
            c.validate().unwrap();
            let text = toml::to_string(&c).unwrap();
            assert_eq!(from_toml(&text).unwrap(), c, "{text}");
        }
    }

    #[test]
    fn presets_differ_where_the_papers_do() {
        let dr = from_toml("kind = \"dr_grpo\"").unwrap().common();
        assert_eq!(dr.adv_estimator, AdvantageEstimator::GroupMean);
        assert_eq!(dr.aggregation, Aggregation::SeqMeanTokenSumNorm);
        let gspo = from_toml("kind = \"gspo\"").unwrap().common();
        assert_eq!((gspo.eps_low, gspo.eps_high), (3e-4, 4e-4));
        let dapo = from_toml("kind = \"dapo\"\neps_high = 0.3")
            .unwrap()
            .common();
        assert_eq!((dapo.eps_low, dapo.eps_high), (0.2, 0.3));
        assert_eq!(
            from_toml("kind = \"rloo\"")
                .unwrap()
                .advantage_config()
                .estimator,
            AdvantageEstimator::Rloo
        );
        assert!(from_toml("kind = \"grpo\"").unwrap().needs_reference());
        assert!(!from_toml("kind = \"dapo\"").unwrap().needs_reference());
    }

    #[test]
    fn unknown_kinds_and_knobs_are_errors() {
        let err = from_toml("kind = \"ppo2\"").unwrap_err().to_string();
        assert!(err.contains("grpo") && err.contains("mu_grpo"), "{err}");
        let err = from_toml("kind = \"nfpo\"\ntrace_lenn = 3")
            .unwrap_err()
            .to_string();
        assert!(err.contains("trace_lenn"), "{err}");
        let bad = from_toml("kind = \"dapo\"\neps_low = 1.5").unwrap();
        assert!(bad.validate().unwrap_err().to_string().contains("eps_low"));
    }

    #[test]
    fn only_owpo_ratchets() {
        let owpo = from_toml("kind = \"owpo\"\nreference_update_every = 3").unwrap();
        assert!(owpo.reference_update_due(6) && !owpo.reference_update_due(7));
        assert!(
            !from_toml("kind = \"grpo\"")
                .unwrap()
                .reference_update_due(100)
        );
    }
}
