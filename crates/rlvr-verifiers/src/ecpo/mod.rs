//! ECPO: the evidence-coupled ranking reward (methods-extra §20; "ECPO: Evidence-Coupled Policy
//! Optimization for Evidence-Certified Candidate Ranking", arXiv 2605.21993).
//!
//! The policy ranks a closed roster of candidates (randomized IDs) for an intent and certifies
//! each listed item with the evidence spans it cites ([`ranking`]). Three coupled rewards
//! ([`score`]), composed as the spec proposes (**\[PROPOSED\]**: the paper's composition was
//! not available):
//!
//! ```text
//! R = gate · (λ₁ · NDCG@k + λ₂ · valid cited spans / cited spans + λ₃ · evidence cycle) / (λ₁ + λ₂ + λ₃)
//! ```
//!
//! - NDCG@k over graded gains `2^rel − 1`, the relevance taken from the evidence store (the
//!   gold; the paper's learned trajectory reward is not built);
//! - certificate validity: a cited span must exist and be about the listed candidate;
//! - the evidence cycle: the share of listed items whose support a deterministic verifier
//!   rebuilds from the cited spans alone, the claim (the item's ID) stripped first
//!   ([`score::Store::recovered`]);
//! - the gate is the spec's hard gate (0 reward for an answer the grammar or the roster
//!   refuses: no `;`, a bad item, more than k items, fewer than min(k, relevant candidates)
//!   (**\[PROPOSED]**, against a measured hack: see [`ranking::parse_ranking`]), a repeated
//!   candidate or citation, a candidate not on the roster). The spec's Lagrangian alternative
//!   is not built.
//!
//! λ defaults to the spec's (0.5, 0.25, 0.25); dividing by their sum keeps the reward in
//! `[0, 1]` for any weights (a positive rescaling that group-normalized advantages do not see).
//! A response passes (the held-out accuracy) when its ranking is ideal and every item is
//! certified: CertNDCG, the paper's metric, equals 1. The verdict's parts are `ndcg`,
//! `validity`, `cycle` and `cert_ndcg` (`reward/part/<name>` in the trainer).

pub mod ranking;
pub mod score;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{Outcome, PartVerdict, Reference, Verdict, Verifier};
use ranking::parse_ranking;
use score::{EcpoScore, Store};

/// Knobs of [`EcpoVerifier`] (`[verifier] kind = "ecpo"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcpoConfig {
    /// λ₁, the weight of NDCG@k (default 0.5, the spec's) **\[PROPOSED\]**.
    #[serde(default = "default_ndcg_weight")]
    pub ndcg_weight: f64,
    /// λ₂, the weight of certificate validity (default 0.25) **\[PROPOSED\]**.
    #[serde(default = "quarter")]
    pub validity_weight: f64,
    /// λ₃, the weight of the evidence cycle (default 0.25) **\[PROPOSED\]**.
    #[serde(default = "quarter")]
    pub cycle_weight: f64,
}

fn default_ndcg_weight() -> f64 {
    0.5
}
fn quarter() -> f64 {
    0.25
}

impl Default for EcpoConfig {
    fn default() -> Self {
        EcpoConfig {
            ndcg_weight: default_ndcg_weight(),
            validity_weight: quarter(),
            cycle_weight: quarter(),
        }
    }
}

