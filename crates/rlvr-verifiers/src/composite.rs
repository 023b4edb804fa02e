//! `kind = "composite"`: a weighted sum of other verifiers (a format check plus correctness).
//!
//! ```toml
//! [verifier]
//! kind = "composite"
//!
//! [[verifier.parts]]
//! name = "format"            # logged as reward/part/format
//! weight = 0.2
//! kind = "rubric"            # any kind but composite, with its own knobs
//! fields = { rubric = [{ id = "bare", kind = "regex", pattern = '^-?\d+$' }] }
//!
//! [[verifier.parts]]
//! name = "correct"
//! weight = 0.8
//! gate = true
//! kind = "math"
//! fallback = "last_number"
//! ```
//!
//! - Reward: `Σ wᵢ rᵢ / Σ wᵢ` over the parts (weights ≥ 0, not all 0; a weight-0 part is scored
//!   and logged but adds nothing).
//! - Passed: every part marked `gate = true` passed; when no part is a gate, every part passed.
//!   Outcome: `correct` when passed, else `wrong` at reward 0 and `partial` above.
//! - Each part's reference is built from the dataset record as that part's kind reads it, with
//!   the part's `fields` laid over the record first (a rubric, a label fixed in the config).
//! - The verdict's [`crate::Verdict::parts`] holds each part's reward, outcome and pass, which
//!   the trainer logs as `reward/part/<name>`; the details hold each part's own details.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::verdict::PartVerdict;
use crate::{Error, Outcome, Reference, Result, Verdict, Verifier, VerifierConfig};

/// Knobs of [`CompositeVerifier`] (`[verifier] kind = "composite"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompositeConfig {
    /// The parts, each a named, weighted verifier (`[[verifier.parts]]`).
    pub parts: Vec<PartConfig>,
}

/// One part of a composite reward.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartConfig {
    /// Name in metrics (`reward/part/<name>`) and details: letters, digits, `_` and `-`.
    pub name: String,
    /// Weight in the sum (≥ 0, default 1).
    #[serde(default = "one")]
    pub weight: f64,
    /// Whether this part decides `passed` (see the module documentation).
    #[serde(default)]
    pub gate: bool,
    /// Fields laid over the dataset record before this part's reference is read from it.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub fields: serde_json::Map<String, Value>,
    /// The part's verifier: `kind` and its knobs, inline.
    #[serde(flatten)]
    pub verifier: VerifierConfig,
}

fn one() -> f64 {
    1.0
}

impl CompositeConfig {
    /// Validates the parts and builds each part's verifier.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `verifier.parts[i].<field>`: no parts, a bad or repeated
    /// name, a negative or non-finite weight, all weights 0, a nested composite, or any error of
    /// the part's own config.
    pub fn init(&self) -> Result<CompositeVerifier> {
        let bad = |field: String, reason: String| Error::InvalidConfig { field, reason };
        if self.parts.is_empty() {
            return Err(bad(
                "verifier.parts".into(),
                "is empty: give at least one [[verifier.parts]]".into(),
            ));
        }
        let mut parts = Vec::with_capacity(self.parts.len());
        for (i, p) in self.parts.iter().enumerate() {
            let at = |field: &str| format!("verifier.parts[{i}].{field}");
            if p.name.is_empty()
                || !p
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(bad(
                    at("name"),
                    format!("{:?} must be letters, digits, `_` or `-`", p.name),
                ));
            }
            if self.parts[..i].iter().any(|q| q.name == p.name) {
                return Err(bad(at("name"), format!("{:?} is used twice", p.name)));
            }
            if !(p.weight.is_finite() && p.weight >= 0.0) {
                return Err(bad(
                    at("weight"),
                    format!("{} must be finite and >= 0", p.weight),
                ));
            }
            if matches!(p.verifier, VerifierConfig::Composite(_)) {
                return Err(bad(
                    at("kind"),
                    "a part cannot itself be composite: list its parts here".into(),
                ));
            }
            let verifier = p.verifier.build().map_err(|e| match e {
                Error::InvalidConfig { field, reason } => bad(
                    at(field.strip_prefix("verifier.").unwrap_or(&field)),
                    reason,
                ),
                other => bad(at("kind"), other.to_string()),
            })?;
            parts.push(verifier);
        }
        if self.parts.iter().all(|p| p.weight == 0.0) {
            return Err(bad(
                "verifier.parts".into(),
                "every weight is 0: at least one part must count".into(),
            ));
        }
        Ok(CompositeVerifier {
            config: self.clone(),
            parts,
        })
    }

    /// The composite reference of a record: each part's reference, read as that part's kind
    /// reads it from the record with the part's `fields` laid over it.
    ///
    /// # Errors
    /// The first part whose reference cannot be read, by name.
    pub fn reference(&self, record: &Value) -> std::result::Result<Reference, String> {
        self.parts
            .iter()
            .map(|p| {
                let reference = if p.fields.is_empty() {
                    p.verifier.reference(record)
                } else {
                    let mut merged = record.as_object().cloned().unwrap_or_default();
                    merged.extend(p.fields.clone());
                    p.verifier.reference(&Value::Object(merged))
                };
                reference.map_err(|e| format!("part `{}`: {e}", p.name))
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map(|parts| Reference::Composite { parts })
    }

    /// Most items per chunk: the largest of the parts' chunk sizes (1 unless a part is `http`).
    pub fn chunk_size(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match &p.verifier {
                VerifierConfig::Http(h) => h.batch_size,
                _ => 1,
            })
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// The limit of one chunk call for [`crate::verify_batch`]: the parts run one after the
    /// other, a chunking part once per chunk of its own, an item-by-item part at worst once per
    /// item of the chunk.
    pub fn item_time_limit(&self) -> std::time::Duration {
        let chunk = self.chunk_size();
        self.parts
            .iter()
            .map(|p| {
                let own = match &p.verifier {
                    VerifierConfig::Http(h) => h.batch_size.max(1),
                    _ => 1,
                };
                let calls = u32::try_from(chunk.div_ceil(own)).unwrap_or(u32::MAX);
                p.verifier.item_time_limit().saturating_mul(calls)
            })
            .sum()
    }
}

/// A weighted sum of other verifiers' rewards (see the module documentation).
pub struct CompositeVerifier {
    config: CompositeConfig,
    parts: Vec<Box<dyn Verifier>>,
}

impl std::fmt::Debug for CompositeVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompositeVerifier")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl CompositeVerifier {
    /// One part's verdicts on `items` (already that part's references), in order.
    fn score_part(&self, part: &dyn Verifier, items: &[(String, Reference)]) -> Vec<Verdict> {
        let size = part.chunk_size().max(1);
        if size > 1 {
            items
                .chunks(size)
                .flat_map(|c| {
                    let v = part.verify_chunk(c);
                    if v.len() == c.len() {
                        v
                    } else {
                        vec![
                            Verdict::zero(Outcome::Error, "part returned too few verdicts");
                            c.len()
                        ]
                    }
                })
                .collect()
        } else if items.len() == 1 {
            vec![part.verify(&items[0].0, &items[0].1)]
        } else {
            items
                .par_iter()
                .map(|(response, reference)| part.verify(response, reference))
                .collect()
        }
    }

    /// Combines one item's part verdicts.
    fn combine(&self, verdicts: Vec<Verdict>) -> Verdict {
        let cfg = &self.config.parts;
        let (mut total, mut weights) = (0.0f64, 0.0f64);
        let any_gate = cfg.iter().any(|p| p.gate);
        let mut passed = true;
        let mut details = Vec::with_capacity(cfg.len());
        let mut parts = Vec::with_capacity(cfg.len());
        for (p, v) in cfg.iter().zip(verdicts) {
            total += p.weight * f64::from(v.reward);
            weights += p.weight;
            if p.gate || !any_gate {
                passed &= v.passed;
            }
            details.push(json!({
                "name": p.name, "weight": p.weight, "reward": v.reward, "passed": v.passed,
                "outcome": v.outcome, "extracted": v.extracted, "details": v.details,
            }));
            parts.push(PartVerdict {
                name: p.name.clone(),
                reward: v.reward,
                passed: v.passed,
                outcome: v.outcome,
            });
        }
        let reward = (total / weights) as f32;
        let outcome = if passed {
            Outcome::Correct
        } else if reward <= 0.0 {
            Outcome::Wrong
        } else {
            Outcome::Partial
        };
        let mut verdict = Verdict::new(reward, outcome, None, json!({ "parts": details }));
        verdict.parts = parts;
        verdict
    }
}

