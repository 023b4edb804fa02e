//! Proposer lines: the policy, prompted `P D=`, `P A=` or `P I=`, proposes a task for that mode
//! as a program and its input(s), `RRU 23;` (deduction, abduction) or `RRU 23 51;` (induction,
//! two distinct inputs). A proposal is valid when the program runs without failing from every
//! input. The training split carries random valid proposals as completions, so that the warm
//! start learns the format; the task itself is a [`Task`] drawn like a solver task.

use super::task::{Mode, Task};

/// The proposer prompt of `mode`: `P D=`, `P A=`, `P I=`.
pub fn prompt(mode: Mode) -> String {
    format!("P {}=", mode.letter())
}

/// The record's `mode` of a proposer line: `propose_deduction`, ….
pub fn mode_name(mode: Mode) -> String {
    format!("propose_{}", mode.name())
}

/// The proposal text of `task`: the program, its inputs, then `;`.
pub fn completion(task: &Task) -> String {
    let mut out = task.program.to_string();
    for p in &task.inputs {
        out += &format!(" {p}");
    }
    out + ";"
}

#[cfg(test)]
mod tests {
    use super::super::grid::tests::{prog, pt};
    use super::*;

    #[test]
    fn proposals_by_hand() {
        assert_eq!(prompt(Mode::Deduction), "P D=");
        assert_eq!(prompt(Mode::Abduction), "P A=");
        assert_eq!(prompt(Mode::Induction), "P I=");
        assert_eq!(mode_name(Mode::Induction), "propose_induction");
        let t = |mode, inputs: &[&str]| Task {
            mode,
            program: prog("RRU"),
            inputs: inputs.iter().map(|s| pt(s)).collect(),
        };
        assert_eq!(completion(&t(Mode::Deduction, &["23"])), "RRU 23;");
        assert_eq!(completion(&t(Mode::Induction, &["23", "51"])), "RRU 23 51;");
        // The longest: 13 characters.
        let long = Task {
            mode: Mode::Induction,
            program: prog("UUUUUU"),
            inputs: vec![pt("00"), pt("93")],
        };
        assert_eq!(completion(&long).len(), 13);
    }
}
