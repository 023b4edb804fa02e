//! `cargo xtask gen-k2v`: writes the bundled K2V task under `datasets/k2v/` (methods-extra §17,
//! "Knowledge-to-Verification", arXiv 2605.18261): a seeded synthetic knowledge graph
//! (`triples.jsonl`) and fill-in-the-blank questions synthesized from it (`train.jsonl`,
//! `test.jsonl`), read by the `k2v` verifier (`answer`, `adjacent`).
//!
//! The world ([`world`]): languages, countries that speak one, cities in a country, persons born
//! in a city and working in a city, all with made-up three-letter names in capitals, so every
//! character is in the bundled model's alphabet and nothing is looked up from outside. The
//! questions ([`synth`]): a depth-1 subgraph of at most three facts, written with fixed
//! templates, one entity masked (`*`) everywhere it occurs.
//!
//! **Split by subgraph.** A question's subgraph (its set of facts) is either training or
//! held-out, drawn once per distinct subgraph, so no held-out question has the context of a
//! training question. The facts themselves are shared: the task is recall of the graph's
//! knowledge, and the masked fact is exactly what a question asks for, so a split by masked
//! entity would put every held-out answer outside what training can teach. Held-out questions
//! test the trained knowledge in contexts never seen in training.
//!
//! Training lines carry a `completion` for the supervised warm start in the compact format of
//! the `k2v` verifier (`tags = "compact"`: `(` reasoning `)` `=` answer `;`), written by a
//! careless teacher: with probability [`SKIP_THINK`] no reasoning block (`=ZAR;`, which the
//! format term does not reward), else one of the answer's adjacent entities as reasoning
//! (`(VEL)=ZAR;`); with probability [`SLIP`] the answer is another entity of the same type. A
//! warm-started model thus recalls most facts, not all, and reasons only sometimes: room for
//! the reward to teach both.

pub mod synth;
pub mod world;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Result;

use crate::gen_data::{SplitMix64, write_splits};
use synth::{Question, synthesize};
use world::{World, WorldSize};

/// The bundled world's size: 64 entities, 96 facts.
pub const SIZE: WorldSize = WorldSize {
    languages: 4,
    countries: 6,
    cities_per_country: 3,
    persons_per_city: 2,
};
/// Subgraphs drawn; repeats (same facts, same masked entity) are dropped.
pub const DRAWS: usize = 8_000;
/// Share of distinct subgraphs held out, in percent.
pub const TEST_PERCENT: u64 = 12;
/// Probability (percent) that the teacher writes no reasoning block.
pub const SKIP_THINK: u64 = 30;
/// Probability (percent) that the teacher's answer is another entity of the answer's type.
pub const SLIP: u64 = 30;
/// Seed of the generator streams.
pub const SEED: u64 = 20_261_204;

/// The world and its two splits.
pub struct Dataset {
    /// The knowledge graph.
    pub world: World,
    /// Training questions.
    pub train: Vec<Question>,
    /// Held-out questions.
    pub test: Vec<Question>,
}

/// Draws the world and the questions from `seed`.
pub fn generate(seed: u64) -> Dataset {
    let world = World::generate(SIZE, seed);
    let facts: HashSet<_> = world.triples.iter().copied().collect();
    let mut rng = SplitMix64(seed ^ 0x004B_3256);
    let mut seen = HashSet::new();
    let mut held_out: HashMap<Vec<usize>, bool> = HashMap::new();
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for _ in 0..DRAWS {
        let Some(q) = synthesize(&world, &facts, &mut rng) else {
            continue;
        };
        if !seen.insert((q.edge_set(), q.masked)) {
            continue;
        }
        let test_side = *held_out
            .entry(q.edge_set())
            .or_insert_with(|| rng.below(100) < TEST_PERCENT);
        if test_side { &mut test } else { &mut train }.push(q);
    }
    Dataset { world, train, test }
}

/// The careless teacher's completion of a training question (see the module).
pub fn completion(q: &Question, world: &World, rng: &mut SplitMix64) -> String {
    let mut answer = q.answer.as_str();
    if rng.below(100) < SLIP {
        let t = world.types[q.masked];
        let others: Vec<usize> = (0..world.names.len())
            .filter(|&e| world.types[e] == t && e != q.masked)
            .collect();
        answer = &world.names[others[rng.below(others.len() as u64) as usize]];
    }
    if rng.below(100) < SKIP_THINK || q.adjacent.is_empty() {
        format!("={answer};")
    } else {
        let hint = &q.adjacent[rng.below(q.adjacent.len() as u64) as usize];
        format!("({hint})={answer};")
    }
}

/// The JSONL lines of a split: `{"id", "prompt", "answer", "adjacent", "subgraph"}` and, for
/// training, `completion`.
pub fn to_jsonl(split: &str, questions: &[Question], world: &World, completions: bool) -> String {
    let mut rng = SplitMix64(SEED ^ 0xC0DE);
    questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let subgraph: Vec<[&str; 3]> = q
                .edges
                .iter()
                .map(|&e| {
                    let t = world.triples[e];
                    [
                        world.names[t.head].as_str(),
                        t.relation.name(),
                        world.names[t.tail].as_str(),
                    ]
                })
                .collect();
            let mut record = serde_json::json!({
                "id": format!("k2v-{split}-{i:05}"), "prompt": q.prompt, "answer": q.answer,
                "adjacent": q.adjacent, "subgraph": subgraph,
            });
            if completions {
                record["completion"] = completion(q, world, &mut rng).into();
            }
            record.to_string() + "\n"
        })
        .collect()
}

/// Writes `triples.jsonl`, `train.jsonl` and `test.jsonl` into `dir`.
pub fn write(dir: &Path) -> Result<()> {
    let d = generate(SEED);
    write_splits(
        dir,
        [
            ("triples", d.world.to_jsonl(), d.world.triples.len()),
            (
                "train",
                to_jsonl("train", &d.train, &d.world, true),
                d.train.len(),
            ),
            (
                "test",
                to_jsonl("test", &d.test, &d.world, false),
                d.test.len(),
            ),
        ],
    )
}

#[cfg(test)]
mod tests;
