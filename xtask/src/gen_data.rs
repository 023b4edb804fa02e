//! `cargo xtask gen-data`: writes the bundled arithmetic task under `datasets/arith/`.
//!
//! The task is integer addition and subtraction of numbers below 100, written without spaces
//! (`"47+85="`); the answer is the exact integer (`"132"`, `"-12"`). The generator uses its own
//! SplitMix64 stream so the files are byte-for-byte reproducible on any machine and with any
//! version of `rand`. The held-out split contains no (a, op, b) triple of the training split.
//!
//! Training lines also carry a `completion` for the supervised warm start, written like a
//! stream of worked problems: the answer, then with probability [`CONTINUE_PROB`] per problem
//! another solved problem after a `;` (`"132;7-9=-2"`), then the end of the text.
//!
//! The completions are a careless teacher's: on a problem whose column arithmetic needs a carry
//! (addition) or a borrow (subtraction), the teacher forgets it with probability
//! [`SLIP_PROB`] and writes an answer whose tens are off by one (`"37+45="` → `"72"`). A model
//! warm-started on them learns the arithmetic *and* the slip: greedy, it is right on most
//! problems without a carry and wrong on most with one, while sampling still finds the right
//! answer often enough for group-relative advantages. The verifier knows only right from
//! wrong; RL with its reward teaches the model to carry, which its demonstrations did not.
//! The base accuracy is a property of the data (about the share of problems without a carry),
//! not of where an unfinished warm start happened to stop.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

/// Number of training problems.
pub const TRAIN_SIZE: usize = 8_000;
/// Probability that a completion continues with one more solved problem. Well below 1/2, so
/// that a warm-started model ends its reply after the answer when decoding greedily: at 1/2
/// the choice between `;` and the end of the text is a coin flip that summation order decides.
pub const CONTINUE_PROB: f64 = 0.25;
/// Most problems one completion continues with.
pub const MAX_CONTINUATIONS: usize = 2;
/// Probability that the teacher forgets the carry or borrow of a problem that needs one.
pub const SLIP_PROB: f64 = 0.7;
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

    /// Whether column arithmetic on the problem needs a carry (addition) or a borrow
    /// (subtraction, of the smaller magnitude from the larger).
    pub fn needs_carry(&self) -> bool {
        match self.op {
            '+' => self.a % 10 + self.b % 10 >= 10,
            _ => {
                let (hi, lo) = (self.a.max(self.b), self.a.min(self.b));
                hi % 10 < lo % 10
            }
        }
    }

    /// The answer with the carry or borrow forgotten: its magnitude's tens off by one
    /// (`37+45` → 72, `52-17` → 45, `17-52` → -45).
    pub fn slipped_answer(&self) -> i64 {
        match self.op {
            '+' => self.a + self.b - 10,
            _ => {
                let magnitude = (self.a - self.b).abs() + 10;
                if self.a >= self.b {
                    magnitude
                } else {
                    -magnitude
                }
            }
        }
    }

    /// The careless teacher's answer: [`Problem::slipped_answer`] with probability
    /// [`SLIP_PROB`] when the problem needs a carry, else the exact answer.
    pub(crate) fn teacher_answer(&self, rng: &mut SplitMix64) -> i64 {
        if self.needs_carry() && (rng.below(1_000_000) as f64) < SLIP_PROB * 1e6 {
            self.slipped_answer()
        } else {
            self.answer()
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
pub(crate) fn operand(rng: &mut SplitMix64) -> i64 {
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
    draw_distinct(train, test, seed, |rng| {
        let a = operand(rng);
        let op = if rng.below(2) == 0 { '+' } else { '-' };
        let b = operand(rng);
        Problem { a, op, b }
    })
}

/// `train + test` distinct draws of `draw` from a SplitMix64 stream seeded with `seed`, as
/// (train, test): the first `test` distinct ones are held out.
pub(crate) fn draw_distinct<T: Copy + Eq + std::hash::Hash>(
    train: usize,
    test: usize,
    seed: u64,
    mut draw: impl FnMut(&mut SplitMix64) -> T,
) -> (Vec<T>, Vec<T>) {
    let mut rng = SplitMix64(seed);
    let mut seen = HashSet::new();
    let mut all = Vec::with_capacity(train + test);
    while all.len() < train + test {
        let p = draw(&mut rng);
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
            let mut text = p.teacher_answer(&mut rng).to_string();
            for k in 1..=MAX_CONTINUATIONS {
                if (rng.below(1_000_000) as f64) >= CONTINUE_PROB * 1e6 {
                    break;
                }
                let next = problems[(i + k * 7919) % problems.len()];
                let _ = write!(text, ";{}{}", next.prompt(), next.teacher_answer(&mut rng));
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
    fn carries_and_slips_by_hand() {
        let p = |a, op, b| Problem { a, op, b };
        // (problem, needs a carry or borrow, answer with it forgotten), worked by hand.
        for (problem, carry, slipped) in [
            (p(37, '+', 45), true, 72),
            (p(5, '+', 8), true, 3),
            (p(31, '+', 45), false, 66),
            (p(52, '-', 17), true, 45),
            (p(17, '-', 52), true, -45),
            (p(52, '-', 7), true, 55),
            (p(3, '-', 18), false, -25),
            (p(58, '-', 23), false, 45),
        ] {
            assert_eq!(problem.needs_carry(), carry, "{problem:?}");
            if carry {
                assert_eq!(problem.slipped_answer(), slipped, "{problem:?}");
            }
        }
    }

    /// Parses `"a+b"` or `"a-b"` (operands are non-negative).
    fn parse_problem(lhs: &str) -> Problem {
        // The operator is the first '+' or '-' after the first character.
        let at = 1 + lhs[1..].find(['+', '-']).unwrap();
        Problem {
            a: lhs[..at].parse().unwrap(),
            op: lhs[at..=at].chars().next().unwrap(),
            b: lhs[at + 1..].parse().unwrap(),
        }
    }

    #[test]
    fn completions_are_the_careless_teachers_worked_problems() {
        let (train, _) = generate(2_000, 0, 3);
        let text = to_jsonl("train", &train, true);
        let (mut continued, mut carries, mut slips) = (0, 0, 0);
        let mut check = |p: &Problem, written: i64| {
            if p.needs_carry() {
                carries += 1;
                if written == p.slipped_answer() {
                    slips += 1;
                    return;
                }
            }
            assert_eq!(written, p.answer(), "{p:?}");
        };
        for (line, p) in text.lines().zip(&train) {
            let completion = line
                .split("\"completion\":\"")
                .nth(1)
                .unwrap()
                .trim_end_matches("\"}");
            let mut parts = completion.split(';');
            check(p, parts.next().unwrap().parse().unwrap());
            for extra in parts {
                continued += 1;
                let (lhs, rhs) = extra.split_once('=').unwrap();
                check(&parse_problem(lhs), rhs.parse().unwrap());
            }
        }
        // E[continuations per line] = 0.25 + 0.0625 = 0.3125, 625 expected in 2,000 lines.
        assert!((550..700).contains(&continued), "{continued}");
        // Slips on carries: SLIP_PROB = 0.7 (binomial sd < 0.02 at ~1,500 carries).
        let rate = f64::from(slips) / f64::from(carries);
        assert!((0.65..0.75).contains(&rate), "{slips}/{carries}");
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
