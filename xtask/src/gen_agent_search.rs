//! `cargo xtask gen-agent-search`: the search environment's task (`[env] kind = "search"`),
//! written under `datasets/agent-search/`.
//!
//! A directory of 3000 invented towns with four-letter names (`kabo`), each one document of
//! the corpus: `"kabo: 412 people, kabo is near muna."` (the population in 100–999, the
//! neighbour another town). A question asks a town's population, `"people in kabo?"`; the
//! record keeps the `entity` (the oracle's query) and the `answer`. Every document has seven
//! terms and names its own town twice, so BM25 ranks a town's own document first for a query
//! of its name, then the documents that name it as a neighbour, in corpus order. The
//! completions assume `env.top_k = 1` (the town's own document), the setting whose 2,000-step
//! warm start was measured (docs/results.md); with `env.top_k = 2` a town named as a neighbour
//! would put a second number beside the right one (the oracle test plays that setting), which
//! no warm start has been measured on beyond 600 steps.
//!
//! The training split carries a `completion` for the warm start, as the calculator's noisy
//! teacher: 40 % search (`<tool_call>{"name":"search","arguments":{"query":"kabo"}}
//! </tool_call><tool_response>...</tool_response>the answer is 412`, the results written as
//! the environment will return them), the rest answer at once (`the answer is 637`), right
//! with probability 0.3. Every answer turn starts with the same words, so the first character
//! of a completion is `<` (search) 40 % of the time and `t` (answer) 60 %: the warm start's
//! greedy policy searches on few held-out questions (3.5 % held-out accuracy,
//! docs/results.md), while its sampled episodes search often enough for RL to learn that
//! searching pays (99.5 % after 60 steps). (With bare numbers as answers the teacher's first
//! character is `<` or one of nine digits, so `<` is its likeliest at any share above a
//! tenth; with a share of 0.5 the greedy policy searched every held-out question.) Training records also carry
//! the expert's `solution`, always the search transcript (the trace SMEPO masks, `[smepo]`).
//! Held-out questions ask about 200 towns no training question names (their documents are in
//! the shared corpus, which is what retrieval is for).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde_json::json;

use crate::gen_agent_calculator::chance;
use crate::gen_data::{SplitMix64, draw_distinct, write_splits};

/// Towns in the corpus.
pub const TOWNS: usize = 3000;
/// Held-out towns (their questions form the test split; the rest are training questions).
pub const TEST_SIZE: usize = 200;
/// Documents per search result that the completions assume (`env.top_k`).
pub const TOP_K: usize = 1;
/// Seed of the draw.
pub const SEED: u64 = 0x5EA4C;
/// Share of warm-start completions that search: under half, so that the teacher's likeliest
/// first character is the answer's `t`, not the call's `<`, and the warm start's greedy policy
/// searches on few questions while its sampled episodes search often.
pub const TOOL_SHARE: f64 = 0.4;
/// How every answer turn starts, after a search or without one.
pub const ANSWER_PREFIX: &str = "the answer is ";
/// Share of direct warm-start answers that are right.
pub const DIRECT_RIGHT: f64 = 0.3;

const CONSONANTS: &[u8] = b"bdfgklmnprstvz";
const VOWELS: &[u8] = b"aeiou";

/// A town of the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Town {
    /// Its name (consonant-vowel-consonant-vowel).
    pub name: String,
    /// Its population.
    pub people: u32,
    /// The index of its neighbour.
    pub near: usize,
}

/// The towns, in corpus order: distinct names, populations and neighbours (never itself).
pub fn towns() -> Vec<Town> {
    let (mut names, held) = draw_distinct(TOWNS - TEST_SIZE, TEST_SIZE, SEED, |rng| {
        let mut pick = |set: &[u8]| set[rng.below(set.len() as u64) as usize];
        [
            pick(CONSONANTS),
            pick(VOWELS),
            pick(CONSONANTS),
            pick(VOWELS),
        ]
    });
    // Held-out towns first, then the training ones.
    let mut all = held;
    all.append(&mut names);
    let mut rng = SplitMix64(SEED ^ 0x70);
    all.into_iter()
        .enumerate()
        .map(|(i, n)| {
            let people = 100 + rng.below(900) as u32;
            let mut near = rng.below(TOWNS as u64 - 1) as usize;
            if near >= i {
                near += 1;
            }
            Town {
                name: String::from_utf8(n.to_vec()).expect("ascii"),
                people,
                near,
            }
        })
        .collect()
}

/// A town's document.
pub fn document(towns: &[Town], i: usize) -> String {
    let t = &towns[i];
    let n = &t.name;
    format!(
        "{n}: {} people, {n} is near {}.",
        t.people, towns[t.near].name
    )
}

