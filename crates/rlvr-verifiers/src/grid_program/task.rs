//! The three reasoning modes and the proposer's role, as text: what each prompt shows, what
//! each answer must be, and how a proposal becomes a solver task.
//!
//! | mode | prompt | answer |
//! | --- | --- | --- |
//! | deduction | `D RRU 23=` (program, input) | `44;` (the output) |
//! | abduction | `A RRU 44=` (program, output) | `23;` (an input that gives it) |
//! | induction | `I 23 44 51 72=` (two input/output pairs) | `RRU;` (any program mapping both) |
//! | propose_{deduction,abduction,induction} | `P D=`, `P A=`, `P I=` | `RRU 23;` (`RRU 23 51;` for I: two distinct inputs) |
//!
//! An answer is the text before the first `;`, trimmed.

use serde::{Deserialize, Serialize};

use super::exec::{Point, is_program, run};

/// What a record asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GridMode {
    /// Program + input → output.
    Deduction,
    /// Program + output → input.
    Abduction,
    /// Input/output pairs → program.
    Induction,
    /// Propose a deduction task (a program and an input).
    ProposeDeduction,
    /// Propose an abduction task (a program and an input).
    ProposeAbduction,
    /// Propose an induction task (a program and two distinct inputs).
    ProposeInduction,
}

impl GridMode {
    /// The solver mode a proposer mode proposes for (`None` for a solver mode).
    pub fn proposed(self) -> Option<GridMode> {
        match self {
            GridMode::ProposeDeduction => Some(GridMode::Deduction),
            GridMode::ProposeAbduction => Some(GridMode::Abduction),
            GridMode::ProposeInduction => Some(GridMode::Induction),
            _ => None,
        }
    }

    /// Inputs a task of this solver mode runs its program on.
    pub fn inputs(self) -> usize {
        if self == GridMode::Induction { 2 } else { 1 }
    }
}

/// A solver task: the program and its input/output pairs (what the record stores).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridTask {
    /// The mode.
    pub mode: GridMode,
    /// The generating program.
    pub program: String,
    /// The inputs.
    pub inputs: Vec<Point>,
    /// The outputs, one per input.
    pub outputs: Vec<Point>,
}

impl GridTask {
    /// The task's prompt text (see the module's table).
    pub fn prompt(&self) -> String {
        match self.mode {
            GridMode::Deduction => format!("D {} {}=", self.program, self.inputs[0]),
            GridMode::Abduction => format!("A {} {}=", self.program, self.outputs[0]),
            _ => {
                let pairs: Vec<String> = self
                    .inputs
                    .iter()
                    .zip(&self.outputs)
                    .map(|(i, o)| format!("{i} {o}"))
                    .collect();
                format!("I {}=", pairs.join(" "))
            }
        }
    }

    /// Whether `answer` (the text before `;`) solves the task, checked by execution.
    pub fn solved_by(&self, answer: &str) -> bool {
        match self.mode {
            GridMode::Deduction => Point::parse(answer) == Some(self.outputs[0]),
            GridMode::Abduction => {
                Point::parse(answer).and_then(|p| run(&self.program, p)) == Some(self.outputs[0])
            }
            _ => {
                is_program(answer)
                    && self
                        .inputs
                        .iter()
                        .zip(&self.outputs)
                        .all(|(&i, &o)| run(answer, i) == Some(o))
            }
        }
    }
}

/// The answer part of a response: the text before the first `;`, trimmed (`None` without `;`).
pub fn answer_of(response: &str) -> Option<&str> {
    response.split_once(';').map(|(a, _)| a.trim())
}

/// Reads a proposal for solver mode `mode` (`RRU 23`, or `RRU 23 51` for induction) and runs
/// it: the task it defines, or `None` when it does not parse, repeats an induction input, or
/// fails on an input.
pub fn propose(mode: GridMode, proposal: &str) -> Option<GridTask> {
    let mut words = proposal.split(' ');
    let program = words.next()?;
    let inputs: Vec<Point> = words.map(Point::parse).collect::<Option<_>>()?;
    if !is_program(program) || inputs.len() != mode.inputs() {
        return None;
    }
    if inputs.len() == 2 && inputs[0] == inputs[1] {
        return None;
    }
    let outputs: Vec<Point> = inputs
        .iter()
        .map(|&i| run(program, i))
        .collect::<Option<_>>()?;
    Some(GridTask {
        mode,
        program: program.to_string(),
        inputs,
        outputs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposals_become_solver_tasks() {
        let d = propose(GridMode::Deduction, "RRU 23").unwrap();
        assert_eq!(d.prompt(), "D RRU 23=");
        assert!(d.solved_by("44") && !d.solved_by("43"));
        let a = propose(GridMode::Abduction, "RRU 23").unwrap();
        assert_eq!(a.prompt(), "A RRU 44=");
        assert!(a.solved_by("23") && !a.solved_by("44"));
        let i = propose(GridMode::Induction, "RRU 23 51").unwrap();
        assert_eq!(i.prompt(), "I 23 44 51 72=");
        assert!(i.solved_by("RRU") && i.solved_by("URR") && i.solved_by("RURLR"));
        assert!(!i.solved_by("RR") && !i.solved_by("RRUX"));
    }

    #[test]
    fn invalid_proposals_are_refused() {
        for (mode, p) in [
            (GridMode::Deduction, "RRU"),
            (GridMode::Deduction, "RRU 23 51"),
            (GridMode::Deduction, "L 05"),
            (GridMode::Deduction, "RRU 2"),
            (GridMode::Abduction, "RRRRRRR 00"),
            (GridMode::Induction, "RRU 23 23"),
            (GridMode::Induction, "RRU 23"),
            (GridMode::Induction, "R 23 91"),
            (GridMode::Deduction, " RRU 23"),
        ] {
            assert_eq!(propose(mode, p), None, "{p:?}");
        }
    }

    #[test]
    fn an_induction_answer_must_not_fail_on_either_input() {
        // 91 → 92 and 55 → 56 by U; a program through x = 10 fails even if it would end in the
        // grid, and one that fails from the other input (00) is no answer either.
        let t = propose(GridMode::Induction, "U 91 55").unwrap();
        assert!(t.solved_by("U") && t.solved_by("LRU"));
        assert!(!t.solved_by("RLU"), "R leaves the grid from 91");
        let t = propose(GridMode::Induction, "U 91 00").unwrap();
        assert!(!t.solved_by("LRU"), "L leaves the grid from 00");
    }
}
