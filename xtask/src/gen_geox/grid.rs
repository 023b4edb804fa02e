//! The grid-program language of the GeoX task, as the `grid_program` verifier runs it: points of
//! a 10 × 10 grid written `xy` (x first), programs of 1 to [`MAX_MOVES`] moves of `U D L R`
//! (U y+1, D y−1, R x+1, L x−1) run in order from an input point. A move that leaves the grid
//! fails the execution: nothing clamps, so a program maps each output back to exactly one input.

use std::fmt;

use crate::gen_data::SplitMix64;

/// The grid's side: coordinates are `0..SIDE`.
pub const SIDE: i8 = 10;
/// The most moves a program has.
pub const MAX_MOVES: usize = 6;

/// A grid point (inside the grid when both coordinates are in `0..SIDE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    /// Column.
    pub x: i8,
    /// Row.
    pub y: i8,
}

impl Point {
    /// Whether both coordinates are in `0..SIDE`.
    pub fn is_inside(self) -> bool {
        (0..SIDE).contains(&self.x) && (0..SIDE).contains(&self.y)
    }

    /// The grid's 100 points, x-major (`00`, `01`, …, `99`).
    pub fn all() -> impl Iterator<Item = Point> {
        (0..SIDE).flat_map(|x| (0..SIDE).map(move |y| Point { x, y }))
    }
}

impl fmt::Display for Point {
    /// `xy`, two digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.x, self.y)
    }
}

/// One move of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Move {
    /// y + 1.
    U,
    /// y − 1.
    D,
    /// x − 1.
    L,
    /// x + 1.
    R,
}

impl Move {
    /// The four moves, drawn from uniformly.
    pub const ALL: [Move; 4] = [Move::U, Move::D, Move::L, Move::R];

    /// The move's letter.
    pub fn letter(self) -> char {
        match self {
            Move::U => 'U',
            Move::D => 'D',
            Move::L => 'L',
            Move::R => 'R',
        }
    }

    /// `p` moved one step (possibly off the grid).
    pub fn apply(self, p: Point) -> Point {
        match self {
            Move::U => Point { y: p.y + 1, ..p },
            Move::D => Point { y: p.y - 1, ..p },
            Move::L => Point { x: p.x - 1, ..p },
            Move::R => Point { x: p.x + 1, ..p },
        }
    }

    /// A move drawn uniformly.
    pub fn draw(rng: &mut SplitMix64) -> Move {
        Move::ALL[rng.below(Move::ALL.len() as u64) as usize]
    }
}

/// A program: its moves, in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Program(pub Vec<Move>);

impl Program {
    /// A program with a length drawn uniformly from `1..=MAX_MOVES` and each move uniformly.
    pub fn draw(rng: &mut SplitMix64) -> Program {
        let len = 1 + rng.below(MAX_MOVES as u64) as usize;
        Program((0..len).map(|_| Move::draw(rng)).collect())
    }

    /// Runs the program from `input`: the final point, or `None` when a move leaves the grid
    /// (or `input` is off it).
    pub fn run(&self, input: Point) -> Option<Point> {
        if !input.is_inside() {
            return None;
        }
        self.0.iter().try_fold(input, |p, mv| {
            let next = mv.apply(p);
            next.is_inside().then_some(next)
        })
    }

    /// The points from which the program runs without failing, x-major.
    pub fn valid_inputs(&self) -> Vec<Point> {
        Point::all().filter(|&p| self.run(p).is_some()).collect()
    }

    /// `n` distinct inputs drawn uniformly among [`Program::valid_inputs`] (without
    /// replacement, in the order drawn). Every program of at most [`MAX_MOVES`] moves has at
    /// least 40 valid inputs (its x and y spans add up to at most 6), so `n ≤ 40` always works.
    pub fn draw_inputs(&self, n: usize, rng: &mut SplitMix64) -> Vec<Point> {
        let mut pool = self.valid_inputs();
        assert!(pool.len() >= n, "{self}: {} valid inputs", pool.len());
        (0..n)
            .map(|_| pool.remove(rng.below(pool.len() as u64) as usize))
            .collect()
    }
}

impl fmt::Display for Program {
    /// The moves' letters, e.g. `RRU`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|m| write!(f, "{}", m.letter()))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `"23"` as a point.
    pub(crate) fn pt(s: &str) -> Point {
        let d: Vec<i8> = s.bytes().map(|b| (b - b'0') as i8).collect();
        Point { x: d[0], y: d[1] }
    }

