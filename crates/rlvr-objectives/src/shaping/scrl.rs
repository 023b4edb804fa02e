//! SCRL: progress-aware subproblem rewards, normalized per subproblem position, credited to the
//! segment of the response that answers each subproblem.
//!
//! # Paper
//! Jiang, Tang, Lin, Yue, Wang, Huang, "From Reasoning Chains to Verifiable Subproblems:
//! Curriculum Reinforcement Learning Enables Credit Assignment for LLM Reasoning",
//! arXiv 2605.22074 (no code found). Specification: `methods-extra.md` §11.
//!
//! # Formula (structure from the paper; the details marked \[PROPOSED] are the spec's proposal)
//! A prompt has subproblems k = 1..L whose last is the original problem. Response i answers
//! them in order; c_{i,k} ∈ {0, 1} says whether answer k is right. The progress-aware reward
//! counts only the consecutive correct prefix, r_{i,k} = Π_{j≤k} c_{i,j}; at the last position
//! the run's own reward r_i takes the place of c_{i,L} (r_{i,L} = r_i · Π_{j<L} c_{i,j}, the
//! spec's formula for a 0/1 reward, and it keeps DAPO's length shaping or a partial score).
//! Each position is normalized over the group on its own: A_{i,k} = the objective's group
//! estimator over r_{·,k} (GRPO: (r − mean)/(std + ε), 0 when the group's std is 0).
//! Segment k runs from the end of answer k−1 (the response start for k = 1) to the end of answer
//! k, and its tokens get A_{i,k} \[PROPOSED]; tokens after the last answer get A_{i,L}. With
//! `answer_span_only` only answer k's own characters get A_{i,k} and the rest A_{i,L}.
//!
//! The stage replaces the estimator: the sequence advantage is A_{i,L} and each segment k < L
//! carries the offset A_{i,k} − A_{i,L} ([`crate::StageOutput::segment_offsets`]), mapped to
//! tokens by [`segment_token_offsets`] (a token belongs to the segment holding its last
//! character). An answer the response does not contain is wrong and its segment is empty.
//!
//! **\[PROPOSED]**: the segment reading, the answer formats ([`AnswerFormat`]) and the
//! curriculum ([`ScrlCurriculum`]: a prompt whose final-answer pass rate averaged over its last
//! two visits exceeds `curriculum_threshold` is credited on the original problem alone, L = 1,
//! until a visit with pass rate 0 brings its subproblems back). The prompt is the record's own:
//! a task that wants the subproblems listed in it writes them there.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::srar::StepOffset;
use crate::advantage::{AdvantageConfig, compute_advantages};
use crate::error::{Error, Result, ensure};

/// How the answers to the subproblems are written in a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerFormat {
    /// `<sub k>…</sub k>` around answer k (the spec's `<sub k>\boxed{…}</sub k>`).
    #[default]
    Tagged,
    /// Answer k is the k-th field of the response split at `separator` (`"82;62"`).
    Separated,
}

/// `[stages.scrl]` knobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScrlConfig {
    /// How answers are found in a response (default `"tagged"`).
    pub answers: AnswerFormat,
    /// The field separator of `answers = "separated"` (default `";"`).
    pub separator: String,
    /// Credit A_{i,k} to answer k's characters only instead of its whole segment (default
    /// false).
    pub answer_span_only: bool,
    /// The \[PROPOSED] curriculum: credit mastered prompts on the original problem alone
    /// (default true).
    pub curriculum: bool,
    /// The mean final-answer pass rate over a prompt's last two visits above which its
    /// subproblems are dropped (default 0.5).
    pub curriculum_threshold: f64,
    /// Trainer side: the record field holding the subproblems, `[{"question", "answer"}, …]`
    /// with the original problem last (default `"subproblems"`).
    pub subproblems_field: String,
    /// Trainer side: when set, the subproblems are derived from this field's GSM8K
    /// calculation annotations (`<<48/2=24>>`) instead, the original problem last.
    pub annotations_field: String,
    /// The most subproblems per prompt, the original included (default 5, the spec's L ≤ 5);
    /// a longer chain keeps its last intermediate steps.
    pub max_subproblems: usize,
}

impl Default for ScrlConfig {
    fn default() -> Self {
        Self {
            answers: AnswerFormat::Tagged,
            separator: ";".into(),
            answer_span_only: false,
            curriculum: true,
            curriculum_threshold: 0.5,
            subproblems_field: "subproblems".into(),
            annotations_field: String::new(),
            max_subproblems: 5,
        }
    }
}

