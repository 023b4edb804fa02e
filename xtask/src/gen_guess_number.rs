//! `cargo xtask gen-guess-number`: the guess-the-number game's task (`[env] kind =
//! "guess_number"`), written under `datasets/guess-number/`.
//!
//! A game hides a number in `[low, high]` (`low` in 1–80, 8–15 numbers) and is asked as
//! `GUESS 12-26:`. The policy probes `19?` and reads `L` (lower), `H` (higher) or `=`, then
//! answers the number; the environment (`crates/rlvr-train/src/env/guess_number.rs`) keeps the
//! game. Held-out games are disjoint from the training ones.
//!
//! The training splits carry a `completion` for the warm start, the whole transcript of a
//! teacher's game with the environment's feedback written as the environment writes it
//! (`19?L15?H17?=17`). The teacher bisects in [`BISECT_SHARE`] of the games; otherwise it
//! probes a random number of the interval that the feedback leaves, and after [`MAX_PROBES`]
//! probes answers a random number of that interval, so it wins about 80 % of its games (79 % of
//! the committed training games; tested). A policy that bisects always wins within
//! `MAX_PROBES` probes.
//! `train-belief.jsonl` is the same games with each turn opened by the teacher's belief, the
//! interval it knows to hold the number (`(12,26)19?L(12,18)15?...`), the format ReBel's
//! belief checks read.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde_json::json;

use crate::gen_agent_calculator::chance;
use crate::gen_data::{SplitMix64, draw_distinct, write_splits};

/// Training games.
pub const TRAIN_SIZE: usize = 3000;
/// Held-out games.
pub const TEST_SIZE: usize = 200;
/// Seed of the draw.
pub const SEED: u64 = 0x6E55;
/// Share of the teacher's games played by bisection.
pub const BISECT_SHARE: f64 = 0.3;
/// Probes the teacher makes before it answers.
pub const MAX_PROBES: usize = 3;

/// A game: the hidden number and its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Game {
    low: i64,
    high: i64,
    secret: i64,
}

/// Draws `train + test` distinct games; the first `test` are held out.
pub fn generate(train: usize, test: usize, seed: u64) -> (Vec<Game>, Vec<Game>) {
    draw_distinct(train, test, seed, |rng| {
        let low = 1 + rng.below(80) as i64;
        let high = low + 7 + rng.below(8) as i64;
        let secret = low + rng.below((high - low + 1) as u64) as i64;
        Game { low, high, secret }
    })
}

/// The teacher's transcript of `game` (with beliefs when `beliefs`), and whether it won. The
/// same `rng` state gives the same game with and without beliefs.
pub fn transcript(game: &Game, rng: &mut SplitMix64, beliefs: bool) -> (String, bool) {
    let bisect = chance(rng, BISECT_SHARE);
    let (mut low, mut high) = (game.low, game.high);
    let mut out = String::new();
    let belief = |out: &mut String, low: i64, high: i64| {
        if beliefs {
            let _ = write!(out, "({low},{high})");
        }
    };
    for _ in 0..MAX_PROBES {
        if low == high {
            break;
        }
        let probe = if bisect {
            low + (high - low) / 2
        } else {
            low + rng.below((high - low + 1) as u64) as i64
        };
        belief(&mut out, low, high);
        let feedback = match game.secret.cmp(&probe) {
            std::cmp::Ordering::Less => {
                high = probe - 1;
                'L'
            }
            std::cmp::Ordering::Greater => {
                low = probe + 1;
                'H'
            }
            std::cmp::Ordering::Equal => {
                (low, high) = (probe, probe);
                '='
            }
        };
        let _ = write!(out, "{probe}?{feedback}");
    }
    let answer = low + rng.below((high - low + 1) as u64) as i64;
    belief(&mut out, low, high);
    let _ = write!(out, "{answer}");
    (out, answer == game.secret)
}

/// JSONL lines `{"id", "prompt", "low", "high", "answer"}`, plus the teacher's `completion`
/// (with beliefs when `beliefs` is `Some(true)`) unless `beliefs` is `None` (held out).
pub fn to_jsonl(split: &str, games: &[Game], beliefs: Option<bool>) -> String {
    let mut rng = SplitMix64(SEED ^ 0xB1);
    let mut out = String::new();
    for (i, g) in games.iter().enumerate() {
        let mut record = json!({
            "id": format!("guess-number-{split}-{i:05}"),
            "prompt": format!("GUESS {}-{}:", g.low, g.high),
            "low": g.low,
            "high": g.high,
            "answer": g.secret.to_string(),
        });
        if let Some(b) = beliefs {
            record["completion"] = json!(transcript(g, &mut rng, b).0);
        }
        let _ = writeln!(out, "{record}");
    }
    out
}

/// Writes `train.jsonl`, `train-belief.jsonl` and `test.jsonl` into `dir`.
pub fn write(dir: &Path) -> Result<()> {
    let (train, test) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
    write_splits(
        dir,
        [
            ("train", to_jsonl("train", &train, Some(false)), train.len()),
            (
                "train-belief",
                to_jsonl("train", &train, Some(true)),
                train.len(),
            ),
            ("test", to_jsonl("test", &test, None), test.len()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn games_are_in_range_and_splits_disjoint() {
        let (train, test) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
        for g in train.iter().chain(&test) {
            assert!((8..=15).contains(&(g.high - g.low + 1)), "{g:?}");
            assert!(g.low <= g.secret && g.secret <= g.high && g.low >= 1);
        }
        let held: HashSet<_> = test.iter().collect();
        assert!(train.iter().all(|g| !held.contains(g)));
    }

    /// By hand: bisection on 12–26 with 17 hidden probes 19 (L), 15 (H), 17 (=) and answers;
    /// the teacher wins about 80 % of its games, and the belief transcript is the plain one
    /// with the beliefs added.
    #[test]
    fn the_teacher_is_as_documented() {
        let game = Game {
            low: 12,
            high: 26,
            secret: 17,
        };
        // An rng whose first draw says "bisect": try seeds until one does.
        let seed = (0..)
            .find(|&s| chance(&mut SplitMix64(s), BISECT_SHARE))
            .unwrap();
        let (plain, won) = transcript(&game, &mut SplitMix64(seed), false);
        assert_eq!((plain.as_str(), won), ("19?L15?H17?=17", true));
        let (belief, _) = transcript(&game, &mut SplitMix64(seed), true);
        assert_eq!(belief, "(12,26)19?L(12,18)15?H(16,18)17?=(17,17)17");
        let (train, _) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
        let mut rng = SplitMix64(3);
        let wins = train
            .iter()
            .filter(|g| transcript(g, &mut rng, false).1)
            .count();
        let rate = wins as f64 / train.len() as f64;
        assert!((0.7..0.88).contains(&rate), "{rate}");
    }

    /// The committed files are exactly what the generator writes.
    #[test]
    fn committed_dataset_matches_generator() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/guess-number");
        let (train, test) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
        for (name, split, games, beliefs) in [
            ("train", "train", &train, Some(false)),
            ("train-belief", "train", &train, Some(true)),
            ("test", "test", &test, None),
        ] {
            let path = dir.join(format!("{name}.jsonl"));
            let committed =
                std::fs::read_to_string(&path).expect("run `cargo xtask gen-guess-number`");
            assert!(
                committed == to_jsonl(split, games, beliefs),
                "{} is stale",
                path.display()
            );
        }
    }
}