impl Verifier for CompositeVerifier {
    fn verify(&self, response: &str, reference: &Reference) -> Verdict {
        self.verify_chunk(&[(response.to_string(), reference.clone())])
            .pop()
            .unwrap_or_else(|| Verdict::zero(Outcome::Error, "no verdict"))
    }

    fn chunk_size(&self) -> usize {
        self.config.chunk_size()
    }

    fn verify_chunk(&self, items: &[(String, Reference)]) -> Vec<Verdict> {
        let n_parts = self.parts.len();
        let mut out: Vec<Option<Verdict>> = vec![None; items.len()];
        let mut valid = Vec::new();
        for (i, (_, reference)) in items.iter().enumerate() {
            match reference {
                Reference::Composite { parts } if parts.len() == n_parts => valid.push(i),
                Reference::Composite { parts } => {
                    out[i] = Some(Verdict::zero(
                        Outcome::Error,
                        format!(
                            "composite reference has {} parts, the verifier {n_parts}",
                            parts.len()
                        ),
                    ));
                }
                _ => {
                    out[i] = Some(Verdict::zero(
                        Outcome::Error,
                        "composite verifier needs a composite reference",
                    ));
                }
            }
        }
        let mut per_item: Vec<Vec<Verdict>> = vec![Vec::with_capacity(n_parts); valid.len()];
        for (k, part) in self.parts.iter().enumerate() {
            let sub: Vec<(String, Reference)> = valid
                .iter()
                .map(|&i| {
                    let Reference::Composite { parts } = &items[i].1 else {
                        unreachable!("only composite references are valid")
                    };
                    (items[i].0.clone(), parts[k].clone())
                })
                .collect();
            for (slot, v) in per_item
                .iter_mut()
                .zip(self.score_part(part.as_ref(), &sub))
            {
                slot.push(v);
            }
        }
        for (&i, verdicts) in valid.iter().zip(per_item) {
            out[i] = Some(self.combine(verdicts));
        }
        out.into_iter()
            .map(|v| v.unwrap_or_else(|| Verdict::zero(Outcome::Error, "no verdict")))
            .collect()
    }

    /// Each part checks its own reference; the first refusal names its part.
    fn check_reference(&self, reference: &Reference) -> std::result::Result<(), String> {
        let Reference::Composite { parts } = reference else {
            return Err("the composite verifier needs a composite reference".into());
        };
        if parts.len() != self.parts.len() {
            return Err(format!(
                "composite reference has {} parts, the verifier {}",
                parts.len(),
                self.parts.len()
            ));
        }
        for ((verifier, r), p) in self.parts.iter().zip(parts).zip(&self.config.parts) {
            verifier
                .check_reference(r)
                .map_err(|e| format!("part `{}`: {e}", p.name))?;
        }
        Ok(())
    }

    fn name(&self) -> &'static str {
        "composite"
    }
}