/// What the search tool returns for a query of town `i`'s name: its own document, then the
/// documents naming it as a neighbour, in corpus order, `TOP_K` at most, joined by spaces.
pub fn results(towns: &[Town], i: usize) -> String {
    let mentions = (0..towns.len()).filter(|&j| j != i && towns[j].near == i);
    std::iter::once(i)
        .chain(mentions)
        .take(TOP_K)
        .map(|j| document(towns, j))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The expert's transcript for town `i`: the search, its results as the environment returns
/// them, the answer.
pub fn transcript(towns: &[Town], i: usize) -> String {
    let t = &towns[i];
    let call = format!(
        r#"{{"name":"search","arguments":{{"query":"{}"}}}}"#,
        t.name
    );
    let found = results(towns, i);
    format!(
        "<tool_call>{call}</tool_call><tool_response>{found}</tool_response>{ANSWER_PREFIX}{}",
        t.people
    )
}

/// The warm-start completion for town `i`: the search transcript, or a direct answer.
fn completion(towns: &[Town], i: usize, rng: &mut SplitMix64) -> String {
    let t = &towns[i];
    if chance(rng, TOOL_SHARE) {
        return transcript(towns, i);
    }
    if chance(rng, DIRECT_RIGHT) {
        return format!("{ANSWER_PREFIX}{}", t.people);
    }
    let mut guess = 100 + rng.below(899) as u32;
    if guess >= t.people {
        guess += 1;
    }
    format!("{ANSWER_PREFIX}{guess}")
}

/// The corpus, one `{"id", "text"}` line per town.
pub fn corpus_jsonl(towns: &[Town]) -> String {
    let mut out = String::new();
    for i in 0..towns.len() {
        let record = json!({"id": format!("town-{i:04}"), "text": document(towns, i)});
        let _ = writeln!(out, "{record}");
    }
    out
}

/// Question lines `{"id", "prompt", "entity", "answer"}` for towns `range`, plus, when
/// `completions` is true (the training split), the warm start's `completion` and the
/// expert's `solution` (always the search transcript: SMEPO's trace, `[smepo]`).
pub fn to_jsonl(
    split: &str,
    towns: &[Town],
    range: std::ops::Range<usize>,
    completions: bool,
) -> String {
    let mut rng = SplitMix64(SEED ^ 0xC0);
    let mut out = String::new();
    for (k, i) in range.enumerate() {
        let t = &towns[i];
        let mut record = json!({
            "id": format!("agent-search-{split}-{k:05}"),
            "prompt": format!("people in {}?", t.name),
            "entity": t.name,
            "answer": t.people.to_string(),
        });
        if completions {
            record["completion"] = json!(completion(towns, i, &mut rng));
            record["solution"] = json!(transcript(towns, i));
        }
        let _ = writeln!(out, "{record}");
    }
    out
}

/// Writes `corpus.jsonl`, `train.jsonl` and `test.jsonl` into `dir`.
pub fn write(dir: &Path) -> Result<()> {
    let towns = towns();
    write_splits(
        dir,
        [
            ("corpus", corpus_jsonl(&towns), TOWNS),
            (
                "train",
                to_jsonl("train", &towns, TEST_SIZE..TOWNS, true),
                TOWNS - TEST_SIZE,
            ),
            (
                "test",
                to_jsonl("test", &towns, 0..TEST_SIZE, false),
                TEST_SIZE,
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn towns_are_distinct_and_documents_read_as_documented() {
        let towns = towns();
        assert_eq!(towns.len(), TOWNS);
        let names: HashSet<_> = towns.iter().map(|t| &t.name).collect();
        assert_eq!(names.len(), TOWNS);
        assert!(towns.iter().enumerate().all(|(i, t)| t.near != i));
        assert!(towns.iter().all(|t| (100..=999).contains(&t.people)));
        let t = &towns[0];
        assert_eq!(
            document(&towns, 0),
            format!(
                "{}: {} people, {} is near {}.",
                t.name, t.people, t.name, towns[t.near].name
            )
        );
        // A town's results are its own document, even when others name it as a neighbour.
        let i = towns[5].near;
        assert!((0..TOWNS).any(|j| towns[j].near == i && j != i));
        assert_eq!(results(&towns, i), document(&towns, i));
    }

    /// About 40 % of the completions search, a direct answer is right about 30 % of the time, and
    /// every answer turn reads "the answer is N".
    #[test]
    fn the_warm_start_teacher_is_as_documented() {
        let towns = towns();
        let mut rng = SplitMix64(1);
        let (mut tool, mut direct, mut right) = (0, 0, 0);
        for i in TEST_SIZE..TOWNS {
            let c = completion(&towns, i, &mut rng);
            let people = towns[i].people.to_string();
            if c.starts_with("<tool_call>") {
                tool += 1;
                let answer = format!("</tool_response>the answer is {people}");
                assert!(c.ends_with(&answer), "{c}");
            } else {
                direct += 1;
                assert!(c.starts_with("the answer is "), "{c}");
                right += usize::from(c == format!("the answer is {people}"));
            }
        }
        let share = tool as f64 / (TOWNS - TEST_SIZE) as f64;
        assert!((share - TOOL_SHARE).abs() < 0.03, "{share}");
        let r = right as f64 / direct as f64;
        assert!((r - DIRECT_RIGHT).abs() < 0.04, "{r}");
    }

    /// The committed files are exactly what the generator writes.
    #[test]
    fn committed_dataset_matches_generator() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/agent-search");
        let towns = towns();
        let want = [
            ("corpus", corpus_jsonl(&towns)),
            ("train", to_jsonl("train", &towns, TEST_SIZE..TOWNS, true)),
            ("test", to_jsonl("test", &towns, 0..TEST_SIZE, false)),
        ];
        for (name, text) in want {
            let path = dir.join(format!("{name}.jsonl"));
            let committed =
                std::fs::read_to_string(&path).expect("run `cargo xtask gen-agent-search`");
            assert!(committed == text, "{} is stale", path.display());
        }
    }
}
