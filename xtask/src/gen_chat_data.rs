//! `cargo xtask gen-data` (second task): small-number arithmetic asked in words, for chat models,
//! written under `datasets/arith-chat/`.
//!
//! Prompts read `"What is 14 + 7?"`; operands are 1–20 and a subtraction never goes below zero,
//! so a small instruction-tuned model (SmolLM2-135M-Instruct: 20% greedy on the held-out split)
//! solves some problems and fails others — the regime where RLVR has a signal. The answer is the
//! exact integer; the math verifier takes the reply's last number. All (a, op, b) triples are
//! shuffled with the generator's own SplitMix64 stream (byte-for-byte reproducible) and split
//! into disjoint training and held-out sets.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::gen_data::{SplitMix64, write_splits};

/// Largest operand.
pub const MAX_OPERAND: i64 = 20;
/// Number of held-out problems (the rest of the distinct problems are for training).
pub const TEST_SIZE: usize = 200;
/// Seed of the shuffle.
pub const SEED: u64 = 20_261_204;

/// Every distinct problem `(a, op, b)` with `1 <= a, b <= MAX_OPERAND` and `a - b >= 0`.
fn all_problems() -> Vec<(i64, char, i64)> {
    let mut all = Vec::new();
    for a in 1..=MAX_OPERAND {
        for b in 1..=MAX_OPERAND {
            all.push((a, '+', b));
            if a >= b {
                all.push((a, '-', b));
            }
        }
    }
    all
}

/// The shuffled problems split into (train, test).
pub fn generate() -> (Vec<(i64, char, i64)>, Vec<(i64, char, i64)>) {
    let mut all = all_problems();
    let mut rng = SplitMix64(SEED);
    // Fisher–Yates.
    for i in (1..all.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        all.swap(i, j);
    }
    let train = all.split_off(TEST_SIZE);
    (train, all)
}

/// JSONL lines `{"id", "prompt", "answer"}`.
pub fn to_jsonl(split: &str, problems: &[(i64, char, i64)]) -> String {
    let mut out = String::new();
    for (i, &(a, op, b)) in problems.iter().enumerate() {
        let answer = if op == '+' { a + b } else { a - b };
        let _ = writeln!(
            out,
            r#"{{"id":"arith-chat-{split}-{i:04}","prompt":"What is {a} {op} {b}?","answer":"{answer}"}}"#
        );
    }
    out
}

/// Writes `train.jsonl` and `test.jsonl` into `dir`.
pub fn write(dir: &Path) -> Result<()> {
    let (train, test) = generate();
    write_splits(
        dir,
        [
            ("train", to_jsonl("train", &train), train.len()),
            ("test", to_jsonl("test", &test), test.len()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn splits_are_disjoint_and_cover_every_problem() {
        let (train, test) = generate();
        // 400 additions + 210 subtractions with a >= b (20·21/2).
        assert_eq!((train.len(), test.len()), (410, 200));
        let train: HashSet<_> = train.into_iter().collect();
        assert!(test.iter().all(|p| !train.contains(p)));
    }

    #[test]
    fn lines_carry_the_exact_answer() {
        let text = to_jsonl("test", &[(14, '+', 7), (9, '-', 9)]);
        assert_eq!(
            text,
            "{\"id\":\"arith-chat-test-0000\",\"prompt\":\"What is 14 + 7?\",\"answer\":\"21\"}\n\
             {\"id\":\"arith-chat-test-0001\",\"prompt\":\"What is 9 - 9?\",\"answer\":\"0\"}\n"
        );
    }

    /// The committed files are exactly what the generator writes.
    #[test]
    fn committed_dataset_matches_generator() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/arith-chat");
        let (train, test) = generate();
        for (name, problems) in [("train", &train), ("test", &test)] {
            let path = dir.join(format!("{name}.jsonl"));
            let committed = std::fs::read_to_string(&path).expect("run `cargo xtask gen-data`");
            assert!(
                committed == to_jsonl(name, problems),
                "{} is stale",
                path.display()
            );
        }
    }
}
