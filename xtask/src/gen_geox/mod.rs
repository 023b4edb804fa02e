//! `cargo xtask gen-geox`: writes the bundled GeoX-style self-play task under `datasets/geox/`,
//! read by the `grid_program` verifier: text-only self-play in which one policy proposes
//! problems as executable programs over a grid world and solves them in three reasoning modes.
//!
//! The language ([`grid`]): a point of a 10 × 10 grid is two digits `xy` (x first); a program
//! is 1 to 6 moves of `U D L R` (U y+1, D y−1, R x+1, L x−1) run in order from an input point,
//! and fails when a move leaves the grid. Solver lines ([`task`]) ask for one mode:
//!
//! ```text
//! D RRU 23=        44;    deduction: the output of the program on the input
//! A RRU 44=        23;    abduction: the input, given the output (unique: nothing clamps)
//! I 23 44 51 72=   RRU;   induction: a program of 1–6 moves mapping both inputs to both outputs
//! ```
//!
//! Proposer lines ([`proposal`]) ask for a task of a mode, `P D=`, `P A=`, `P I=`, answered
//! `RRU 23;` (deduction, abduction) or `RRU 23 51;` (induction, two distinct inputs); a
//! proposal is valid when its program runs from every input. Programs are drawn with a length
//! uniform in 1–6 and uniform moves, inputs uniformly among the points the program does not
//! fail from. Every character is in the bundled model's alphabet, a prompt has at most
//! [`MAX_PROMPT_CHARS`] characters and a completion at most [`MAX_COMPLETION_CHARS`].
//!
//! Each line is `{"id", "prompt", "mode", "program", "inputs", "outputs", "answer"}` (points as
//! `xy` strings; `answer` the right answer, for induction the generating program: the verifier
//! accepts any program that fits both pairs). A proposer line has `mode` `propose_deduction`,
//! `propose_abduction` or `propose_induction`, an empty `program` and `answer` and no inputs or
//! outputs. The training split is [`TRAIN_PER_MODE`] solver lines of each mode and
//! [`PROPOSALS_PER_MODE`] proposer lines of each mode, shuffled together; the held-out split is
//! [`TEST_PER_MODE`] solver lines of each mode, shuffled, and no proposer lines. Solver prompts
//! are distinct, so no held-out prompt is a training prompt (proposer prompts repeat, by
//! design).
//!
//! Training lines carry a `completion` for the supervised warm start: on a proposer line a
//! random valid proposal (each different from the others of its mode), on a solver line a
//! careless teacher's answer ([`teacher`]): right with probability [`teacher::RIGHT`], else an
//! off-by-one point or a program one move short (one move long when it has one). A
//! warm-started model proposes well-formed tasks and solves most of them: room for the
//! self-play rewards to teach the rest.

pub mod grid;
pub mod proposal;
pub mod task;
pub mod teacher;

use std::collections::HashSet;
use std::path::Path;

use anyhow::Result;

use crate::gen_data::{SplitMix64, write_splits};
use task::{Mode, Task};

/// Training solver lines per mode.
pub const TRAIN_PER_MODE: usize = 4_000;
/// Training proposer lines per mode.
pub const PROPOSALS_PER_MODE: usize = 400;
/// Held-out solver lines per mode.
pub const TEST_PER_MODE: usize = 100;
/// Seed of the generator streams.
pub const SEED: u64 = 20_261_208;
/// The longest prompt (the bundled model's context holds prompt and completion).
pub const MAX_PROMPT_CHARS: usize = 24;
/// The longest completion.
pub const MAX_COMPLETION_CHARS: usize = 14;

/// One line of a split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A solver line: the task to solve in its mode.
    Solve(Task),
    /// A proposer line: the task is the proposal its completion writes.
    Propose(Task),
}

/// The sizes of a generated dataset.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Training solver lines per mode.
    pub train_per_mode: usize,
    /// Training proposer lines per mode.
    pub proposals_per_mode: usize,
    /// Held-out solver lines per mode.
    pub test_per_mode: usize,
}

/// The bundled sizes.
pub const SIZES: Sizes = Sizes {
    train_per_mode: TRAIN_PER_MODE,
    proposals_per_mode: PROPOSALS_PER_MODE,
    test_per_mode: TEST_PER_MODE,
};

