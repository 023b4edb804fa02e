//! `cargo xtask gen-agent-calculator`: the calculator environment's task (`[env] kind =
//! "calculator"`), written under `datasets/agent-calculator/`.
//!
//! A problem is `a*b+c` or `a*b-c` with `a` in 11–49, `b` in 3–9 and `c` in 1–99, asked as
//! the bare expression and `=` (`"23*7+15="`); the record keeps the `expression` (the oracle's
//! tool argument) and the exact `answer`. The bundled character model is never taught to
//! multiply; the environment gives it a tool that can.
//!
//! The training split carries a `completion` for the warm start, as the arithmetic task's
//! noisy teacher: half of them use the tool (`<tool_call>{"name":"calculator","arguments":
//! {"expression":"23*7+15"}}</tool_call><tool_response>176</tool_response>176`, the tool's
//! response written as the environment will write it), the other half answer at once, right
//! with probability 0.3 and otherwise off by a slipped digit. A warm-started policy so calls
//! the tool about half the time; RL has to learn that calling it pays. Training records also
//! carry the expert's `solution`, always the tool transcript (SMEPO's trace, `[smepo]`).
//! Held-out problems are disjoint from the training ones.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde_json::json;

use crate::gen_data::{SplitMix64, draw_distinct, write_splits};

/// Training problems.
pub const TRAIN_SIZE: usize = 4000;
/// Held-out problems.
pub const TEST_SIZE: usize = 200;
/// Seed of the draw.
pub const SEED: u64 = 0xCA1C;
/// Share of warm-start completions that call the tool.
pub const TOOL_SHARE: f64 = 0.5;
/// Share of direct warm-start answers that are right.
pub const DIRECT_RIGHT: f64 = 0.3;

/// `a*b ± c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Problem {
    a: i64,
    b: i64,
    plus: bool,
    c: i64,
}

impl Problem {
    /// The expression, e.g. `23*7+15`.
    pub fn expression(&self) -> String {
        let op = if self.plus { '+' } else { '-' };
        format!("{}*{}{op}{}", self.a, self.b, self.c)
    }

    /// Its exact value.
    pub fn answer(&self) -> i64 {
        self.a * self.b + if self.plus { self.c } else { -self.c }
    }
}

/// True with probability `p`.
pub(crate) fn chance(rng: &mut SplitMix64, p: f64) -> bool {
    (rng.below(1_000_000) as f64) < p * 1e6
}

/// Draws `train + test` distinct problems; the first `test` are held out.
pub fn generate(train: usize, test: usize, seed: u64) -> (Vec<Problem>, Vec<Problem>) {
    draw_distinct(train, test, seed, |rng| Problem {
        a: 11 + rng.below(39) as i64,
        b: 3 + rng.below(7) as i64,
        plus: rng.below(2) == 0,
        c: 1 + rng.below(99) as i64,
    })
}

/// The expert's transcript of `p`: the tool called on the expression, its response, the
/// answer.
pub fn transcript(p: &Problem) -> String {
    let answer = p.answer();
    // Written by hand so that `name` comes first, as Hermes-format models write it.
    let call = format!(
        r#"{{"name":"calculator","arguments":{{"expression":"{}"}}}}"#,
        p.expression()
    );
    format!("<tool_call>{call}</tool_call><tool_response>{answer}</tool_response>{answer}")
}

/// The warm-start completion of `p`: the tool transcript, or a direct (often wrong) answer.
fn completion(p: &Problem, rng: &mut SplitMix64) -> String {
    let answer = p.answer();
    if chance(rng, TOOL_SHARE) {
        return transcript(p);
    }
    if chance(rng, DIRECT_RIGHT) {
        return answer.to_string();
    }
    // One digit of the answer off by 1–9 (never the leading digit to 0).
    let mut digits: Vec<u8> = answer.abs().to_string().into_bytes();
    let k = rng.below(digits.len() as u64) as usize;
    let d = i64::from(digits[k] - b'0');
    let mut new = (d + 1 + rng.below(9) as i64) % 10;
    if k == 0 && new == 0 {
        new = if d == 1 { 2 } else { 1 };
    }
    digits[k] = b'0' + new as u8;
    let slipped = String::from_utf8(digits).expect("digits");
    if answer < 0 {
        format!("-{slipped}")
    } else {
        slipped
    }
}

