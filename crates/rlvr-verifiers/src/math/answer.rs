//! Structured answers: values, equations, intervals, tuples, sets, unions and matrices.

use super::expr::{self, Expr};

/// The largest normalized answer the parser looks at; longer strings compare as text only, so a
/// pathological answer cannot stall a batch.
pub const MAX_ANSWER_CHARS: usize = 2_000;
/// The most elements a tuple, set or matrix may have before it compares as text (unordered
/// matching is quadratic).
pub const MAX_ITEMS: usize = 64;

/// A parsed final answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A single value or algebraic expression.
    Expr(Expr),
    /// `lhs = rhs`.
    Equation(Expr, Expr),
    /// An interval; `true` ends are closed.
    Interval {
        /// Left end.
        lo: Expr,
        /// Right end.
        hi: Expr,
        /// `[` rather than `(`.
        lo_closed: bool,
        /// `]` rather than `)`.
        hi_closed: bool,
    },
    /// `(a, b, c)`: order matters.
    Tuple(Vec<Answer>),
    /// `a, b` or `\{a, b\}` or `a \pm b`: order does not matter.
    Set(Vec<Answer>),
    /// `I \cup J`.
    Union(Vec<Answer>),
    /// `\begin{pmatrix} … \end{pmatrix}`, row-major.
    Matrix(Vec<Vec<Answer>>),
    /// Anything else, compared as normalized text (case-insensitive).
    Text(String),
}

/// Parses a normalized answer (see [`super::normalize::normalize`]).
pub fn parse_answer(s: &str) -> Answer {
    if s.len() > MAX_ANSWER_CHARS {
        return text(s);
    }
    parse_inner(s, 0)
}

fn text(s: &str) -> Answer {
    let t: String = s
        .chars()
        .filter(|c| !matches!(c, '{' | '}' | '\\'))
        .collect();
    Answer::Text(t.to_lowercase())
}

fn parse_inner(s: &str, depth: usize) -> Answer {
    if depth > 8 || s.is_empty() {
        return text(s);
    }
    let s = s.trim();
    // A word (`Evelyn`, `east`) is text, not a product of one-letter variables.
    if s.len() >= 3
        && s.chars().all(|c| c.is_ascii_alphabetic())
        && !matches!(s, "pi" | "inf" | "infinity")
    {
        return text(s);
    }
    // `x \in [a, b]` is the interval.
    if let Some(rest) = s.get(1..).and_then(|r| r.strip_prefix("\\in"))
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
    {
        return parse_inner(rest, depth + 1);
    }
    if let Some(interval) = inequality(s) {
        return interval;
    }
    let unions = split_top(s, "\\cup");
    if unions.len() > 1 {
        return Answer::Union(unions.iter().map(|p| parse_inner(p, depth + 1)).collect());
    }
    if let Some(m) = matrix(s, depth) {
        return m;
    }
    if let Some(inner) = s.strip_prefix("\\{").and_then(|r| r.strip_suffix("\\}")) {
        return set(split_top(inner, ",")
            .iter()
            .map(|p| parse_inner(p, depth + 1))
            .collect());
    }
    if let Some((open, inner, close)) = enclosed(s) {
        let items = split_top(inner, ",");
        if items.len() > MAX_ITEMS {
            return text(s);
        }
        if items.len() > 1 {
            let parsed: Vec<Answer> = items.iter().map(|p| parse_inner(p, depth + 1)).collect();
            let infinite_end = [items[0], items[items.len() - 1]]
                .iter()
                .any(|p| expr::parse(p).is_ok_and(|e| e.is_infinite()));
            if items.len() == 2
                && (open != '(' || close != ')' || infinite_end)
                && let (Ok(lo), Ok(hi)) = (expr::parse(items[0]), expr::parse(items[1]))
            {
                return Answer::Interval {
                    lo,
                    hi,
                    lo_closed: open == '[',
                    hi_closed: close == ']',
                };
            }
            return Answer::Tuple(parsed);
        }
    }
    let items = split_top(s, ",");
    if items.len() > MAX_ITEMS {
        return text(s);
    }
    if items.len() > 1 {
        return set(items.iter().map(|p| parse_inner(p, depth + 1)).collect());
    }
    if s.matches("\\pm").count() == 1 {
        let plus = s.replacen("\\pm", "+", 1);
        let minus = s.replacen("\\pm", "-", 1);
        return set(vec![
            parse_inner(&plus, depth + 1),
            parse_inner(&minus, depth + 1),
        ]);
    }
    let sides = split_top(s, "=");
    if sides.len() == 2
        && let (Ok(l), Ok(r)) = (expr::parse(sides[0]), expr::parse(sides[1]))
    {
        return Answer::Equation(l, r);
    }
    match expr::parse(s) {
        Ok(e) => Answer::Expr(e),
        Err(_) => text(s),
    }
}