/// Draws the two splits as `(train, test)`: per mode, solver tasks with distinct prompts (the
/// first `test_per_mode` held out), then proposals with distinct texts per mode; each split is
/// shuffled.
pub fn generate(sizes: Sizes, seed: u64) -> (Vec<Line>, Vec<Line>) {
    let mut rng = SplitMix64(seed);
    let (mut train, mut test) = (Vec::new(), Vec::new());
    let mut prompts = HashSet::new();
    for mode in Mode::ALL {
        let mut drawn = 0;
        while drawn < sizes.test_per_mode + sizes.train_per_mode {
            let t = Task::draw(mode, &mut rng);
            if prompts.insert(t.prompt()) {
                let split = if drawn < sizes.test_per_mode {
                    &mut test
                } else {
                    &mut train
                };
                split.push(Line::Solve(t));
                drawn += 1;
            }
        }
    }
    for mode in Mode::ALL {
        let mut texts = HashSet::new();
        while texts.len() < sizes.proposals_per_mode {
            let t = Task::draw(mode, &mut rng);
            if texts.insert(proposal::completion(&t)) {
                train.push(Line::Propose(t));
            }
        }
    }
    shuffle(&mut train, &mut rng);
    shuffle(&mut test, &mut rng);
    (train, test)
}

/// Fisher–Yates.
fn shuffle<T>(xs: &mut [T], rng: &mut SplitMix64) {
    for i in (1..xs.len()).rev() {
        xs.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

/// The JSONL lines of a split (see the module); with `completions` (training) each line also
/// has a `completion`.
pub fn to_jsonl(split: &str, lines: &[Line], completions: bool) -> String {
    let mut rng = SplitMix64(SEED ^ 0xC0DE);
    let strings = |ps: &[grid::Point]| ps.iter().map(ToString::to_string).collect::<Vec<_>>();
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let id = format!("geox-{split}-{i:05}");
            let record = match line {
                Line::Solve(t) => {
                    let mut record = serde_json::json!({
                        "id": id, "prompt": t.prompt(), "mode": t.mode.name(),
                        "program": t.program.to_string(), "inputs": strings(&t.inputs),
                        "outputs": strings(&t.outputs()), "answer": t.answer(),
                    });
                    if completions {
                        record["completion"] = teacher::completion(t, &mut rng).into();
                    }
                    record
                }
                Line::Propose(t) => serde_json::json!({
                    "id": id, "prompt": proposal::prompt(t.mode),
                    "mode": proposal::mode_name(t.mode), "program": "", "inputs": [],
                    "outputs": [], "answer": "", "completion": proposal::completion(t),
                }),
            };
            for key in ["prompt", "completion"] {
                let limit = if key == "prompt" {
                    MAX_PROMPT_CHARS
                } else {
                    MAX_COMPLETION_CHARS
                };
                let text = record.get(key).and_then(|v| v.as_str()).unwrap_or("");
                assert!(
                    text.len() <= limit,
                    "{key} {text:?} over {limit} characters"
                );
            }
            record.to_string() + "\n"
        })
        .collect()
}

/// Writes `train.jsonl` and `test.jsonl` into `dir`, then a summary line.
pub fn write(dir: &Path) -> Result<()> {
    let (train, test) = generate(SIZES, SEED);
    let train_text = to_jsonl("train", &train, true);
    let (mut solver, mut right) = (0, 0);
    for l in train_text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).expect("a line just written");
        if v["answer"] != "" {
            solver += 1;
            right += usize::from(v["completion"] == v["answer"]);
        }
    }
    write_splits(
        dir,
        [
            ("train", train_text, train.len()),
            ("test", to_jsonl("test", &test, false), test.len()),
        ],
    )?;
    eprintln!(
        "xtask: geox: {} training lines ({solver} solver, {} proposer), {} held-out; {:.1} % of \
         the training solver completions right",
        train.len(),
        train.len() - solver,
        test.len(),
        100.0 * right as f64 / solver as f64
    );
    Ok(())
}

#[cfg(test)]
mod tests;
