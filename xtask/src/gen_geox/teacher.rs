//! The careless teacher of the supervised warm start: the right answer with probability
//! [`RIGHT`], otherwise a plausible slip that is always wrong — a point off by one in one
//! coordinate (deduction, abduction) or a program with its last move dropped, or with one
//! random move added when it has a single move (induction; either changes the displacement,
//! so no program of the slip's moves maps the inputs to the outputs).

use super::grid::{Move, Point, Program};
use super::task::{Mode, Task};
use crate::gen_data::SplitMix64;

/// Probability (percent) that the teacher writes the right answer.
pub const RIGHT: u64 = 60;

/// The teacher's completion of a solver task: [`Task::answer`] with probability [`RIGHT`], else
/// [`slip`].
pub fn completion(task: &Task, rng: &mut SplitMix64) -> String {
    if rng.below(100) < RIGHT {
        task.answer()
    } else {
        slip(task, rng)
    }
}

/// A wrong answer of the kind a careless solver writes (see the module).
pub fn slip(task: &Task, rng: &mut SplitMix64) -> String {
    match task.mode {
        Mode::Deduction => format!("{};", off_by_one(task.outputs()[0], rng)),
        Mode::Abduction => format!("{};", off_by_one(task.inputs[0], rng)),
        Mode::Induction => format!("{};", wrong_program(&task.program, rng)),
    }
}

/// One of `p`'s up-to-four grid neighbours (one coordinate off by one, still on the grid),
/// drawn uniformly.
pub fn off_by_one(p: Point, rng: &mut SplitMix64) -> Point {
    let near: Vec<Point> = Move::ALL
        .iter()
        .map(|m| m.apply(p))
        .filter(|q| q.is_inside())
        .collect();
    near[rng.below(near.len() as u64) as usize]
}

/// `program` without its last move; a one-move program with one random move added instead.
pub fn wrong_program(program: &Program, rng: &mut SplitMix64) -> Program {
    let mut moves = program.0.clone();
    if moves.len() == 1 {
        moves.push(Move::draw(rng));
    } else {
        moves.pop();
    }
    Program(moves)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::super::grid::tests::{prog, pt};
    use super::*;

    #[test]
    fn slips_by_hand() {
        let mut rng = SplitMix64(4);
        let mut draws = |f: &mut dyn FnMut(&mut SplitMix64) -> String| -> HashSet<String> {
            (0..200).map(|_| f(&mut rng)).collect()
        };
        let set = |xs: &[&str]| xs.iter().map(ToString::to_string).collect::<HashSet<_>>();
        assert_eq!(
            draws(&mut |r| off_by_one(pt("44"), r).to_string()),
            set(&["34", "54", "43", "45"])
        );
        // A corner has two neighbours, an edge three.
        assert_eq!(
            draws(&mut |r| off_by_one(pt("00"), r).to_string()),
            set(&["10", "01"])
        );
        assert_eq!(
            draws(&mut |r| off_by_one(pt("95"), r).to_string()),
            set(&["85", "94", "96"])
        );
        assert_eq!(
            draws(&mut |r| wrong_program(&prog("RRU"), r).to_string()),
            set(&["RR"])
        );
        assert_eq!(
            draws(&mut |r| wrong_program(&prog("L"), r).to_string()),
            set(&["LU", "LD", "LL", "LR"])
        );
        let d = Task {
            mode: Mode::Deduction,
            program: prog("RRU"),
            inputs: vec![pt("23")],
        };
        assert_eq!(
            draws(&mut |r| slip(&d, r)),
            set(&["34;", "54;", "43;", "45;"])
        );
        let a = Task {
            mode: Mode::Abduction,
            ..d.clone()
        };
        assert_eq!(
            draws(&mut |r| slip(&a, r)),
            set(&["13;", "33;", "22;", "24;"])
        );
    }

    #[test]
    fn right_about_as_often_as_the_constant_says() {
        let mut rng = SplitMix64(5);
        let t = Task {
            mode: Mode::Induction,
            program: prog("RRU"),
            inputs: vec![pt("23"), pt("51")],
        };
        let right = (0..10_000)
            .filter(|_| completion(&t, &mut rng) == "RRU;")
            .count();
        // 6,000 expected, sd about 49.
        assert!((5_800..6_200).contains(&right), "{right}");
    }
}