impl ScrlConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        ensure(
            self.answers != AnswerFormat::Separated || !self.separator.is_empty(),
            "scrl.separator",
            &self.separator,
            "answers = \"separated\" needs a non-empty separator",
        )?;
        ensure(
            (0.0..=1.0).contains(&self.curriculum_threshold),
            "scrl.curriculum_threshold",
            self.curriculum_threshold,
            "must be in [0, 1]",
        )?;
        ensure(
            self.max_subproblems >= 1,
            "scrl.max_subproblems",
            self.max_subproblems,
            "must be >= 1 (the original problem)",
        )
    }
}

/// One response's verdicts on its prompt's L subproblems.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SubproblemAnswers {
    /// c_{i,k} for the intermediate subproblems k = 1..L−1 (the original problem's verdict is
    /// the run's reward).
    pub intermediate: Vec<bool>,
    /// The character span of answer k in the response, k = 1..L (`None`: not answered).
    pub spans: Vec<Option<(usize, usize)>>,
}

impl SubproblemAnswers {
    /// L, the number of subproblems (the original included).
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are no subproblems (a malformed input: L ≥ 1 always).
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// r_{i,k} = Π_{j≤k} c_{i,j} for k < L and r_{i,L} = `reward` · Π_{j<L} c_{i,j}.
pub fn prefix_rewards(answers: &SubproblemAnswers, reward: f32) -> Vec<f32> {
    let mut out = Vec::with_capacity(answers.len());
    let mut all = true;
    for &c in &answers.intermediate {
        all &= c;
        out.push(f32::from(u8::from(all)));
    }
    out.push(if all { reward } else { 0.0 });
    out
}

/// The character spans of answers 1..`count` in `text` (`None` for an answer it lacks): the
/// trimmed contents of `<sub k>…</sub k>` searched in order after the previous answer, or the
/// trimmed `separator`-delimited fields.
pub fn locate_answers(text: &str, count: usize, cfg: &ScrlConfig) -> Vec<Option<(usize, usize)>> {
    let chars = |byte: usize| text[..byte].chars().count();
    let trimmed = |start: usize, end: usize| -> Option<(usize, usize)> {
        let body = &text[start..end];
        let lead = body.len() - body.trim_start().len();
        let inner = body.trim();
        (!inner.is_empty()).then(|| (chars(start + lead), chars(start + lead + inner.len())))
    };
    match cfg.answers {
        AnswerFormat::Separated => {
            let mut out = Vec::with_capacity(count);
            let mut start = 0;
            for _ in 0..count {
                if start > text.len() {
                    out.push(None);
                    continue;
                }
                let end = text[start..]
                    .find(cfg.separator.as_str())
                    .map_or(text.len(), |p| start + p);
                out.push(trimmed(start, end));
                start = end + cfg.separator.len();
            }
            out
        }
        AnswerFormat::Tagged => {
            let mut out = Vec::with_capacity(count);
            let mut from = 0;
            for k in 1..=count {
                let open = format!("<sub {k}>");
                let close = format!("</sub {k}>");
                let found = text[from..].find(&open).and_then(|o| {
                    let body = from + o + open.len();
                    text[body..].find(&close).map(|c| (body, body + c))
                });
                match found {
                    Some((s, e)) => {
                        out.push(trimmed(s, e));
                        from = e + close.len();
                    }
                    None => out.push(None),
                }
            }
            out
        }
    }
}

/// The stage's summary of one step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ScrlStats {
    /// Mean L over the responses.
    pub subproblems_mean: f64,
    /// Share of intermediate answers that are right.
    pub intermediate_correct_frac: f64,
    /// Mean r_{i,L}.
    pub final_prefix_mean: f64,
    /// Groups whose final-position rewards are all equal (no GRPO signal) but where some
    /// intermediate position has a non-zero advantage: the dead zones SCRL lifts.
    pub rescued_groups: usize,
    /// Mean |A_{i,k} − A_{i,L}| over the segments with an offset.
    pub offset_abs_mean: f64,
}

/// SCRL's result: the sequence advantages A_{i,L}, each response's segment offsets
/// A_{i,k} − A_{i,L} as character spans, and the step's summary.
pub type ScrlOutput = (Vec<f32>, Vec<Vec<StepOffset>>, ScrlStats);

