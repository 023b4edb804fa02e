//! AMR-SD's reflection (methods-extra §16 step 1, **\[PROPOSED]**: the paper's prompts are not
//! published): the current policy, without gradient and with the rollout sampler
//! (`rlvr_models::generate` at the rollout temperature), writes a short hint per rollout (or
//! per group, `amr_sd.per_group`) in three phases:
//!
//! 1. diagnose: `amr_sd.diagnose_template` with the problem, the verifier's result in words
//!    (`PASS (REWARD 1.00)` / `FAIL (REWARD 0.00, ANSWER 7)`), one correct rollout of the group
//!    (else `(NONE)`) and the rollout itself → a diagnosis of at most `hint_max_tokens` tokens;
//! 2. abstract: `amr_sd.hint_template` with the problem and the diagnosis → a question-style
//!    hint of at most `hint_max_tokens` tokens;
//! 3. leakage check (programmatic): a hint that states the gold answer ([`leaks`]) is
//!    regenerated from the same diagnosis with a new seed, at most `max_regenerations` times,
//!    then dropped; an empty hint is dropped too. A row without a hint keeps m = 1.
//!
//! In `per_group` mode the group's reflected rollout is its worst (the lowest reward, the first
//! on ties), and its hint conditions every rollout of the group. Prompts are plain text, or one
//! user turn of the chat template when the example's prompt uses it. Seeds are a function of
//! (run seed, stage step, phase, try), so a resumed run writes the same hints.

use rlvr_models::{CausalLm, GenerationConfig, generate};
use rlvr_objectives::shaping::AmrSdConfig;
use rlvr_objectives::shaping::amr_sd::placeholders as ph;

use super::rollout::{generation_config, step_seed};
use crate::batch::Sample;
use crate::data::{Example, Message};
use crate::error::Result;
use crate::prompt::render_prompt;
use crate::trainer::Trainer;

/// The hints of one step and what the reflection did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hints {
    /// One entry per sample: the accepted hint, or `None` (not reflected, leaked, empty).
    pub per_sample: Vec<Option<String>>,
    /// Reflections run (rows, or groups in `per_group` mode).
    pub reflected: usize,
    /// Hint regenerations after a leak.
    pub regenerated: usize,
    /// Hints dropped because every try stated the gold answer.
    pub leak_dropped: usize,
    /// Hints dropped because they were empty.
    pub empty_dropped: usize,
}

/// Whether `hint` states the gold answer `gold`: a case-insensitive occurrence of the trimmed
/// answer that is not part of a longer word or number (an alphanumeric character next to an
/// alphanumeric end of the answer: "7" is not in "17" or "x7", it is in "= 7." and "(7)"). An
/// empty gold answer cannot be checked, so every hint counts as leaking.
pub fn leaks(hint: &str, gold: &str) -> bool {
    let gold = gold.trim().to_lowercase();
    if gold.is_empty() {
        return true;
    }
    let hint = hint.to_lowercase();
    let alnum_start = gold.chars().next().is_some_and(char::is_alphanumeric);
    let alnum_end = gold.chars().last().is_some_and(char::is_alphanumeric);
    hint.match_indices(&gold).any(|(at, m)| {
        let before = hint[..at].chars().next_back();
        let after = hint[at + m.len()..].chars().next();
        // A whole-word match: the gold answer is not glued to letters or digits around it.
        let glued_before = alnum_start && before.is_some_and(char::is_alphanumeric);
        let glued_after = alnum_end && after.is_some_and(char::is_alphanumeric);
        !glued_before && !glued_after
    })
}

/// Phase 2 and 3 over `n` reflections: `generate(try, rows)` writes a hint for each of `rows`
/// (indices into the `n` reflections) at try `try` (0 = the first); a hint that [`leaks`] the
/// gold answer of its reflection (`golds[i]`) is tried again, at most `max_regenerations` more
/// times, then dropped, and an empty (after trimming) hint is dropped. Returns the hints and
/// (regenerated, leak_dropped, empty_dropped).
pub fn accept_hints(
    golds: &[String],
    max_regenerations: usize,
    mut generate: impl FnMut(usize, &[usize]) -> Result<Vec<String>>,
) -> Result<(Vec<Option<String>>, usize, usize, usize)> {
    let n = golds.len();
    let mut out: Vec<Option<String>> = vec![None; n];
    let mut pending: Vec<usize> = (0..n).collect();
    let (mut regenerated, mut empty) = (0usize, 0usize);
    for attempt in 0..=max_regenerations {
        if pending.is_empty() {
            break;
        }
        regenerated += if attempt > 0 { pending.len() } else { 0 };
        let texts = generate(attempt, &pending)?;
        let mut leaked = Vec::new();
        for (&i, text) in pending.iter().zip(texts) {
            let text = text.trim();
            if text.is_empty() {
                empty += 1;
            } else if leaks(text, &golds[i]) {
                leaked.push(i);
            } else {
                out[i] = Some(text.to_string());
            }
        }
        pending = leaked;
    }
    Ok((out, regenerated, pending.len(), empty))
}