/// JSONL lines `{"id", "prompt", "expression", "answer"}`, plus `completion` and `solution`
/// when `completions` is true (the training split).
pub fn to_jsonl(split: &str, problems: &[Problem], completions: bool) -> String {
    let mut rng = SplitMix64(SEED ^ 0xC0);
    let mut out = String::new();
    for (i, p) in problems.iter().enumerate() {
        let mut record = json!({
            "id": format!("agent-calculator-{split}-{i:05}"),
            "prompt": format!("{}=", p.expression()),
            "expression": p.expression(),
            "answer": p.answer().to_string(),
        });
        if completions {
            record["completion"] = json!(completion(p, &mut rng));
            record["solution"] = json!(transcript(p));
        }
        let _ = writeln!(out, "{record}");
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

    #[test]
    fn values_by_hand_and_disjoint_splits() {
        let p = Problem {
            a: 23,
            b: 7,
            plus: true,
            c: 15,
        };
        assert_eq!((p.expression().as_str(), p.answer()), ("23*7+15", 176));
        let q = Problem {
            a: 11,
            b: 3,
            plus: false,
            c: 99,
        };
        assert_eq!(q.answer(), -66);
        let (train, test) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
        let held: HashSet<_> = test.iter().collect();
        assert!(train.iter().all(|p| !held.contains(p)));
    }

    /// About half the completions call the tool, and a direct answer is right about 30 % of
    /// the time; a tool transcript always carries the right value twice.
    #[test]
    fn the_warm_start_teacher_is_as_documented() {
        let (train, _) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
        let mut rng = SplitMix64(1);
        let (mut tool, mut direct, mut right) = (0, 0, 0);
        for p in &train {
            let c = completion(p, &mut rng);
            if c.starts_with("<tool_call>") {
                tool += 1;
                let v = p.answer();
                assert!(
                    c.ends_with(&format!("<tool_response>{v}</tool_response>{v}")),
                    "{c}"
                );
            } else {
                direct += 1;
                right += usize::from(c == p.answer().to_string());
            }
        }
        let share = tool as f64 / train.len() as f64;
        assert!((share - TOOL_SHARE).abs() < 0.03, "{share}");
        // The expert's `solution` is always the tool transcript, by hand for 23*7+15.
        let p = Problem {
            a: 23,
            b: 7,
            plus: true,
            c: 15,
        };
        let line: serde_json::Value =
            serde_json::from_str(to_jsonl("train", &[p], true).trim()).unwrap();
        assert_eq!(
            line["solution"],
            "<tool_call>{\"name\":\"calculator\",\"arguments\":{\"expression\":\"23*7+15\"}}\
             </tool_call><tool_response>176</tool_response>176"
        );
        assert!(to_jsonl("test", &[p], false).find("solution").is_none());
        let r = right as f64 / direct as f64;
        assert!((r - DIRECT_RIGHT).abs() < 0.04, "{r}");
    }

    /// The committed files are exactly what the generator writes.
    #[test]
    fn committed_dataset_matches_generator() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/agent-calculator");
        let (train, test) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
        for (name, problems, c) in [("train", &train, true), ("test", &test, false)] {
            let path = dir.join(format!("{name}.jsonl"));
            let committed =
                std::fs::read_to_string(&path).expect("run `cargo xtask gen-agent-calculator`");
            assert!(
                committed == to_jsonl(name, problems, c),
                "{} is stale",
                path.display()
            );
        }
    }
}