    /// `"RRU"` as a program.
    pub(crate) fn prog(s: &str) -> Program {
        Program(
            s.chars()
                .map(|c| *Move::ALL.iter().find(|m| m.letter() == c).unwrap())
                .collect(),
        )
    }

    /// Worked by hand, step by step.
    #[test]
    fn programs_run_by_hand() {
        // 23 → R 33 → R 43 → U 44.
        assert_eq!(prog("RRU").run(pt("23")), Some(pt("44")));
        assert_eq!(prog("RR").run(pt("23")), Some(pt("43")));
        // 51 → R 61 → R 71 → U 72.
        assert_eq!(prog("RRU").run(pt("51")), Some(pt("72")));
        // x = 0, L leaves the grid.
        assert_eq!(prog("L").run(pt("05")), None);
        // y = 4 + 6 = 10 at the sixth move.
        assert_eq!(prog("UUUUUU").run(pt("04")), None);
        assert_eq!(prog("UUUUUU").run(pt("03")), Some(pt("09")));
        // 95 → R x = 10: fails even though L would come back.
        assert_eq!(prog("RL").run(pt("95")), None);
        assert_eq!(prog("LR").run(pt("95")), Some(pt("95")));
        assert_eq!(prog("D").run(pt("90")), None);
        assert_eq!(prog("R").run(pt("99")), None);
        assert_eq!(prog("LLDD").run(pt("22")), Some(pt("00")));
        assert_eq!(prog("DDL").run(pt("55")), Some(pt("43")));
        // 00 → U 01 → D 00 → L off.
        assert_eq!(prog("UDLR").run(pt("00")), None);
        assert_eq!(prog("RULD").run(pt("00")), Some(pt("00")));
    }

    #[test]
    fn points_and_programs_render() {
        assert_eq!(pt("07").to_string(), "07");
        assert_eq!(Point { x: 9, y: 0 }.to_string(), "90");
        assert_eq!(prog("RRULDD").to_string(), "RRULDD");
        assert_eq!(Point::all().count(), 100);
        assert_eq!(Point::all().next(), Some(pt("00")));
        assert_eq!(Point::all().last(), Some(pt("99")));
    }

    /// Counted by hand: `UUUUUU` needs y ≤ 3 (40 points), `RRRUUU` x ≤ 6 and y ≤ 6 (49), `L`
    /// x ≥ 1 (90), `RL` x ≤ 8 (90), `RLRLRL` x ≤ 8 (90), `UDLR` x ≥ 1 and y ≤ 8 (81).
    #[test]
    fn valid_inputs_by_hand() {
        for (p, n) in [
            ("UUUUUU", 40),
            ("RRRUUU", 49),
            ("L", 90),
            ("RL", 90),
            ("RLRLRL", 90),
            ("UDLR", 81),
        ] {
            assert_eq!(prog(p).valid_inputs().len(), n, "{p}");
        }
        assert!(prog("UUUUUU").valid_inputs().iter().all(|p| p.y <= 3));
    }

    #[test]
    fn drawn_programs_have_every_length_and_move() {
        let mut rng = SplitMix64(1);
        let programs: Vec<Program> = (0..6_000).map(|_| Program::draw(&mut rng)).collect();
        for len in 1..=MAX_MOVES {
            let n = programs.iter().filter(|p| p.0.len() == len).count();
            // 1,000 expected, binomial sd about 29.
            assert!((880..1_120).contains(&n), "length {len}: {n}");
        }
        let moves: Vec<Move> = programs.iter().flat_map(|p| p.0.clone()).collect();
        for m in Move::ALL {
            let share = moves.iter().filter(|&&x| x == m).count() as f64 / moves.len() as f64;
            assert!((0.23..0.27).contains(&share), "{m:?}: {share}");
        }
    }

    /// Inputs are distinct, valid, and every valid input is drawn (uniform over the pool).
    #[test]
    fn drawn_inputs_are_distinct_valid_and_cover_the_pool() {
        let mut rng = SplitMix64(2);
        let p = prog("UUUUUU");
        let mut counts = std::collections::HashMap::new();
        for _ in 0..4_000 {
            let inputs = p.draw_inputs(2, &mut rng);
            assert_ne!(inputs[0], inputs[1]);
            for i in inputs {
                assert!(p.run(i).is_some(), "{i}");
                *counts.entry(i).or_insert(0usize) += 1;
            }
        }
        // 40 valid points, 200 draws each expected (sd about 14).
        assert_eq!(counts.len(), 40);
        assert!(
            counts.values().all(|&c| (140..260).contains(&c)),
            "{counts:?}"
        );
    }
}
