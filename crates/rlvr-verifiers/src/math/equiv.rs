//! Stage 3 of the math pipeline: are two parsed answers the same mathematical object?

use std::collections::{BTreeMap, BTreeSet};

use super::answer::Answer;
use super::expr::Expr;
use super::num::Complex;

/// Numeric knobs of the equivalence test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance for inexact values (radicals, π, decimals vs fractions).
    pub rel: f64,
    /// Absolute tolerance near zero.
    pub abs: f64,
    /// Random points at which algebraic expressions are compared.
    pub points: usize,
}

/// Fixed seed of the evaluation points, so that verdicts are reproducible.
const POINT_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// Whether `a` and `b` denote the same answer.
pub fn equivalent(a: &Answer, b: &Answer, tol: &Tolerance) -> bool {
    use Answer::*;
    match (a, b) {
        (Expr(x), Expr(y)) => expr_equiv(x, y, tol),
        (Equation(l, r), Expr(e)) | (Expr(e), Equation(l, r)) => {
            // `x = 3` answers "3": the variable side is the name of the value. A worked
            // equation without variables (`2 + 3 = 5`) answers its right side, if it holds.
            (is_var(l) && expr_equiv(r, e, tol))
                || (is_var(r) && expr_equiv(l, e, tol))
                || (is_constant(l)
                    && is_constant(r)
                    && expr_equiv(l, r, tol)
                    && expr_equiv(r, e, tol))
        }
        (Equation(l1, r1), Equation(l2, r2)) => {
            (expr_equiv(l1, l2, tol) && expr_equiv(r1, r2, tol))
                || (expr_equiv(l1, r2, tol) && expr_equiv(r1, l2, tol))
                || proportional(&diff(l1, r1), &diff(l2, r2), tol)
        }
        (
            Interval {
                lo: a0,
                hi: a1,
                lo_closed: ac0,
                hi_closed: ac1,
            },
            Interval {
                lo: b0,
                hi: b1,
                lo_closed: bc0,
                hi_closed: bc1,
            },
        ) => ac0 == bc0 && ac1 == bc1 && expr_equiv(a0, b0, tol) && expr_equiv(a1, b1, tol),
        (
            Interval {
                lo,
                hi,
                lo_closed: false,
                hi_closed: false,
            },
            Tuple(t),
        )
        | (
            Tuple(t),
            Interval {
                lo,
                hi,
                lo_closed: false,
                hi_closed: false,
            },
        ) => {
            t.len() == 2
                && equivalent(&Expr(lo.clone()), &t[0], tol)
                && equivalent(&Expr(hi.clone()), &t[1], tol)
        }
        (Tuple(x), Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equivalent(p, q, tol))
        }
        (Set(x), Set(y)) | (Union(x), Union(y)) => unordered(x, y, tol),
        (Matrix(x), Matrix(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(rx, ry)| {
                    rx.len() == ry.len() && rx.iter().zip(ry).all(|(p, q)| equivalent(p, q, tol))
                })
        }
        (Text(x), Text(y)) => x == y,
        _ => false,
    }
}

fn is_var(e: &Expr) -> bool {
    matches!(e, Expr::Var(_))
}

fn is_constant(e: &Expr) -> bool {
    let mut vars = BTreeSet::new();
    e.vars(&mut vars);
    vars.is_empty() && !e.is_infinite()
}

fn diff(l: &Expr, r: &Expr) -> Expr {
    Expr::Add(vec![l.clone(), Expr::Neg(Box::new(r.clone()))])
}

/// Every element of `x` matches a distinct element of `y` (sizes equal).
fn unordered(x: &[Answer], y: &[Answer], tol: &Tolerance) -> bool {
    if x.len() != y.len() {
        return false;
    }
    let mut used = vec![false; y.len()];
    x.iter().all(|p| {
        let hit = (0..y.len()).find(|&k| !used[k] && equivalent(p, &y[k], tol));
        hit.map(|k| used[k] = true).is_some()
    })
}

/// Numbers compare exactly when both are rational, else within tolerance; expressions with
/// variables compare at seeded random points (a polynomial identity test).
pub fn expr_equiv(a: &Expr, b: &Expr, tol: &Tolerance) -> bool {
    if a == b {
        return true;
    }
    if let (Some(x), Some(y)) = (a.exact(), b.exact()) {
        // Integers and fractions compare exactly; a decimal is a rounded value and gets the
        // numeric tolerance (0.3333333333 is 1/3, 0.333 is not at the default tolerance).
        if x == y || !(a.has_decimal() || b.has_decimal()) {
            return x == y;
        }
    }
    if a.is_infinite() || b.is_infinite() {
        let sign = |e: &Expr| matches!(e, Expr::Neg(_));
        return a.is_infinite() && b.is_infinite() && sign(a) == sign(b);
    }
    let mut vars = BTreeSet::new();
    a.vars(&mut vars);
    b.vars(&mut vars);
    if vars.is_empty() {
        return close(a.eval(&BTreeMap::new()), b.eval(&BTreeMap::new()), tol);
    }
    let mut rng = POINT_SEED;
    let (mut agreed, mut tries) = (0, 0);
    while agreed < tol.points && tries < tol.points * 4 {
        tries += 1;
        let env: BTreeMap<String, Complex> = vars
            .iter()
            .map(|v| (v.clone(), Complex::real(sample(&mut rng))))
            .collect();
        let (x, y) = (a.eval(&env), b.eval(&env));
        if !x.is_finite() || !y.is_finite() {
            continue;
        }
        if !close(x, y, tol) {
            return false;
        }
        agreed += 1;
    }
    agreed == tol.points
}

/// `a = k * b` for one constant `k != 0` at every sample point (equations up to scaling).
fn proportional(a: &Expr, b: &Expr, tol: &Tolerance) -> bool {
    let mut vars = BTreeSet::new();
    a.vars(&mut vars);
    b.vars(&mut vars);
    let mut rng = POINT_SEED ^ 1;
    let mut ratio: Option<Complex> = None;
    let mut agreed = 0;
    for _ in 0..tol.points * 4 {
        let env: BTreeMap<String, Complex> = vars
            .iter()
            .map(|v| (v.clone(), Complex::real(sample(&mut rng))))
            .collect();
        let (x, y) = (a.eval(&env), b.eval(&env));
        if !x.is_finite() || !y.is_finite() || y.abs() < 1e-9 {
            continue;
        }
        let r = x / y;
        match ratio {
            None if r.abs() > 1e-12 => ratio = Some(r),
            None => return false,
            Some(k) if !close(k, r, tol) => return false,
            Some(_) => {}
        }
        agreed += 1;
        if agreed == tol.points {
            return true;
        }
    }
    false
}

fn close(x: Complex, y: Complex, tol: &Tolerance) -> bool {
    if !x.is_finite() || !y.is_finite() {
        return false;
    }
    let d = (x - y).abs();
    d <= tol.abs || d <= tol.rel * x.abs().max(y.abs())
}

/// A point in `[0.3, 2.3)` from a splitmix64 stream: positive (so roots and logs stay real where
/// the answers intend them to) and away from the small integers where distinct expressions often
/// coincide.
fn sample(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    0.3 + 2.0 * (z >> 11) as f64 / (1u64 << 53) as f64
}
