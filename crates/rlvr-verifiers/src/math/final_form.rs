//! The final-form rule: a gold answer written as a number needs an answer written as a number.
//!
//! Equivalence alone would score `37+45` correct for the gold `82`: both evaluate to 82. A policy
//! trained on that reward learns to echo its prompt's arithmetic instead of doing it, so when the
//! gold is a numeral (an integer, a decimal, a fraction of integers, a mixed number, each
//! possibly negated; or a tuple, set, interval or matrix of them) the response must state a
//! numeral too. An equation passes when one side is a numeral (`x = 82`, or the worked
//! `37+45=82`, which [`super::equiv`] still checks holds); `x = 37+45` does not. Unevaluated
//! powers, roots and sums (`10^3` for 1000, `\sqrt{25}` for 5) are refused for the same reason,
//! as MATH's own string-matching grader refuses them. Golds that are not numerals (`2\sqrt{3}`,
//! `\frac{\pi}{4}`, `x^2+1`) are compared by equivalence alone.

use super::answer::Answer;
use super::expr::Expr;

/// Whether `gold` is written as a number (or a structure whose every entry is), so that a
/// response must be too (see [`in_numeral_form`]).
pub fn is_numeral_answer(gold: &Answer) -> bool {
    match gold {
        Answer::Expr(e) => is_numeral(e),
        Answer::Equation(l, r) => {
            (is_numeral(l) && matches!(r, Expr::Var(_)))
                || (is_numeral(r) && matches!(l, Expr::Var(_)))
        }
        Answer::Interval { lo, hi, .. } => is_numeral(lo) && is_numeral(hi),
        Answer::Tuple(items) | Answer::Set(items) | Answer::Union(items) => {
            !items.is_empty() && items.iter().all(is_numeral_answer)
        }
        Answer::Matrix(rows) => !rows.is_empty() && rows.iter().flatten().all(is_numeral_answer),
        Answer::Text(_) => false,
    }
}

/// Whether a response's answer states its values as numbers: every value is a numeral, an
/// equation has a numeral side, and text (compared as text anyway) passes.
pub fn in_numeral_form(answer: &Answer) -> bool {
    match answer {
        Answer::Expr(e) => is_numeral(e),
        Answer::Equation(l, r) => is_numeral(l) || is_numeral(r),
        Answer::Interval { lo, hi, .. } => is_numeral(lo) && is_numeral(hi),
        Answer::Tuple(items) | Answer::Set(items) | Answer::Union(items) => {
            items.iter().all(in_numeral_form)
        }
        Answer::Matrix(rows) => rows.iter().flatten().all(in_numeral_form),
        Answer::Text(_) => true,
    }
}

/// A numeral: `82`, `1.5`, `2.5e3`, `6.72 \times 10^{-5}`, `\frac{3}{4}`, `1\frac{4}{5}` (read as
/// `1+\frac{4}{5}`), `\infty`, each possibly negated.
pub fn is_numeral(e: &Expr) -> bool {
    match e {
        Expr::Num(_) | Expr::Decimal(_) | Expr::Float(_) | Expr::Inf => true,
        Expr::Neg(inner) => is_numeral(inner),
        Expr::Div(num, den) => is_integer(num) && is_integer(den),
        Expr::Add(terms) => is_mixed_number(terms),
        Expr::Mul(factors) => is_scientific(factors),
        _ => false,
    }
}

/// An integer literal, possibly negated.
fn is_integer(e: &Expr) -> bool {
    match e {
        Expr::Num(_) => true,
        Expr::Neg(inner) => matches!(**inner, Expr::Num(_)),
        _ => false,
    }
}

/// `a \times 10^{k}` with a literal `a` and an integer `k`: scientific notation.
fn is_scientific(factors: &[Expr]) -> bool {
    let [mantissa, Expr::Pow(base, exponent)] = factors else {
        return false;
    };
    matches!(mantissa, Expr::Num(_) | Expr::Decimal(_))
        && matches!(&**base, Expr::Num(ten) if *ten == super::num::Rational::int(10))
        && is_integer(exponent)
}

/// `n + a/b` with literal `n`, `a`, `b` and `a < b`: the parse of a mixed number `n\frac{a}{b}`.
fn is_mixed_number(terms: &[Expr]) -> bool {
    let [Expr::Num(_), Expr::Div(a, b)] = terms else {
        return false;
    };
    match (&**a, &**b) {
        (Expr::Num(a), Expr::Num(b)) => a.num < b.num,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::answer::parse_answer;
    use crate::math::normalize::normalize;

    fn numeral(s: &str) -> bool {
        in_numeral_form(&parse_answer(&normalize(s)))
    }

    #[test]
    fn numbers_written_as_numbers_are_numerals() {
        for s in [
            "82",
            "-56",
            "−56",
            "1,000",
            "1000.0",
            "0.125",
            "\\frac{1}{8}",
            "\\dfrac{-3}{4}",
            "-\\frac{3}{4}",
            "1\\frac{4}{5}",
            "2.5e3",
            "50\\%",
            "\\$18",
            "x = 82",
            "82 = x",
            "37+45=82",
            "6.72\\times 10^{-5}",
            "(1, 2)",
            "\\{3, -4\\}",
            "[0, 5)",
            "\\infty",
        ] {
            assert!(numeral(s), "{s} should be a numeral");
        }
    }

    #[test]
    fn unevaluated_arithmetic_is_not_a_numeral() {
        for s in [
            "37+45",
            "37+45-20",
            "2\\cdot 41",
            "10^3",
            "\\sqrt{25}",
            "\\frac{1}{2^3}",
            "\\sqrt[3]{27}",
            "x = 37+45",
            "(37+45, 2)",
            "\\frac{164}{2} + 0",
            "3!",
        ] {
            assert!(!numeral(s), "{s} should not be a numeral");
        }
    }

    #[test]
    fn only_numeral_golds_demand_numerals() {
        for (gold, demands) in [
            ("82", true),
            ("\\frac{3}{4}", true),
            ("(1, -2)", true),
            ("x = 3", true),
            ("2\\sqrt{3}", false),
            ("\\frac{\\pi}{4}", false),
            ("x^2+1", false),
            ("\\text{Monday}", false),
        ] {
            assert_eq!(
                is_numeral_answer(&parse_answer(&normalize(gold))),
                demands,
                "{gold}"
            );
        }
    }
}
