//! SRaR: step-wise rubric rewards with an advantage decoupled from the outcome baseline.
//!
//! # Paper
//! Xie et al., "Step-wise Rubric Rewards for LLM Reasoning",
//! [arXiv 2605.17291](https://arxiv.org/abs/2605.17291); code akarinmoe/SRaR
//! (`recipe/SRaR/srar_advantage.py`, `reward_manager.py`). Specification: `methods-extra.md` §7.
//!
//! # Formula (exact, from the code; the clip is \[PROPOSED])
//! r_base = (1 − λ) r_acc + λ r_fmt (r_fmt = 1 iff a `### Step N:` header and `\boxed{`). Each
//! satisfied item adds to its step: SUGGEST +R_S/n_S, PITFALL −|R_P|/n_P, BONUS +R_B/n_B
//! (n = items of that type in the rubric; ANSWER items and step −1 are ignored) → d_{i,k}.
//! Per prompt and step key k, over the rollouts that have a delta at k (≥ 2 of them, σ_k > ε):
//! d̃_{i,k} = (d_{i,k} − μ_k)/(σ_k + ε) (unbiased σ), else 0. A_{i,t} = A^out_i + Σ_{k: t∈span_k}
//! d̃_{i,k}, where A^out is GRPO on r_base and span_k runs from the k-th header to the next
//! (key 0, an out-of-range key, or a response without headers: the whole response).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::stats::unbiased_var;
use crate::error::{Result, ensure};

/// The step header SRaR asks for: `### Step N:`.
const HEADER: &str = "### Step ";

/// SRaR knobs (spec §7; the README's values).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SrarConfig {
    /// λ, the weight of the format reward in r_base (default 0.1).
    pub format_weight: f32,
    /// R_SUG, the total reward of the SUGGEST items (default 0.8).
    pub suggest_reward: f64,
    /// R_PIT, the total penalty of the PITFALL items (default −1.0; its magnitude is used).
    pub pitfall_reward: f64,
    /// R_BON, the total reward of the BONUS items (default 1.0).
    pub bonus_reward: f64,
    /// Clip of each normalized step offset to ±value (default 0 = off, as in the code)
    /// \[PROPOSED option].
    pub offset_clip: f64,
}

impl Default for SrarConfig {
    fn default() -> Self {
        Self {
            format_weight: 0.1,
            suggest_reward: 0.8,
            pitfall_reward: -1.0,
            bonus_reward: 1.0,
            offset_clip: 0.0,
        }
    }
}

impl SrarConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            (0.0..=1.0).contains(&self.format_weight),
            "srar.format_weight",
            self.format_weight,
            "must be in [0, 1]",
        )?;
        ensure(
            [self.suggest_reward, self.pitfall_reward, self.bonus_reward]
                .iter()
                .all(|x| x.is_finite()),
            "srar.suggest_reward",
            self.suggest_reward,
            "item rewards must be finite",
        )?;
        ensure(
            self.offset_clip.is_finite() && self.offset_clip >= 0.0,
            "srar.offset_clip",
            self.offset_clip,
            "must be >= 0 (0 = off)",
        )
    }
}

/// The type of a rubric item (`<SUGGEST>`, `<PITFALL>`, `<BONUS>`, `<ANSWER>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RubricItemKind {
    /// A good step.
    Suggest,
    /// A mistake.
    Pitfall,
    /// An elegant approach.
    Bonus,
    /// The final answer (ignored by the step rewards).
    Answer,
}

/// The judge's verdict on one rubric item for one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepJudgment {
    /// The item's type.
    pub kind: RubricItemKind,
    /// Whether the response satisfies it.
    pub satisfied: bool,
    /// 1-indexed step it is attributed to; 0 = whole solution; −1 = no relevant step.
    pub step: i32,
}

/// A per-token advantage offset over a character span of a response.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepOffset {
    /// First character (Unicode scalar index) of the span.
    pub char_start: usize,
    /// One past its last character.
    pub char_end: usize,
    /// d̃_{i,k}, added to every token of the span.
    pub offset: f32,
}