/// Comparison operators, longest spelling first: (spelling, is `<`-like, is strict).
const COMPARISONS: [(&str, bool, bool); 8] = [
    ("\\leq", true, false),
    ("\\geq", false, false),
    ("\\le", true, false),
    ("\\ge", false, false),
    ("\\lt", true, true),
    ("\\gt", false, true),
    ("<", true, true),
    (">", false, true),
];

/// `x > 2`, `x \leq 3`, `2 \leq x < 5`, `5 > x`: the interval of one variable they describe.
fn inequality(s: &str) -> Option<Answer> {
    if !s.contains(['<', '>'])
        && !s.contains("\\le")
        && !s.contains("\\ge")
        && !s.contains("\\lt")
        && !s.contains("\\gt")
    {
        return None;
    }
    // Split at top-level comparisons.
    let (mut parts, mut ops) = (Vec::new(), Vec::new());
    let (mut depth, mut start, mut k) = (0i32, 0usize, 0usize);
    while k < s.len() {
        let c = s.as_bytes()[k];
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ => {}
        }
        let hit = (depth == 0)
            .then(|| COMPARISONS.iter().find(|(w, ..)| s[k..].starts_with(w)))
            .flatten()
            .filter(|(w, ..)| {
                // `\left`, `\geqslant`-like longer commands are not these operators.
                !(w.starts_with('\\')
                    && s[k + w.len()..].starts_with(|ch: char| ch.is_ascii_alphabetic()))
            });
        if let Some((w, less, strict)) = hit {
            parts.push(s[start..k].trim());
            ops.push((*less, *strict));
            k += w.len();
            start = k;
            continue;
        }
        k += 1;
    }
    parts.push(s[start..].trim());
    let is_var = |p: &str| p.len() == 1 && p.chars().all(|c| c.is_ascii_alphabetic());
    let inf = || Expr::Inf;
    let neg_inf = || Expr::Neg(Box::new(Expr::Inf));
    let interval = |lo, hi, lo_closed, hi_closed| Answer::Interval {
        lo,
        hi,
        lo_closed,
        hi_closed,
    };
    match (parts.as_slice(), ops.as_slice()) {
        ([a, b], [(less, strict)]) => {
            // `x < e` or `e < x`: `less` says which side is smaller.
            let (var_left, e) = if is_var(a) && !is_var(b) {
                (true, expr::parse(b).ok()?)
            } else if is_var(b) && !is_var(a) {
                (false, expr::parse(a).ok()?)
            } else {
                return None;
            };
            let upper = var_left == *less;
            Some(if upper {
                interval(neg_inf(), e, false, !strict)
            } else {
                interval(e, inf(), !strict, false)
            })
        }
        ([a, x, b], [(l1, s1), (l2, s2)]) if is_var(x) && l1 == l2 => {
            let (a, b) = (expr::parse(a).ok()?, expr::parse(b).ok()?);
            Some(if *l1 {
                interval(a, b, !s1, !s2)
            } else {
                interval(b, a, !s2, !s1)
            })
        }
        _ => None,
    }
}

fn set(mut items: Vec<Answer>) -> Answer {
    if items.len() > MAX_ITEMS {
        return Answer::Text(format!("{items:?}"));
    }
    if items.len() == 1 {
        items.pop().expect("one item")
    } else {
        Answer::Set(items)
    }
}