impl EcpoConfig {
    /// Checks the knobs.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] naming the key (`verifier.ndcg_weight`, ...): a weight
    /// negative or not finite, or every weight 0.
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |field: &str, reason: String| crate::Error::InvalidConfig {
            field: format!("verifier.{field}"),
            reason,
        };
        for (field, v) in [
            ("ndcg_weight", self.ndcg_weight),
            ("validity_weight", self.validity_weight),
            ("cycle_weight", self.cycle_weight),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(field, format!("{v} must be finite and >= 0")));
            }
        }
        if self.weight_sum() <= 0.0 {
            return Err(bad(
                "ndcg_weight",
                "ndcg_weight, validity_weight and cycle_weight are all 0: every response \
                 would score 0"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Validates the knobs and builds the verifier.
    ///
    /// # Errors
    /// As [`EcpoConfig::validate`].
    pub fn init(&self) -> crate::Result<EcpoVerifier> {
        self.validate()?;
        Ok(EcpoVerifier {
            config: self.clone(),
        })
    }

    fn weight_sum(&self) -> f64 {
        self.ndcg_weight + self.validity_weight + self.cycle_weight
    }

    /// The reward of a ranking that passed the gate: the weighted terms over the weights' sum.
    pub fn reward(&self, s: &EcpoScore) -> f64 {
        (self.ndcg_weight * s.ndcg
            + self.validity_weight * s.validity
            + self.cycle_weight * s.cycle)
            / self.weight_sum()
    }
}

/// The ECPO verifier (see the module).
#[derive(Debug, Clone)]
pub struct EcpoVerifier {
    config: EcpoConfig,
}

/// Tolerance for "CertNDCG equals 1".
const FULL: f64 = 1.0 - 1e-9;

impl Verifier for EcpoVerifier {
    fn verify(&self, response: &str, reference: &Reference) -> Verdict {
        let Reference::Ecpo { intent, spans, k } = reference else {
            return Verdict::zero(Outcome::Error, "ecpo needs an ecpo reference");
        };
        let store = Store {
            intent,
            spans,
            k: *k,
        };
        let items = match parse_ranking(response, *k, store.required_items(), &store.roster()) {
            Ok(items) => items,
            Err(why) => {
                let mut v = Verdict::zero(Outcome::Unparseable, format!("gate: {why}"));
                v.parts = parts(&EcpoScore::default(), Outcome::Unparseable, false);
                return v;
            }
        };
        let s = store.score(&items);
        let reward = self.config.reward(&s);
        let passed = s.cert_ndcg >= FULL;
        let outcome = if passed {
            Outcome::Correct
        } else if reward > 0.0 {
            Outcome::Partial
        } else {
            Outcome::Wrong
        };
        let extracted = response.split_once(';').map(|(list, _)| format!("{list};"));
        let details = json!({"ecpo": {"ndcg": s.ndcg, "validity": s.validity, "cycle": s.cycle,
            "cert_ndcg": s.cert_ndcg, "items": items.len()}});
        let mut verdict = Verdict::new(reward as f32, outcome, extracted, details);
        verdict.parts = parts(&s, outcome, passed);
        verdict
    }

    /// A task is usable when some candidate is relevant (else NDCG is undefined), `k ≥ 1`, and
    /// every span has a subject and an attribute.
    fn check_reference(&self, reference: &Reference) -> Result<(), String> {
        let Reference::Ecpo { intent, spans, k } = reference else {
            return Err("ecpo needs an ecpo reference (`intent`, `spans`, `k`)".into());
        };
        if *k == 0 {
            return Err("`k` is 0: nothing could be ranked".into());
        }
        if let Some(j) = spans
            .iter()
            .position(|(s, a)| s.trim().is_empty() || a.trim().is_empty())
        {
            return Err(format!("span {} has an empty subject or attribute", j + 1));
        }
        let store = Store {
            intent,
            spans,
            k: *k,
        };
        if store.ideal_dcg() <= 0.0 {
            return Err("no candidate has an intent attribute: NDCG is undefined".into());
        }
        Ok(())
    }

    fn name(&self) -> &'static str {
        "ecpo"
    }
}

/// The verdict's parts: the three rewards and CertNDCG.
fn parts(s: &EcpoScore, outcome: Outcome, passed: bool) -> Vec<PartVerdict> {
    [
        ("ndcg", s.ndcg),
        ("validity", s.validity),
        ("cycle", s.cycle),
        ("cert_ndcg", s.cert_ndcg),
    ]
    .into_iter()
    .map(|(name, v)| PartVerdict {
        name: name.into(),
        reward: v as f32,
        passed,
        outcome,
    })
    .collect()
}