/// SCRL over `[prompts, group_size]` responses; `rewards` are the run's rewards on the original
/// problem and `base` is the per-position estimator.
///
/// # Errors
/// A response without subproblems, intermediate verdicts that do not number L − 1, or a group
/// whose responses have different L (each names the response).
pub fn scrl(
    answers: &[SubproblemAnswers],
    rewards: &[f32],
    group_size: usize,
    base: &AdvantageConfig,
    cfg: &ScrlConfig,
) -> Result<ScrlOutput> {
    let n = rewards.len();
    for (index, a) in answers.iter().enumerate() {
        if a.is_empty() || a.intermediate.len() + 1 != a.len() {
            return Err(Error::BadInput {
                field: "subproblems",
                index,
                reason: format!(
                    "{} spans and {} intermediate verdicts: needs L >= 1 spans and L - 1 verdicts",
                    a.len(),
                    a.intermediate.len()
                ),
            });
        }
        if index % group_size != 0 && a.len() != answers[index - index % group_size].len() {
            return Err(Error::BadInput {
                field: "subproblems",
                index,
                reason: "a group's responses must share one list of subproblems".into(),
            });
        }
    }
    let prefix: Vec<Vec<f32>> = answers
        .iter()
        .zip(rewards)
        .map(|(a, &r)| prefix_rewards(a, r))
        .collect();
    let mut advantages = vec![0.0f32; n];
    let mut offsets = vec![Vec::new(); n];
    let mut stats = ScrlStats::default();
    let (mut right, mut asked, mut offset_sum, mut offset_count) = (0usize, 0usize, 0.0, 0usize);
    for g in 0..n / group_size {
        let rows = g * group_size..(g + 1) * group_size;
        let l = answers[rows.start].len();
        // A[k][j]: position k's advantage of the group's j-th response.
        let a = (0..l)
            .map(|k| {
                let r: Vec<f32> = rows.clone().map(|i| prefix[i][k]).collect();
                compute_advantages(base, &r, group_size).map(|x| x.values)
            })
            .collect::<Result<Vec<_>>>()?;
        let last = &a[l - 1];
        if last.iter().all(|&x| x == 0.0) && a[..l - 1].iter().flatten().any(|&x| x != 0.0) {
            stats.rescued_groups += 1;
        }
        for (j, i) in rows.enumerate() {
            advantages[i] = last[j];
            let spans = &answers[i].spans;
            right += answers[i].intermediate.iter().filter(|&&c| c).count();
            asked += l - 1;
            let mut end = 0;
            for k in 0..l - 1 {
                let (start, stop) = match spans[k] {
                    Some((s, e)) if cfg.answer_span_only => (s, e),
                    Some((_, e)) => (end, e),
                    None => (end, end),
                };
                if let Some((_, e)) = spans[k] {
                    end = e;
                }
                if stop > start {
                    let offset = a[k][j] - last[j];
                    offset_sum += f64::from(offset.abs());
                    offset_count += 1;
                    offsets[i].push(StepOffset {
                        char_start: start,
                        char_end: stop,
                        offset,
                    });
                }
            }
        }
    }
    stats.subproblems_mean = answers.iter().map(|a| a.len() as f64).sum::<f64>() / n.max(1) as f64;
    stats.intermediate_correct_frac = right as f64 / asked.max(1) as f64;
    stats.final_prefix_mean = prefix
        .iter()
        .map(|p| f64::from(p[p.len() - 1]))
        .sum::<f64>()
        / n.max(1) as f64;
    stats.offset_abs_mean = offset_sum / offset_count.max(1) as f64;
    Ok((advantages, offsets, stats))
}

/// Per-token offsets of disjoint segments over tokens whose characters are
/// `bounds[t]..bounds[t + 1]`: a non-empty token gets the offset of the segment that holds its
/// last character, every other token 0 (unlike [`super::span_token_offsets`], which splits a
/// span's amount, every token of a segment gets the whole offset: it is an advantage).
pub fn segment_token_offsets(segments: &[StepOffset], bounds: &[usize]) -> Vec<f32> {
    let tokens = bounds.len().saturating_sub(1);
    (0..tokens)
        .map(|t| {
            if bounds[t + 1] <= bounds[t] {
                return 0.0;
            }
            let c = bounds[t + 1] - 1;
            segments
                .iter()
                .find(|s| s.char_start <= c && c < s.char_end)
                .map_or(0.0, |s| s.offset)
        })
        .collect()
}

/// The \[PROPOSED] curriculum's memory of each prompt (saved with the checkpoint): its last two
/// final-answer pass rates and whether its subproblems are dropped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScrlCurriculum {
    /// Per prompt (the trainer's example index): the pass rates of its last two visits, oldest
    /// first, and whether it is credited on the original problem alone.
    pub prompts: BTreeMap<usize, (Vec<f64>, bool)>,
}

impl ScrlCurriculum {
    /// Whether prompt `key`'s subproblems are credited (false once it is mastered).
    pub fn uses_subproblems(&self, key: usize) -> bool {
        self.prompts.get(&key).is_none_or(|(_, dropped)| !dropped)
    }

