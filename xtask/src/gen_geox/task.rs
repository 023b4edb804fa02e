//! One solver task: a program, its input(s) and a reasoning mode, with the prompt and the right
//! answer of each mode.
//!
//! | mode      | prompt           | answer  |
//! |-----------|------------------|---------|
//! | deduction | `D RRU 23=`      | `44;`   |
//! | abduction | `A RRU 44=`      | `23;`   |
//! | induction | `I 23 44 51 72=` | `RRU;`  |

use super::grid::{Point, Program};
use crate::gen_data::SplitMix64;

/// A reasoning mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Program and input given, the output asked.
    Deduction,
    /// Program and output given, the input asked.
    Abduction,
    /// Two input/output pairs given, a program asked.
    Induction,
}

impl Mode {
    /// The three modes, in the order the generator draws them.
    pub const ALL: [Mode; 3] = [Mode::Deduction, Mode::Abduction, Mode::Induction];

    /// The record's `mode` of a solver line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Deduction => "deduction",
            Mode::Abduction => "abduction",
            Mode::Induction => "induction",
        }
    }

    /// The prompt's first letter (also the proposer prompt's: `P D=`).
    pub fn letter(self) -> char {
        match self {
            Mode::Deduction => 'D',
            Mode::Abduction => 'A',
            Mode::Induction => 'I',
        }
    }

    /// How many inputs a task of the mode has: two distinct ones for induction, else one.
    pub fn input_count(self) -> usize {
        match self {
            Mode::Induction => 2,
            _ => 1,
        }
    }
}

/// A task: a program valid on each of its inputs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Task {
    /// The reasoning mode.
    pub mode: Mode,
    /// The generating program.
    pub program: Program,
    /// The inputs ([`Mode::input_count`] of them, distinct), each valid for the program.
    pub inputs: Vec<Point>,
}

impl Task {
    /// A program drawn by [`Program::draw`] and [`Mode::input_count`] distinct inputs drawn
    /// uniformly among its valid ones.
    pub fn draw(mode: Mode, rng: &mut SplitMix64) -> Task {
        let program = Program::draw(rng);
        let inputs = program.draw_inputs(mode.input_count(), rng);
        Task {
            mode,
            program,
            inputs,
        }
    }

    /// The program's output on each input.
    pub fn outputs(&self) -> Vec<Point> {
        self.inputs
            .iter()
            .map(|&p| {
                self.program
                    .run(p)
                    .expect("inputs are valid by construction")
            })
            .collect()
    }

    /// The solver prompt (see the module's table).
    pub fn prompt(&self) -> String {
        let letter = self.mode.letter();
        let outputs = self.outputs();
        match self.mode {
            Mode::Deduction => format!("{letter} {} {}=", self.program, self.inputs[0]),
            Mode::Abduction => format!("{letter} {} {}=", self.program, outputs[0]),
            Mode::Induction => format!(
                "{letter} {} {} {} {}=",
                self.inputs[0], outputs[0], self.inputs[1], outputs[1]
            ),
        }
    }

    /// The right answer: the output, the input, or the generating program, then `;`.
    pub fn answer(&self) -> String {
        match self.mode {
            Mode::Deduction => format!("{};", self.outputs()[0]),
            Mode::Abduction => format!("{};", self.inputs[0]),
            Mode::Induction => format!("{};", self.program),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::grid::tests::{prog, pt};
    use super::*;

    fn task(mode: Mode, program: &str, inputs: &[&str]) -> Task {
        Task {
            mode,
            program: prog(program),
            inputs: inputs.iter().map(|s| pt(s)).collect(),
        }
    }

    #[test]
    fn prompts_and_answers_by_hand() {
        let d = task(Mode::Deduction, "RRU", &["23"]);
        assert_eq!((d.prompt(), d.answer()), ("D RRU 23=".into(), "44;".into()));
        let a = task(Mode::Abduction, "RRU", &["23"]);
        assert_eq!((a.prompt(), a.answer()), ("A RRU 44=".into(), "23;".into()));
        let i = task(Mode::Induction, "RRU", &["23", "51"]);
        assert_eq!(
            (i.prompt(), i.answer()),
            ("I 23 44 51 72=".into(), "RRU;".into())
        );
        assert_eq!(i.outputs(), [pt("44"), pt("72")]);
        // The longest prompts: 12 and 14 characters.
        assert_eq!(
            task(Mode::Deduction, "UUUUUU", &["03"]).prompt(),
            "D UUUUUU 03="
        );
        assert_eq!(task(Mode::Induction, "L", &["95", "15"]).prompt().len(), 14);
    }

    #[test]
    fn drawn_tasks_are_valid_and_induction_inputs_distinct() {
        let mut rng = SplitMix64(3);
        for _ in 0..3_000 {
            for mode in Mode::ALL {
                let t = Task::draw(mode, &mut rng);
                assert_eq!(t.inputs.len(), mode.input_count());
                assert!(t.inputs.iter().all(|&p| t.program.run(p).is_some()));
                if mode == Mode::Induction {
                    assert_ne!(t.inputs[0], t.inputs[1], "{t:?}");
                }
            }
        }
    }
}