/// Character offsets of the `### Step N:` headers of `text`, in order.
pub fn step_headers(text: &str) -> Vec<usize> {
    let chars: Vec<char> = text.chars().collect();
    let head: Vec<char> = HEADER.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + head.len() < chars.len() {
        if chars[i..i + head.len()] == head[..] {
            let mut j = i + head.len();
            while j < chars.len() && chars[j].is_ascii_digit() {
                j += 1;
            }
            if j > i + head.len() && j < chars.len() && chars[j] == ':' {
                out.push(i);
                i = j;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// r_fmt: 1 iff the response has a step header and a `\boxed{`.
pub fn format_reward(text: &str) -> f32 {
    f32::from(u8::from(
        !step_headers(text).is_empty() && text.contains("\\boxed{"),
    ))
}

/// The summed item rewards d_{i,k} of one response per step key.
pub fn step_deltas(judgments: &[StepJudgment], cfg: &SrarConfig) -> BTreeMap<i32, f64> {
    let count = |k: RubricItemKind| judgments.iter().filter(|j| j.kind == k).count().max(1) as f64;
    let mut out = BTreeMap::new();
    for j in judgments.iter().filter(|j| j.satisfied && j.step >= 0) {
        let d = match j.kind {
            RubricItemKind::Suggest => cfg.suggest_reward / count(j.kind),
            RubricItemKind::Pitfall => -cfg.pitfall_reward.abs() / count(j.kind),
            RubricItemKind::Bonus => cfg.bonus_reward / count(j.kind),
            RubricItemKind::Answer => continue,
        };
        *out.entry(j.step).or_insert(0.0) += d;
    }
    out
}

/// The span of step key `k` in a response with header offsets `headers` and `len` characters.
fn span(k: i32, headers: &[usize], len: usize) -> (usize, usize) {
    if k >= 1 && (k as usize) <= headers.len() {
        let i = k as usize - 1;
        (headers[i], headers.get(i + 1).copied().unwrap_or(len))
    } else {
        (0, len)
    }
}

/// Normalized step offsets of every response over `[prompts, group_size]` (the decoupled part).
pub fn srar_offsets(
    texts: &[String],
    judgments: &[Vec<StepJudgment>],
    group_size: usize,
    cfg: &SrarConfig,
    eps: f64,
) -> Vec<Vec<StepOffset>> {
    let deltas: Vec<BTreeMap<i32, f64>> = judgments.iter().map(|j| step_deltas(j, cfg)).collect();
    let layout: Vec<(Vec<usize>, usize)> = texts
        .iter()
        .zip(&deltas)
        .map(|(t, d)| {
            if d.is_empty() {
                (Vec::new(), 0)
            } else {
                (step_headers(t), t.chars().count())
            }
        })
        .collect();
    let mut out = vec![Vec::new(); texts.len()];
    for g in 0..texts.len() / group_size {
        let rows = g * group_size..(g + 1) * group_size;
        let mut keys: Vec<i32> = rows
            .clone()
            .flat_map(|i| deltas[i].keys().copied())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            let have: Vec<(usize, f64)> = rows
                .clone()
                .filter_map(|i| deltas[i].get(&k).map(|&d| (i, d)))
                .collect();
            let vals: Vec<f64> = have.iter().map(|h| h.1).collect();
            let m = vals.iter().sum::<f64>() / vals.len() as f64;
            let Some(sd) = unbiased_var(&vals, m).map(f64::sqrt) else {
                continue;
            };
            if sd <= eps {
                continue;
            }
            for (i, d) in have {
                let mut off = (d - m) / (sd + eps);
                if cfg.offset_clip > 0.0 {
                    off = off.clamp(-cfg.offset_clip, cfg.offset_clip);
                }
                let (char_start, char_end) = span(k, &layout[i].0, layout[i].1);
                out[i].push(StepOffset {
                    char_start,
                    char_end,
                    offset: off as f32,
                });
            }
        }
    }
    out
}

/// Per-token offsets of one response with `total_chars` characters and `total_tokens` tokens:
/// a character span maps to tokens proportionally, tok = ⌊char / total_chars · total_tokens⌋
/// (as the SRaR code does); the offsets of overlapping spans add up.
pub fn token_offsets(offsets: &[StepOffset], total_chars: usize, total_tokens: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; total_tokens];
    if total_chars == 0 {
        return out;
    }
    let tok =
        |c: usize| (c.min(total_chars) as f64 / total_chars as f64 * total_tokens as f64) as usize;
    for o in offsets {
        for t in out.iter_mut().take(tok(o.char_end)).skip(tok(o.char_start)) {
            *t += o.offset;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(kind: RubricItemKind, satisfied: bool, step: i32) -> StepJudgment {
        StepJudgment {
            kind,
            satisfied,
            step,
        }
    }

    #[test]
    fn headers_format_and_spans() {
        let t = "intro ### Step 1: a ### Step 2: b \\boxed{3}";
        assert_eq!(step_headers(t), [6, 20]);
        assert_eq!(format_reward(t), 1.0);
        assert_eq!(format_reward("### Step x: no"), 0.0);
        assert_eq!(span(2, &[6, 20], 43), (20, 43));
        assert_eq!(span(5, &[6, 20], 43), (0, 43));
        assert_eq!(span(0, &[], 10), (0, 10));
    }

    /// Two SUGGEST, one PITFALL: a satisfied SUGGEST adds 0.8/2 = 0.4, a satisfied PITFALL
    /// −1/1; ANSWER items and step −1 add nothing.
    #[test]
    fn deltas_per_step() {
        use RubricItemKind::*;
        let d = step_deltas(
            &[
                j(Suggest, true, 1),
                j(Suggest, true, 1),
                j(Pitfall, true, 2),
                j(Answer, true, 2),
                j(Bonus, true, -1),
            ],
            &SrarConfig::default(),
        );
        assert_eq!(d.len(), 2);
        assert!((d[&1] - 0.8).abs() < 1e-12 && (d[&2] + 1.0).abs() < 1e-12);
        assert!(step_deltas(&[], &SrarConfig::default()).is_empty());
    }

    /// 10 characters, 5 tokens: characters [4, 10) map to tokens [2, 5).
    #[test]
    fn proportional_token_mapping() {
        let o = [StepOffset {
            char_start: 4,
            char_end: 10,
            offset: 0.5,
        }];
        assert_eq!(token_offsets(&o, 10, 5), [0.0, 0.0, 0.5, 0.5, 0.5]);
    }
}
