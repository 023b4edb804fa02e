//! `cargo xtask gen-data`: writes the bundled arithmetic task under `datasets/arith/`.
//!
//! The task is integer addition and subtraction of numbers below 100, written without spaces
//! (`"47+85="`); the answer is the exact integer (`"132"`, `"-12"`). The generator uses its own
//! SplitMix64 stream so the files are byte-for-byte reproducible on any machine and with any
//! version of `rand`. The held-out split contains no (a, op, b) triple of the training split.
//!
//! Training lines also carry a `completion` for the supervised warm start, written like a
//! stream of worked problems: the answer, then with probability [`CONTINUE_PROB`] per problem
//! another solved problem after a `;` (`"132;7-9=-2"`), then the end of the text. A model
//! warm-started on it has learned the arithmetic but not that a reply ends after its answer;
//! the verifier's reward (the last number of the reply must equal the answer) teaches that.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

/// Number of training problems.
pub const TRAIN_SIZE: usize = 8_000;
/// Probability that a completion continues with one more solved problem.
pub const CONTINUE_PROB: f64 = 0.5;
/// Most problems one completion continues with.
pub const MAX_CONTINUATIONS: usize = 2;
/// Number of held-out problems.
pub const TEST_SIZE: usize = 500;
/// Seed of the generator stream.
pub const SEED: u64 = 20_261_203;

/// One arithmetic problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Problem {
    /// Left operand.
    pub a: i64,
    /// `'+'` or `'-'`.
    pub op: char,
    /// Right operand.
    pub b: i64,
}

impl Problem {
    /// The prompt text, e.g. `"347+85="`.
    pub fn prompt(&self) -> String {
        format!("{}{}{}=", self.a, self.op, self.b)
    }

    /// The exact answer.
    pub fn answer(&self) -> i64 {
        match self.op {
            '+' => self.a + self.b,
            _ => self.a - self.b,
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny, well-mixed, stable generator.
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (the modulo bias is below 1e-15 for the n used here).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// An operand with a uniformly drawn digit count (1–2), so one-digit numbers are not rare.
fn operand(rng: &mut SplitMix64) -> i64 {
    let digits = 1 + rng.below(2) as u32;
    let low = if digits == 1 {
        0
    } else {
        10_i64.pow(digits - 1)
    };
    let high = 10_i64.pow(digits);
    low + rng.below((high - low) as u64) as i64
}

/// Draws `train + test` distinct problems; the first `test` form the held-out split.
pub fn generate(train: usize, test: usize, seed: u64) -> (Vec<Problem>, Vec<Problem>) {
    let mut rng = SplitMix64(seed);
    let mut seen = HashSet::new();
    let mut all = Vec::with_capacity(train + test);
    while all.len() < train + test {
        let a = operand(&mut rng);
        let op = if rng.below(2) == 0 { '+' } else { '-' };
        let b = operand(&mut rng);
        let p = Problem { a, op, b };
        if seen.insert(p) {
            all.push(p);
        }
    }
    let train_split = all.split_off(test);
    (train_split, all)
}

/// Renders problems as JSONL lines `{"id", "prompt", "answer"}`, plus `completion` when
/// `completions` is true (the training split).
pub fn to_jsonl(split: &str, problems: &[Problem], completions: bool) -> String {
    let mut rng = SplitMix64(SEED ^ 0xC0);
    let mut out = String::new();
    for (i, p) in problems.iter().enumerate() {
        // The fields are digits and operators only, so no JSON escaping is needed.
        let _ = write!(
            out,
            r#"{{"id":"arith-{split}-{i:05}","prompt":"{}","answer":"{}""#,
            p.prompt(),
            p.answer()
        );
        if completions {
            let mut text = p.answer().to_string();
            for k in 1..=MAX_CONTINUATIONS {
                if (rng.below(1_000_000) as f64) >= CONTINUE_PROB * 1e6 {
                    break;
                }
                let next = problems[(i + k * 7919) % problems.len()];
                let _ = write!(text, ";{}{}", next.prompt(), next.answer());
            }
            let _ = write!(out, r#","completion":"{text}""#);
        }
        out.push_str("}\n");
    }
    out
}

/// Writes `train.jsonl` and `test.jsonl` into `dir`.
pub fn write(dir: &Path) -> Result<()> {
    let (train, test) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
    write_splits(
        dir,
        [
            ("train", to_jsonl("train", &train, true), train.len()),
            ("test", to_jsonl("test", &test, false), test.len()),
        ],
    )
}

/// Writes each `(split, jsonl text, problem count)` to `dir/<split>.jsonl`, creating `dir`.
pub(crate) fn write_splits<const N: usize>(
    dir: &Path,
    splits: [(&str, String, usize); N],
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, text, count) in splits {
        let path = dir.join(format!("{name}.jsonl"));
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("xtask: wrote {} ({count} problems)", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_are_disjoint_and_sized() {
        let (train, test) = generate(2_000, 100, 7);
        assert_eq!((train.len(), test.len()), (2_000, 100));
        let train: HashSet<_> = train.into_iter().collect();
        assert!(test.iter().all(|p| !train.contains(p)));
    }

    #[test]
    fn answers_are_exact() {
        let p = Problem {
            a: 12,
            op: '-',
            b: 345,
        };
        assert_eq!((p.prompt().as_str(), p.answer()), ("12-345=", -333));
    }

    #[test]
    fn completions_start_with_the_answer_and_chain_solved_problems() {
        let (train, _) = generate(500, 0, 3);
        let text = to_jsonl("train", &train, true);
        let mut continued = 0;
        for (line, p) in text.lines().zip(&train) {
            let completion = line
                .split("\"completion\":\"")
                .nth(1)
                .unwrap()
                .trim_end_matches("\"}");
            let mut parts = completion.split(';');
            assert_eq!(parts.next().unwrap(), p.answer().to_string());
            for extra in parts {
                continued += 1;
                let (lhs, rhs) = extra.split_once('=').unwrap();
                // The operator is the first '+' or '-' after the first character.
                let at = 1 + lhs[1..].find(['+', '-']).unwrap();
                let (a, b): (i64, i64) =
                    (lhs[..at].parse().unwrap(), lhs[at + 1..].parse().unwrap());
                let expected = if &lhs[at..=at] == "+" { a + b } else { a - b };
                assert_eq!(rhs.parse::<i64>().unwrap(), expected);
            }
        }
        // E[continuations per line] = 0.5 + 0.25 = 0.75.
        assert!((300..450).contains(&continued), "{continued}");
    }

    /// The committed files are exactly what the generator writes, so they can always be rebuilt.
    #[test]
    fn committed_dataset_matches_generator() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/arith");
        let (train, test) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
        for (name, problems) in [("train", &train), ("test", &test)] {
            let path = dir.join(format!("{name}.jsonl"));
            let committed = std::fs::read_to_string(&path).expect("run `cargo xtask gen-data`");
            let fresh = to_jsonl(name, problems, name == "train");
            assert!(committed == fresh, "{} is stale", path.display());
        }
    }
}
