//! `cargo xtask gen-ecpo`: writes the bundled ECPO ranking task under `datasets/ecpo/`
//! (Evidence-Coupled Policy Optimization, arXiv 2605.21993), read by the `ecpo` verifier.
//!
//! A task ([`example`]) is a Top-K ranking over a closed roster: an intent of two attributes
//! (capital letters of [`example::ATTRIBUTES`]), 3–4 candidates with fresh two-capital IDs, and
//! 4–5 numbered evidence spans, each stating that a candidate has an attribute:
//!
//! ```text
//! R B? 1 KA R. 2 MO B. 3 KA B. 4 LU R. 5 ZE G.
//! ```
//!
//! A candidate's graded relevance is the number of intent attributes its spans give it (KA 2,
//! MO 1, LU 1, ZE 0). Every task has a relevance-2 candidate or two of relevance ≥ 1, and a hard
//! negative (relevance 0, a candidate with only non-intent attributes); a span's attribute is an
//! intent one with extra probability [`example::INTENT_BIAS_PERCENT`], so that a quarter of the tasks
//! have a relevance-2 candidate to rank first. The answer lists the
//! top `k = 2` candidates of relevance ≥ 1, each followed at once by its certificate, the
//! numbers of all its spans with an intent attribute, increasing: `KA13 MO2;` (ties in
//! relevance are written by the smaller first span; the verifier accepts either order). Every
//! character is in the bundled model's alphabet and a prompt is at most 46 characters (44 with
//! five spans), which its 64-position context needs.
//!
//! Each line is `{"id", "prompt", "intent", "spans", "k", "answer"}` (`spans` as
//! `[subject, attribute]` pairs, span `j` at index `j - 1`; `answer` the ideal answer). The
//! held-out split shares no prompt with the training split.
//!
//! Training lines also carry a `completion` for the supervised warm start, written by a careless
//! teacher ([`teacher`]): the ideal answer with probability [`teacher::IDEAL`], else an
//! incomplete certificate, a post-hoc rationalization (each item citing a random span), the two
//! top items swapped, or a hard negative ranked second. A warm-started model ranks decently but
//! cites carelessly: room for ECPO's coupled evidence rewards to teach what the demonstrations
//! did not.

pub mod example;
pub mod teacher;

use std::collections::HashSet;
use std::path::Path;

use anyhow::Result;

use crate::gen_data::{SplitMix64, write_splits};
use example::{Example, K};

/// Number of training examples.
pub const TRAIN_SIZE: usize = 16_000;
/// Number of held-out examples.
pub const TEST_SIZE: usize = 200;
/// Seed of the generator streams.
pub const SEED: u64 = 20_261_207;

/// Draws `train + test` examples with distinct prompts; the first `test` form the held-out
/// split, as `(train, test)`.
pub fn generate(train: usize, test: usize, seed: u64) -> (Vec<Example>, Vec<Example>) {
    let mut rng = SplitMix64(seed);
    let mut seen = HashSet::new();
    let mut all = Vec::with_capacity(train + test);
    while all.len() < train + test {
        let ex = Example::draw(&mut rng);
        if seen.insert(ex.prompt()) {
            all.push(ex);
        }
    }
    let train_split = all.split_off(test);
    (train_split, all)
}

/// The JSONL lines of a split: `{"id", "prompt", "intent", "spans", "k", "answer"}` and, when
/// `completions` is true (training), the teacher's `completion`.
pub fn to_jsonl(split: &str, examples: &[Example], completions: bool) -> String {
    let mut rng = SplitMix64(SEED ^ 0xC0DE);
    examples
        .iter()
        .enumerate()
        .map(|(i, ex)| {
            let intent: Vec<String> = ex.intent.iter().map(char::to_string).collect();
            let spans: Vec<[String; 2]> = ex
                .spans
                .iter()
                .map(|s| [s.subject.clone(), s.attribute.to_string()])
                .collect();
            let mut record = serde_json::json!({
                "id": format!("ecpo-{split}-{i:05}"), "prompt": ex.prompt(), "intent": intent,
                "spans": spans, "k": K, "answer": ex.ideal_answer(),
            });
            if completions {
                record["completion"] = teacher::completion(ex, &mut rng).into();
            }
            record.to_string() + "\n"
        })
        .collect()
}

/// Writes `train.jsonl` and `test.jsonl` into `dir`, then a summary line.
pub fn write(dir: &Path) -> Result<()> {
    let (train, test) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
    let train_text = to_jsonl("train", &train, true);
    let ideal = train_text
        .lines()
        .filter(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a line just written");
            v["completion"] == v["answer"]
        })
        .count();
    write_splits(
        dir,
        [
            ("train", train_text, train.len()),
            ("test", to_jsonl("test", &test, false), test.len()),
        ],
    )?;
    eprintln!(
        "xtask: ecpo: {} training, {} held-out examples; {:.1} % of the training completions ideal",
        train.len(),
        test.len(),
        100.0 * ideal as f64 / train.len() as f64
    );
    Ok(())
}

#[cfg(test)]
mod tests;