/// The hints for the groups `groups` (indices of contiguous groups of `group_size` samples) of
/// `samples`, written by `policy` (pass `model().valid()`); `golds[g]` is group g's gold answer
/// (one per group of `groups`) and `stage_step` the stages' step counter (for the seeds).
///
/// # Errors
/// A prompt the tokenizer rejects or a generation it cannot decode.
pub fn hints(
    tr: &Trainer,
    policy: &CausalLm,
    samples: &[Sample],
    groups: &[usize],
    golds: &[String],
    stage_step: u64,
) -> Result<Hints> {
    let Some(cfg) = &tr.config.stages.amr_sd else {
        return Ok(Hints::default());
    };
    let g = tr.config.rollout.group_size;
    // The reflected rows, each with its group's slot in `groups`.
    let mut subjects: Vec<(usize, usize)> = Vec::new();
    for (slot, &gi) in groups.iter().enumerate() {
        let rows = gi * g..(gi + 1) * g;
        if cfg.per_group {
            let worst = rows
                .clone()
                .reduce(|a, b| {
                    if samples[b].reward < samples[a].reward {
                        b
                    } else {
                        a
                    }
                })
                .expect("a group has samples");
            subjects.push((worst, slot));
        } else {
            subjects.extend(rows.map(|i| (i, slot)));
        }
    }
    if subjects.is_empty() {
        return Ok(Hints {
            per_sample: vec![None; samples.len()],
            ..Hints::default()
        });
    }
    let gen_cfg = GenerationConfig {
        max_new_tokens: cfg.hint_max_tokens,
        ..generation_config(&tr.config.rollout, &tr.tokenizer, false)
    };
    let seed = tr.config.seed ^ REFLECTION_SEED;
    // Generates from `prompts[k]` for each reflection k of `which`, at `phase`'s seed.
    let run = |prompts: &[String], which: &[usize], phase: usize| -> Result<Vec<String>> {
        let ids = which
            .iter()
            .map(|&k| encode(tr, &samples[subjects[k].0], &prompts[k]))
            .collect::<Result<Vec<_>>>()?;
        let seed = step_seed(seed, stage_step as usize, phase);
        generate(policy, &ids, &gen_cfg, seed)
            .into_iter()
            .map(|out| Ok(tr.tokenizer.decode_skip_special(&out.tokens)?))
            .collect()
    };
    let everyone: Vec<usize> = (0..subjects.len()).collect();
    // Phase 1: diagnose.
    let problems: Vec<String> = subjects
        .iter()
        .map(|&(i, _)| problem(&tr.train_set[samples[i].example]))
        .collect();
    let diagnose: Vec<String> = subjects
        .iter()
        .zip(&problems)
        .map(|(&(i, _), p)| diagnose_prompt(cfg, samples, i, g, p))
        .collect();
    let diagnoses: Vec<String> = run(&diagnose, &everyone, 0)?
        .into_iter()
        .map(|d| d.trim().to_string())
        .collect();
    // Phases 2 and 3: abstract into a hint, check it for leakage, regenerate or drop.
    let hint_prompts: Vec<String> = problems
        .iter()
        .zip(&diagnoses)
        .map(|(p, d)| {
            cfg.hint_template
                .replace(ph::PROBLEM, p)
                .replace(ph::DIAGNOSIS, d)
        })
        .collect();
    let subject_golds: Vec<String> = subjects.iter().map(|&(_, s)| golds[s].clone()).collect();
    let (accepted, regenerated, leak_dropped, empty_dropped) =
        accept_hints(&subject_golds, cfg.max_regenerations, |attempt, rows| {
            run(&hint_prompts, rows, 1 + attempt)
        })?;
    let mut per_sample = vec![None; samples.len()];
    for (&(i, _), hint) in subjects.iter().zip(accepted) {
        if cfg.per_group {
            let gi = i / g;
            for s in &mut per_sample[gi * g..(gi + 1) * g] {
                s.clone_from(&hint);
            }
        } else {
            per_sample[i] = hint;
        }
    }
    Ok(Hints {
        per_sample,
        reflected: subjects.len(),
        regenerated,
        leak_dropped,
        empty_dropped,
    })
}

/// Mixed into the run seed for the reflection's sampling (distinct from the rollouts' seeds).
const REFLECTION_SEED: u64 = 0xA3D5_11E7_0C4F_2B19;

