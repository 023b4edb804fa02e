//! `cargo xtask gen-chain`: writes the bundled two-step arithmetic task of SCRL under
//! `datasets/chain/`.
//!
//! A problem is `a op₁ b op₂ c` (`"37+45-20="`, operands below 100, `a ≥ b` when `op₁` is `-`);
//! its reference chain has two verifiable subproblems, the first step `a op₁ b` (82) and the
//! original problem (62). A response answers both in order, separated by `;` (`"82;62"`), which
//! SCRL's `answers = "separated"` reads. Each line carries
//! `"subproblems": [{"question": "37+45", "answer": "82"}, {"question": "37+45-20",
//! "answer": "62"}]`.
//!
//! Training lines also carry the careless teacher's `completion` (`cargo xtask gen-data`'s
//! teacher, step by step): each step whose column arithmetic needs a carry or a borrow is
//! slipped with probability 0.7 (tens off by one), and the second step is computed from the
//! teacher's own first result, so a slip in step 1 carries into the final answer. The warm
//! start copies the slips; RL with a final-answer reward has to find which step was wrong,
//! which SCRL's per-step credit tells it.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::gen_data::{Problem, SplitMix64, draw_distinct, operand, write_splits};

/// Number of training problems.
pub const TRAIN_SIZE: usize = 8_000;
/// Number of held-out problems.
pub const TEST_SIZE: usize = 500;
/// Seed of the generator stream.
pub const SEED: u64 = 20_261_206;

/// One two-step problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chain {
    /// The first step, `a op₁ b`.
    pub first: Problem,
    /// The second operator, `'+'` or `'-'`.
    pub op: char,
    /// The second step's right operand.
    pub c: i64,
}

impl Chain {
    /// The second step applied to `x`.
    fn second(&self, x: i64) -> Problem {
        Problem {
            a: x,
            op: self.op,
            b: self.c,
        }
    }

    /// The prompt, `"37+45-20="`.
    pub fn prompt(&self) -> String {
        format!("{}{}{}=", self.question_first(), self.op, self.c)
    }

    /// The first subproblem's question, `"37+45"`.
    fn question_first(&self) -> String {
        format!("{}{}{}", self.first.a, self.first.op, self.first.b)
    }

    /// The exact answers of both steps.
    pub fn answers(&self) -> (i64, i64) {
        let x = self.first.answer();
        (x, self.second(x).answer())
    }

    /// The careless teacher's worked answer, `"72;52"`.
    fn teacher(&self, rng: &mut SplitMix64) -> String {
        let x = self.first.teacher_answer(rng);
        format!("{x};{}", self.second(x).teacher_answer(rng))
    }
}

/// Draws `train + test` distinct chains; the first `test` form the held-out split.
pub fn generate(train: usize, test: usize, seed: u64) -> (Vec<Chain>, Vec<Chain>) {
    draw_distinct(train, test, seed, |rng| {
        let (x, y) = (operand(rng), operand(rng));
        let op1 = if rng.below(2) == 0 { '+' } else { '-' };
        let (a, b) = if op1 == '-' {
            (x.max(y), x.min(y))
        } else {
            (x, y)
        };
        let op = if rng.below(2) == 0 { '+' } else { '-' };
        Chain {
            first: Problem { a, op: op1, b },
            op,
            c: operand(rng),
        }
    })
}

/// JSONL lines `{"id", "prompt", "answer", "subproblems"}`, plus `completion` when
/// `completions` is true.
pub fn to_jsonl(split: &str, chains: &[Chain], completions: bool) -> String {
    let mut rng = SplitMix64(SEED ^ 0xC0);
    let mut out = String::new();
    for (i, ch) in chains.iter().enumerate() {
        let (x, y) = ch.answers();
        let original = ch.prompt();
        let _ = write!(
            out,
            r#"{{"id":"chain-{split}-{i:05}","prompt":"{original}","answer":"{y}","subproblems":[{{"question":"{}","answer":"{x}"}},{{"question":"{}","answer":"{y}"}}]"#,
            ch.question_first(),
            original.trim_end_matches('='),
        );
        if completions {
            let _ = write!(out, r#","completion":"{}""#, ch.teacher(&mut rng));
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

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// 37+45-20: 82 then 62; the teacher's slip on 37+45 (72) carries into 72-20 = 52.
    #[test]
    fn answers_and_lines_by_hand() {
        let ch = Chain {
            first: Problem {
                a: 37,
                op: '+',
                b: 45,
            },
            op: '-',
            c: 20,
        };
        assert_eq!(ch.prompt(), "37+45-20=");
        assert_eq!(ch.answers(), (82, 62));
        assert_eq!(ch.second(72).answer(), 52);
        let line = to_jsonl("test", &[ch], false);
        let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        assert_eq!(v["answer"], "62");
        assert_eq!(v["subproblems"][0]["question"], "37+45");
        assert_eq!(v["subproblems"][0]["answer"], "82");
        assert_eq!(v["subproblems"][1]["question"], "37+45-20");
    }

    /// Splits are disjoint; every teacher completion is two numbers whose second follows from
    /// the first by the second step, exactly or with one slip of ten.
    #[test]
    fn splits_are_disjoint_and_the_teacher_is_consistent() {
        let (train, test) = generate(2_000, 100, 7);
        let held: HashSet<_> = test.iter().collect();
        assert!(train.iter().all(|c| !held.contains(c)));
        let text = to_jsonl("train", &train, true);
        let (mut slipped_first, mut right) = (0, 0);
        for (line, ch) in text.lines().zip(&train) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let completion = v["completion"].as_str().unwrap();
            let (x, y) = completion.split_once(';').unwrap();
            let (x, y): (i64, i64) = (x.parse().unwrap(), y.parse().unwrap());
            let exact = ch.second(x).answer();
            assert!((y - exact).abs() == 0 || (y - exact).abs() == 10, "{line}");
            slipped_first += usize::from(x != ch.answers().0);
            right += usize::from((x, y) == ch.answers());
        }
        assert!(
            slipped_first > 200 && right > 600,
            "{slipped_first} {right}"
        );
    }
}