    /// Records a visit of prompt `key` whose responses passed the original problem at
    /// `pass_rate`: a rate of 0 brings the subproblems back; otherwise a mean over the last two
    /// visits above `cfg.curriculum_threshold` drops them. Does nothing with `curriculum` off.
    pub fn observe(&mut self, key: usize, pass_rate: f64, cfg: &ScrlConfig) {
        if !cfg.curriculum {
            return;
        }
        let (recent, dropped) = self.prompts.entry(key).or_default();
        recent.push(pass_rate);
        if recent.len() > 2 {
            recent.remove(0);
        }
        if pass_rate == 0.0 {
            *dropped = false;
        } else if recent.len() == 2 && (recent[0] + recent[1]) / 2.0 > cfg.curriculum_threshold {
            *dropped = true;
        }
    }

    /// Prompts whose subproblems are dropped now.
    pub fn dropped(&self) -> usize {
        self.prompts.values().filter(|(_, d)| *d).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sep() -> ScrlConfig {
        ScrlConfig {
            answers: AnswerFormat::Separated,
            ..ScrlConfig::default()
        }
    }

    #[test]
    fn prefix_stops_at_the_first_wrong_answer() {
        let a = |c: &[bool]| SubproblemAnswers {
            intermediate: c.to_vec(),
            spans: vec![None; c.len() + 1],
        };
        assert_eq!(prefix_rewards(&a(&[true, false]), 1.0), [1.0, 0.0, 0.0]);
        assert_eq!(prefix_rewards(&a(&[true, true]), 0.5), [1.0, 1.0, 0.5]);
        assert_eq!(prefix_rewards(&a(&[false, true]), 1.0), [0.0, 0.0, 0.0]);
        assert_eq!(prefix_rewards(&a(&[]), 1.0), [1.0]);
    }

    #[test]
    fn answers_are_found_in_both_formats() {
        assert_eq!(
            locate_answers("82; 62;9", 2, &sep()),
            [Some((0, 2)), Some((4, 6))]
        );
        assert_eq!(locate_answers("62", 2, &sep()), [Some((0, 2)), None]);
        assert_eq!(
            locate_answers("82;;", 3, &sep()),
            [Some((0, 2)), None, None]
        );
        let t = "so <sub 1>\\boxed{4}</sub 1> then <sub 2> 7 </sub 2>";
        let got = locate_answers(t, 3, &ScrlConfig::default());
        assert_eq!(got, [Some((10, 19)), Some((41, 42)), None]);
        // Out of order: answer 2 before answer 1 is not found after it.
        let t = "<sub 2>7</sub 2><sub 1>4</sub 1>";
        assert_eq!(
            locate_answers(t, 2, &ScrlConfig::default()),
            [Some((23, 24)), None]
        );
        // Characters, not bytes.
        assert_eq!(
            locate_answers("é;62", 2, &sep()),
            [Some((0, 1)), Some((2, 4))]
        );
    }

    /// Tokens [0,2) [2,3) [3,5) and an empty end token: segments [0, 2) +0.5 and [2, 3) −1.
    #[test]
    fn a_token_takes_the_segment_of_its_last_character() {
        let seg = |s, e, o| StepOffset {
            char_start: s,
            char_end: e,
            offset: o,
        };
        let o = segment_token_offsets(&[seg(0, 2, 0.5), seg(2, 3, -1.0)], &[0, 2, 3, 5, 5]);
        assert_eq!(o, [0.5, -1.0, 0.0, 0.0]);
        // A token straddling the boundary [1, 3) belongs to the segment of character 2.
        let o = segment_token_offsets(&[seg(0, 2, 0.5), seg(2, 3, -1.0)], &[0, 1, 3]);
        assert_eq!(o, [0.5, -1.0]);
    }

    #[test]
    fn curriculum_drops_mastered_prompts_and_restores_failed_ones() {
        let cfg = ScrlConfig::default();
        let mut c = ScrlCurriculum::default();
        c.observe(7, 0.75, &cfg);
        assert!(c.uses_subproblems(7), "one visit is not enough");
        c.observe(7, 0.5, &cfg);
        assert!(!c.uses_subproblems(7), "mean 0.625 > 0.5");
        c.observe(7, 0.25, &cfg);
        assert!(!c.uses_subproblems(7), "stays dropped above 0");
        c.observe(7, 0.0, &cfg);
        assert!(c.uses_subproblems(7), "a failed visit restores");
        c.observe(8, 0.5, &cfg);
        c.observe(8, 0.5, &cfg);
        assert!(c.uses_subproblems(8), "mean 0.5 does not exceed 0.5");
        let off = ScrlConfig {
            curriculum: false,
            ..cfg
        };
        let mut c = ScrlCurriculum::default();
        c.observe(1, 1.0, &off);
        c.observe(1, 1.0, &off);
        assert!(c.uses_subproblems(1) && c.prompts.is_empty());
    }
}