/// Phase 1's prompt for sample `i` of `samples` (groups of `g`).
fn diagnose_prompt(
    cfg: &AmrSdConfig,
    samples: &[Sample],
    i: usize,
    g: usize,
    problem: &str,
) -> String {
    let s = &samples[i];
    let gi = i / g;
    let peer = samples[gi * g..(gi + 1) * g]
        .iter()
        .enumerate()
        .find(|&(j, p)| p.passed && gi * g + j != i)
        .map_or_else(|| "(NONE)".to_string(), |(_, p)| p.text.clone());
    cfg.diagnose_template
        .replace(ph::PROBLEM, problem)
        .replace(ph::VERDICT, &verdict(s))
        .replace(ph::PEER, &peer)
        .replace(ph::RESPONSE, &s.text)
}

/// The verifier's result in words (upper case, so the bundled character model can read it).
fn verdict(s: &Sample) -> String {
    if s.passed {
        format!("PASS (REWARD {:.2})", s.reward)
    } else {
        match &s.extracted {
            Some(a) => format!("FAIL (REWARD {:.2}, ANSWER {a})", s.reward),
            None => format!("FAIL (REWARD {:.2}, NO ANSWER)", s.reward),
        }
    }
}

/// The problem's text: the plain prompt, else the chat turns' contents.
pub(crate) fn problem(ex: &Example) -> String {
    match (&ex.prompt, &ex.messages) {
        (Some(p), _) => p.clone(),
        (None, Some(m)) => m
            .iter()
            .map(|t| t.content.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        (None, None) => String::new(),
    }
}

/// Token ids of a reflection prompt, rendered like the sample's own prompt (one user turn of the
/// chat template when the example uses it).
pub(crate) fn encode(tr: &Trainer, s: &Sample, text: &str) -> Result<Vec<u32>> {
    let ex = &tr.train_set[s.example];
    let wrapped = Example {
        id: ex.id.clone(),
        prompt: Some(text.to_string()),
        messages: ex.messages.as_ref().map(|_| {
            vec![Message {
                role: "user".into(),
                content: text.to_string(),
            }]
        }),
        record: serde_json::Value::Null,
    };
    let rendered = render_prompt(&tr.tokenizer, &wrapped, tr.config.data.chat_template)?;
    Ok(tr.tokenizer.encode(&rendered)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gold answer as a standalone word or number leaks, case-insensitively; inside a longer
    /// number or word it does not; an answer with non-alphanumeric ends matches anywhere.
    #[test]
    fn the_leakage_filter_finds_the_answer_as_a_whole() {
        assert!(leaks("IS IT 7?", "7"));
        assert!(leaks("3+4=7.", " 7 "));
        assert!(leaks("(7)", "7"));
        assert!(!leaks("IS IT 17 OR 70?", "7"));
        assert!(!leaks("X7 IS NOT IT", "7"));
        assert!(leaks("Try Paris again", "paris"));
        assert!(!leaks("Parisian food", "paris"));
        assert!(leaks("is it 3/4?", "3/4"));
        assert!(!leaks("is it 13/45?", "3/4"));
        assert!(leaks("the answer is -2", "-2"));
        assert!(
            leaks("a+b-2", "-2"),
            "a non-alphanumeric start matches after a letter"
        );
        assert!(!leaks("WHAT IS 3+4?", "8"));
        assert!(
            leaks("anything", "  "),
            "an empty gold answer cannot be checked"
        );
    }

    /// Try 0 leaks for reflections 0 and 2 and is empty for 3; try 1 fixes 0 and leaks 2 again;
    /// with 2 regenerations reflection 2 is tried three times and dropped; with 0 it is dropped
    /// at once and 0 is dropped too.
    #[test]
    fn leaking_hints_are_regenerated_then_dropped() {
        let golds: Vec<String> = ["5", "6", "7", "8"].iter().map(|s| s.to_string()).collect();
        let mut calls = Vec::new();
        let fake = |attempt: usize, rows: &[usize], calls: &mut Vec<Vec<usize>>| {
            calls.push(rows.to_vec());
            Ok(rows
                .iter()
                .map(|&r| match (r, attempt) {
                    (0, 0) => "IS IT 5?".to_string(),
                    (0, _) => "WHAT IS 2+3?".to_string(),
                    (1, _) => " ADD THE ONES ".to_string(),
                    (2, _) => "7".to_string(),
                    _ => "  ".to_string(),
                })
                .collect())
        };
        let (hints, regenerated, leak, empty) =
            accept_hints(&golds, 2, |a, rows| fake(a, rows, &mut calls)).unwrap();
        assert_eq!(
            hints,
            [
                Some("WHAT IS 2+3?".to_string()),
                Some("ADD THE ONES".to_string()),
                None,
                None
            ]
        );
        assert_eq!((regenerated, leak, empty), (3, 1, 1));
        assert_eq!(calls, [vec![0, 1, 2, 3], vec![0, 2], vec![2]]);
        let mut calls = Vec::new();
        let (hints, regenerated, leak, empty) =
            accept_hints(&golds, 0, |a, rows| fake(a, rows, &mut calls)).unwrap();
        assert_eq!(hints[0], None);
        assert_eq!((regenerated, leak, empty), (0, 2, 1));
    }
}