/// `(…)`, `[…]`, `(…]`, `[…)` whose opening bracket closes at the very end.
fn enclosed(s: &str) -> Option<(char, &str, char)> {
    let open = s.chars().next()?;
    let close = s.chars().last()?;
    if !matches!(open, '(' | '[') || !matches!(close, ')' | ']') || s.len() < 2 {
        return None;
    }
    let mut depth = 0i32;
    for (k, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 && k != s.len() - 1 {
                    return None;
                }
            }
            _ => {}
        }
    }
    Some((open, &s[1..s.len() - 1], close))
}

/// Splits at `sep` outside brackets and braces.
fn split_top<'a>(s: &'a str, sep: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let bytes = s.as_bytes();
    let mut k = 0;
    while k < bytes.len() {
        match bytes[k] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            // `\{` opens a set even though it is escaped; `\left` has been removed already.
            _ => {}
        }
        if depth == 0 && s[k..].starts_with(sep) {
            out.push(&s[start..k]);
            k += sep.len();
            start = k;
            continue;
        }
        k += 1;
    }
    out.push(&s[start..]);
    out
}

fn matrix(s: &str, depth: usize) -> Option<Answer> {
    let rest = s.strip_prefix("\\begin{")?;
    let (env, body) = rest.split_once('}')?;
    if !env.ends_with("matrix") {
        return None;
    }
    let body = body.strip_suffix(&format!("\\end{{{env}}}"))?;
    let rows = body
        .split("\\\\")
        .filter(|r| !r.trim().is_empty())
        .map(|r| r.split('&').map(|c| parse_inner(c, depth + 1)).collect())
        .collect();
    Some(Answer::Matrix(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structures_are_recognized() {
        assert!(matches!(
            parse_answer("(3,4]"),
            Answer::Interval {
                lo_closed: false,
                hi_closed: true,
                ..
            }
        ));
        assert!(matches!(
            parse_answer("(2,\\infty)"),
            Answer::Interval { .. }
        ));
        assert!(matches!(parse_answer("(6,31,-1)"), Answer::Tuple(v) if v.len() == 3));
        assert!(matches!(parse_answer("(-2,1)"), Answer::Tuple(v) if v.len() == 2));
        assert!(matches!(parse_answer("1,-2"), Answer::Set(v) if v.len() == 2));
        assert!(matches!(parse_answer("1\\pm\\sqrt{19}"), Answer::Set(v) if v.len() == 2));
        assert!(matches!(parse_answer("x=5"), Answer::Equation(..)));
        assert!(matches!(parse_answer("(0,9)\\cup(9,36)"), Answer::Union(v) if v.len() == 2));
        assert!(
            matches!(parse_answer("\\begin{pmatrix}-1&0\\\\0&-1\\end{pmatrix}"), Answer::Matrix(r) if r.len() == 2)
        );
        assert!(matches!(parse_answer("Evelyn"), Answer::Text(_)));
        assert!(matches!(
            parse_answer("x>2"),
            Answer::Interval {
                lo: Expr::Num(_),
                hi: Expr::Inf,
                lo_closed: false,
                hi_closed: false,
            }
        ));
        assert!(matches!(
            parse_answer("x\\leq3"),
            Answer::Interval {
                lo: Expr::Neg(_),
                lo_closed: false,
                hi_closed: true,
                ..
            }
        ));
        assert!(matches!(
            parse_answer("2\\leq x<5"),
            Answer::Interval {
                lo_closed: true,
                hi_closed: false,
                ..
            }
        ));
        assert!(matches!(
            parse_answer("5\\geq x>2"),
            Answer::Interval {
                lo_closed: false,
                hi_closed: true,
                ..
            }
        ));
        assert!(matches!(
            parse_answer("x<y"),
            Answer::Text(_) | Answer::Expr(_)
        ));
        assert!(matches!(
            parse_answer("x\\in[-2,7]"),
            Answer::Interval {
                lo_closed: true,
                hi_closed: true,
                ..
            }
        ));
    }
}
