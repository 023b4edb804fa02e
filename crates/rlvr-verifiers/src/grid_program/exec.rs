//! The grid-program language: moves on a 10 × 10 grid.
//!
//! A point is two digits `xy` (x first). A program is 1 to [`MAX_MOVES`] letters of `U D L R`
//! (U: y+1, D: y−1, R: x+1, L: x−1), run in order from an input point; a move off the grid is
//! a failed execution (no clamping, so a program maps each output back to exactly one input).

/// The most moves a program may have.
pub const MAX_MOVES: usize = 6;
/// The grid's side: coordinates are `0..SIDE`.
pub const SIDE: i32 = 10;

/// A grid point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Point {
    /// Column, `0..SIDE`.
    pub x: i32,
    /// Row, `0..SIDE`.
    pub y: i32,
}

impl Point {
    /// Reads `xy` (exactly two digits).
    pub fn parse(s: &str) -> Option<Point> {
        let b = s.as_bytes();
        (b.len() == 2 && b.iter().all(u8::is_ascii_digit)).then(|| Point {
            x: i32::from(b[0] - b'0'),
            y: i32::from(b[1] - b'0'),
        })
    }
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.x, self.y)
    }
}

/// Whether `s` is a program: 1 to [`MAX_MOVES`] moves of `U D L R`.
pub fn is_program(s: &str) -> bool {
    (1..=MAX_MOVES).contains(&s.len()) && s.bytes().all(|c| b"UDLR".contains(&c))
}

/// One move: `U` y+1, `D` y−1, `R` x+1, `L` x−1.
fn step(p: Point, mv: u8) -> Point {
    match mv {
        b'U' => Point { y: p.y + 1, ..p },
        b'D' => Point { y: p.y - 1, ..p },
        b'R' => Point { x: p.x + 1, ..p },
        _ => Point { x: p.x - 1, ..p },
    }
}

/// Runs `program` from `input`: the final point, or `None` when a move leaves the grid or the
/// program is not one.
pub fn run(program: &str, input: Point) -> Option<Point> {
    if !is_program(program) {
        return None;
    }
    let inside = |p: Point| (0..SIDE).contains(&p.x) && (0..SIDE).contains(&p.y);
    let mut p = input;
    for mv in program.bytes() {
        p = step(p, mv);
        if !inside(p) {
            return None;
        }
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(s: &str) -> Point {
        Point::parse(s).unwrap()
    }

    #[test]
    fn programs_run_by_hand() {
        // 23 → R 33 → R 43 → U 44.
        assert_eq!(run("RRU", pt("23")), Some(pt("44")));
        assert_eq!(run("DDL", pt("55")), Some(pt("43")));
        assert_eq!(
            run("UDLR", pt("00")),
            None,
            "D from 01 is fine, L from 00 is off"
        );
        assert_eq!(run("RULD", pt("00")), Some(pt("00")));
        assert_eq!(run("L", pt("05")), None);
        assert_eq!(run("UUUUUU", pt("04")), None);
        assert_eq!(run("UUUUU", pt("04")), Some(pt("09")));
        assert_eq!(run("", pt("11")), None);
        assert_eq!(run("RRRRRRR", pt("00")), None, "seven moves");
        assert_eq!(run("RX", pt("00")), None);
    }

    #[test]
    fn points_are_two_digits() {
        assert_eq!(Point::parse("09"), Some(Point { x: 0, y: 9 }));
        for bad in ["9", "123", "a1", " 1", ""] {
            assert_eq!(Point::parse(bad), None, "{bad:?}");
        }
        assert_eq!(pt("07").to_string(), "07");
    }
}
