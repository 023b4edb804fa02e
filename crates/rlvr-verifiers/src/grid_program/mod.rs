//! The grid-program verifier: tasks that a program's execution checks, in GeoX's three
//! reasoning modes (methods-extra §21, "GeoX: Mastering Geospatial Reasoning Through Self-Play
//! and Verifiable Rewards", arXiv 2605.20006), text only: a 10 × 10 grid of moves stands in for
//! the paper's satellite image (the vision part is out of scope).
//!
//! [`exec`] is the language (moves `U D L R` from a point; a move off the grid fails), [`task`]
//! the modes as text. A solver record is scored 1 when its answer solves the task by execution
//! (deduction: the output; abduction: an input the program maps to the output; induction: any
//! program mapping both inputs to both outputs), else 0. A proposer record
//! (`propose_deduction`, ...) is scored 1 for a valid proposal (it parses and runs on every
//! input): the proposer's validity; the self-play reward (learnability, from the solver's
//! success on the proposed task) is the trainer's (`[geox]`).

pub mod exec;
pub mod task;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{Outcome, Reference, Verdict, Verifier};
use exec::{Point, run};
use task::{GridMode, GridTask, answer_of, propose};

/// Knobs of [`GridProgramVerifier`] (`[verifier] kind = "grid_program"`): none; the language
/// is fixed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridProgramConfig {}

impl GridProgramConfig {
    /// Builds the verifier.
    ///
    /// # Errors
    /// None today; the signature matches the other verifiers'.
    pub fn init(&self) -> crate::Result<GridProgramVerifier> {
        Ok(GridProgramVerifier)
    }
}

/// The grid-program verifier (see the module).
#[derive(Debug, Clone, Copy)]
pub struct GridProgramVerifier;

/// The solver task a record's fields define, checked by running its program: `Err` names what
/// does not hold.
pub fn task_of(
    mode: GridMode,
    program: &str,
    inputs: &[String],
    outputs: &[String],
) -> Result<GridTask, String> {
    let points = |xs: &[String], what: &str| -> Result<Vec<Point>, String> {
        xs.iter()
            .map(|s| Point::parse(s).ok_or_else(|| format!("{what} {s:?} is not a point `xy`")))
            .collect()
    };
    let (inputs, outputs) = (points(inputs, "input")?, points(outputs, "output")?);
    if inputs.len() != mode.inputs() || outputs.len() != inputs.len() {
        return Err(format!(
            "{mode:?} needs {} input(s) and as many outputs, got {} and {}",
            mode.inputs(),
            inputs.len(),
            outputs.len()
        ));
    }
    for (i, o) in inputs.iter().zip(&outputs) {
        if run(program, *i) != Some(*o) {
            return Err(format!("program {program:?} does not map {i} to {o}"));
        }
    }
    Ok(GridTask {
        mode,
        program: program.to_string(),
        inputs,
        outputs,
    })
}

impl Verifier for GridProgramVerifier {
    fn verify(&self, response: &str, reference: &Reference) -> Verdict {
        let Reference::GridProgram {
            mode,
            program,
            inputs,
            outputs,
        } = reference
        else {
            return Verdict::zero(
                Outcome::Error,
                "grid_program needs a grid_program reference",
            );
        };
        let Some(answer) = answer_of(response) else {
            return Verdict::zero(Outcome::Unparseable, "no `;` ends the answer");
        };
        let passed = match mode.proposed() {
            Some(solver_mode) => propose(solver_mode, answer).is_some(),
            None => match task_of(*mode, program, inputs, outputs) {
                Ok(task) => task.solved_by(answer),
                Err(why) => return Verdict::zero(Outcome::Error, why),
            },
        };
        let outcome = if passed {
            Outcome::Correct
        } else {
            Outcome::Wrong
        };
        Verdict::new(
            f32::from(u8::from(passed)),
            outcome,
            Some(answer.to_string()),
            json!({"mode": mode}),
        )
    }

    /// A solver record's program must map its inputs to its outputs (as many as the mode
    /// needs); a proposer record needs nothing.
    fn check_reference(&self, reference: &Reference) -> Result<(), String> {
        let Reference::GridProgram {
            mode,
            program,
            inputs,
            outputs,
        } = reference
        else {
            return Err("grid_program needs a grid_program reference (`mode`, `program`, `inputs`, `outputs`)".into());
        };
        if mode.proposed().is_some() {
            return Ok(());
        }
        task_of(*mode, program, inputs, outputs).map(|_| ())
    }

    fn name(&self) -> &'static str {
        "grid_program"
    }
}
