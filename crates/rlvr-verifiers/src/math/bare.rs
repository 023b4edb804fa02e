//! Bare answers: a response that is nothing but its answer (`\frac{1}{2}`, `1 234 567`, `10^3`),
//! or prose that ends on one (`... which gives $\sqrt{2}$.`).
//!
//! Read before the last-number fallback, which would take `2` from `\frac{1}{2}` and `3` from
//! `10^3`. The rule is built not to open new false passes:
//! - only text made of math is read (numbers, one-letter variables, LaTeX commands, operators,
//!   the words `pi`, `sqrt`, `infinity`, function names, unit words); prose is left to the fallback;
//! - several values stay several values: `1 or 2`, `1, 2, 3`, `1 2 3` (digits apart that are not
//!   thousands groups: see [`super::normalize::normalize`]), `$1$ and $2$` and a column of
//!   numbers become one list, which matches only a list gold;
//! - a chain `2 + 3 = 5 = 5` reads as its last part; `2 + 3 = 5` compares its right side only when
//!   the equation holds (see [`super::equiv::equivalent`]);
//! - what does not parse as one structured answer is not a bare answer.
//! - an answer read whole is still judged by [`super::final_form`]: `10^3` is read as `10^3`,
//!   and refused for the gold 1000 (it is unevaluated arithmetic, not the number).

use std::sync::LazyLock;

use regex::Regex;

use super::answer::{Answer, MAX_ANSWER_CHARS, MAX_ITEMS, parse_answer};
use super::normalize::{UNIT_WORDS, normalize};

/// Letter words that math may contain (besides one-letter variables and `\commands`).
const MATH_WORDS: [&str; 16] = [
    "pi", "sqrt", "inf", "infty", "infinity", "or", "and", "sin", "cos", "tan", "cot", "sec",
    "csc", "ln", "log", "exp",
];

/// Most words of a bare text answer inside `\text{}` (outside it, one word: `Evelyn`, `No`).
const MAX_TEXT_WORDS: usize = 3;

static UNIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(?i)(?:{UNIT_WORDS})(?:\^\{{?[23]\}}?|\^[23])?$"
    ))
    .expect("static regex")
});
static TEXT_GROUP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
        .expect("static regex")
});
static ENV: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\\(?:begin|end)\{[a-zA-Z*]+\}").expect("static regex"));
static COMMAND: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\\[a-zA-Z]+").expect("static regex"));
static BASE_NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[0-9A-Za-z]+_\{?[0-9]+\}?$").expect("static regex"));
static LETTERS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[a-zA-Z]+").expect("static regex"));

/// The bare answer of `text`, if it has one: the whole text when it is one answer, else the math
/// the text ends on (a closing `$…$`/`\[…\]` span, or the math tokens ending its last line).
///
/// `None` for prose that does not end on math, and for math that does not parse as one
/// structured answer (the caller then falls back). The string returned is raw (not normalized);
/// several spans or lines come back comma-separated.
pub fn bare_answer(text: &str) -> Option<String> {
    let t = strip_trailing(text);
    if t.is_empty() {
        return None;
    }
    if t.len() <= MAX_ANSWER_CHARS
        && let Some(a) = whole(t)
    {
        return Some(a);
    }
    if let Some(spans) = trailing_spans(t) {
        return candidate(&spans).or_else(|| short_text(&spans).then_some(spans));
    }
    let line = t.lines().rev().find(|l| !l.trim().is_empty())?;
    // A very long last line: its end is what matters.
    let mut cut = line.len().saturating_sub(MAX_ANSWER_CHARS);
    while !line.is_char_boundary(cut) {
        cut += 1;
    }
    let line = &line[cut..];
    candidate(&math_suffix(strip_trailing(line))?)
}

/// `text` without trailing spaces, sentence punctuation and markdown bold.
fn strip_trailing(text: &str) -> &str {
    let mut s = text.trim();
    loop {
        let mut t = s.trim_end_matches(['.', ';', ',']);
        // `!` ends a sentence after a word, but is a factorial after `5` or `)`.
        while let Some(r) = t.strip_suffix('!') {
            if r.ends_with(|c: char| c.is_ascii_digit() || matches!(c, ')' | '}')) {
                break;
            }
            t = r;
        }
        let t = t.trim_end_matches("**").trim_end();
        let t = t.strip_prefix("**").unwrap_or(t).trim_start();
        if t.len() == s.len() {
            return s;
        }
        s = t;
    }
}

/// The whole response as one answer: math (one line, or a matrix or display block over several),
/// several lines that each hold one plain number (a list), or a short text answer.
fn whole(t: &str) -> Option<String> {
    let lines: Vec<&str> = t.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if lines.len() > 1 && !t.contains("\\begin") && !is_display(t) {
        // A column of bare numbers ending the response is a list, however its last line reads.
        let numbers = lines
            .iter()
            .rev()
            .take_while(|l| {
                l.chars().any(|c| c.is_ascii_digit())
                    && l.chars().all(|c| c.is_ascii_digit() || "-.,".contains(c))
            })
            .count();
        if numbers >= 2 {
            return candidate(&lines[lines.len() - numbers..].join(", "));
        }
        return None;
    }
    if let Some(a) = candidate(t) {
        return Some(a);
    }
    short_text(t).then(|| t.to_string())
}

/// Whether `t` is one display-math block (`$$…$$`, `\[…\]`).
fn is_display(t: &str) -> bool {
    (t.starts_with("$$") && t.ends_with("$$") && t.len() > 4)
        || (t.starts_with("\\[") && t.ends_with("\\]"))
}

/// One word of text, or a few inside `\text{}`, and nothing else (`Evelyn`, `\text{east}`):
/// text answers are compared as text, so a wrong one can only fail. Prose (`no idea`) is not one.
fn short_text(t: &str) -> bool {
    let t = t.trim_matches('$').trim();
    let inner = TEXT_GROUP
        .captures(t)
        .filter(|c| c[0].len() == t.len())
        .map(|c| c.get(1).map_or("", |m| m.as_str()));
    let (body, words) = match inner {
        Some(inner) => (inner, MAX_TEXT_WORDS),
        None => (t, 1),
    };
    body.len() <= 40
        && (1..=words).contains(&body.split_whitespace().count())
        && body.chars().any(|c| c.is_ascii_alphabetic())
        && body
            .chars()
            .all(|c| c.is_ascii_alphabetic() || " ()'-".contains(c))
}

/// The contents of the inline/display math spans the text ends on, joined by `, ` when several
/// are chained by separators (`$1$ or $2$`, `$x=1$, $x=2$`). `None` when the text does not end on
/// a span.
fn trailing_spans(t: &str) -> Option<String> {
    let mut rest = t;
    let mut spans = Vec::new();
    while let Some((before, inner)) = last_span(rest) {
        if inner.len() > MAX_ANSWER_CHARS {
            return None;
        }
        if spans.len() >= MAX_ITEMS {
            // A flood of alternatives is still a list (that no scalar gold matches).
            break;
        }
        spans.push(inner.trim());
        rest = before.trim_end();
        // A separator between two spans joins them into one list.
        let stripped = strip_separator(rest);
        if stripped.len() == rest.len() || last_span(stripped).is_none() {
            break;
        }
        rest = stripped;
    }
    if spans.is_empty() {
        return None;
    }
    spans.reverse();
    Some(spans.join(", "))
}

/// `rest` without one trailing `,`, `or`, `and` (and the spaces before it).
fn strip_separator(rest: &str) -> &str {
    for sep in [",", " or", " and", " or,", "\\text{ or }", "\\text{ and }"] {
        if let Some(s) = rest.strip_suffix(sep) {
            return s.trim_end();
        }
    }
    rest
}

/// The text before and the inside of the math span that ends `t` (`$…$`, `$$…$$`, `\(…\)`,
/// `\[…\]`).
fn last_span(t: &str) -> Option<(&str, &str)> {
    if let Some(body) = t.strip_suffix("$$") {
        let open = body.rfind("$$")?;
        return Some((&body[..open], &body[open + 2..]));
    }
    for (open, close) in [("\\[", "\\]"), ("\\(", "\\)")] {
        if let Some(body) = t.strip_suffix(close) {
            let k = body.rfind(open)?;
            return Some((&body[..k], &body[k + open.len()..]));
        }
    }
    let body = t.strip_suffix('$')?;
    if body.ends_with('\\') {
        return None;
    }
    let bytes = body.as_bytes();
    let open = (0..bytes.len())
        .rev()
        .find(|&k| bytes[k] == b'$' && (k == 0 || bytes[k - 1] != b'\\'))?;
    Some((&body[..open], &body[open + 1..]))
}

/// The math tokens that end `line` (`... gives 10^3` → `10^3`, `... so x = 5` → `x = 5`), with
/// trailing unit words; `None` when the line does not end on math.
fn math_suffix(line: &str) -> Option<String> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    let mut start = toks.len();
    let mut seen_math = false;
    for (k, tok) in toks.iter().enumerate().rev() {
        let tok = tok.trim_matches('*');
        let letters_only = !tok.is_empty() && tok.chars().all(|c| c.is_ascii_alphabetic());
        let accepted = if !seen_math && UNIT.is_match(tok) {
            // A trailing unit: kept (normalization removes it), but not math yet.
            true
        } else if letters_only && matches!(tok, "or" | "and") {
            seen_math
        } else if letters_only && tok.len() == 1 {
            // `x = 5` keeps its `x`; `is a 5` drops the article.
            let next = toks.get(k + 1).map(|t| t.trim_matches('*'));
            next.is_some_and(|n| n.starts_with(['=', '+', '-', '*', '/', '^']))
        } else if math_like(tok, false) && !tok.contains(':') {
            seen_math = true;
            true
        } else {
            false
        };
        if !accepted {
            break;
        }
        start = k;
    }
    let mut picked: Vec<&str> = toks[start..].iter().map(|t| t.trim_matches('*')).collect();
    while picked
        .first()
        .is_some_and(|t| matches!(*t, "or" | "and" | "," | "="))
    {
        picked.remove(0);
    }
    let s = picked.join(" ");
    let s = s.trim_start_matches([',', ':']).trim();
    (seen_math && has_math_signal(s)).then(|| s.to_string())
}

/// A digit, a LaTeX command or a math symbol: something the last-number fallback might misread.
fn has_math_signal(s: &str) -> bool {
    s.chars()
        .any(|c| c.is_ascii_digit() || matches!(c, '\\' | 'π' | '√' | '∞'))
}

/// Whether `s` is made of math only: numbers, operators, brackets, LaTeX commands and
/// environments, one-letter variables, [`MATH_WORDS`] and (with `units`) unit words.
fn math_like(s: &str, units: bool) -> bool {
    if s.is_empty()
        || !s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || c.is_whitespace()
                || "+-*/^()[]{},=!_|.'&$%\\~<>".contains(c)
                || "πθ√∞−×·÷°–≤≥".contains(c)
        })
    {
        return false;
    }
    let mut ok = true;
    let without_text = TEXT_GROUP.replace_all(s, |c: &regex::Captures<'_>| {
        let inner = c[1].trim();
        if !(inner.is_empty()
            || matches!(inner, "or" | "and")
            || inner.split_whitespace().all(|w| UNIT.is_match(w)))
        {
            ok = false;
        }
        " "
    });
    if !ok {
        return false;
    }
    let bare = ENV.replace_all(&without_text, " ");
    let bare = COMMAND.replace_all(&bare, " ");
    LETTERS.find_iter(&bare).all(|m| {
        let w = m.as_str();
        w.len() == 1
            || MATH_WORDS.contains(&w.to_ascii_lowercase().as_str())
            || (units && UNIT.is_match(w))
    })
}

/// Reads `s` as one answer: `Some` (the rewritten raw string) when it is math and parses as a
/// structured answer, not as text.
fn candidate(s: &str) -> Option<String> {
    let s = strip_trailing(s);
    if s.len() > MAX_ANSWER_CHARS || !math_like(s, true) {
        return None;
    }
    let mut s = s.to_string();
    if let Some(last) = chain_end(&s) {
        s = last.to_string();
    }
    let n = normalize(&s);
    // Text is no bare answer (the fallback may read it better), except a number in a base
    // (`4210_5`) and a list too long to parse: several answers must not fall back to one.
    if n.is_empty()
        || (matches!(parse_answer(&n), Answer::Text(_))
            && !BASE_NUMBER.is_match(&n)
            && !n.contains(','))
    {
        return None;
    }
    Some(s)
}

/// The last part of an equation chain with two or more top-level `=` and no top-level comma or
/// `or`/`and` (`x = 2 + 3 = 5` → `5`).
fn chain_end(s: &str) -> Option<&str> {
    if s.contains(" or ") || s.contains(" and ") || s.contains("\\text") {
        // `x=1 \text{ or } x=-2` is a list of equations.
        return None;
    }
    let (mut depth, mut eqs, mut last) = (0i32, 0, 0);
    for (k, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '=' if depth == 0 => {
                eqs += 1;
                last = k;
            }
            // `x=1, x=2` is a list of equations, not a chain.
            ',' if depth == 0 => return None,
            _ => {}
        }
    }
    (eqs >= 2).then(|| s[last + 1..].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_answers_table() {
        let cases: [(&str, Option<&str>); 30] = [
            (r"\frac{1}{2}", Some(r"\frac{1}{2}")),
            ("1 234 567", Some("1 234 567")),
            ("10^3", Some("10^3")),
            (r"\sqrt{25}", Some(r"\sqrt{25}")),
            ("$x = 5$", Some("$x = 5$")),
            ("1 or 2", Some("1 or 2")),
            ("1 2 3", Some("1 2 3")),
            ("12 3456", Some("12 3456")),
            ("1\n2\n3", Some("1, 2, 3")),
            ("Evelyn", Some("Evelyn")),
            ("42 dollars", Some("42 dollars")),
            ("So the total is 10^3.", Some("10^3")),
            (
                "which gives $\\frac{\\sqrt{3}}{2}$.",
                Some("\\frac{\\sqrt{3}}{2}"),
            ),
            ("the roots are $1$ or $2$", Some("1, 2")),
            ("the roots are $x=1$, $x=2$.", Some("x=1, x=2")),
            ("Thus 2 + 3 = 5 = 5", Some("5")),
            ("I think it's 41, no wait, 42", Some("42")),
            ("We get 18 apples and 12 pears so 30 fruits", None),
            ("This is a 5", Some("5")),
            ("Therefore x = 7", Some("x = 7")),
            ("It is either 3 or 4.", Some("3 or 4")),
            ("The answer lies in", None),
            ("no digits here at all", None),
            ("Step 2: 5", Some("5")),
            ("The total is 15 cm.", Some("15 cm")),
            ("Thus, **42**.", Some("42")),
            ("The value is 7. Hope this helps!", None),
            ("I think it is 5", Some("5")),
            ("hello there friend and more words", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(bare_answer(text).as_deref(), want, "text: {text:?}");
        }
    }

    #[test]
    fn long_responses_still_end_on_their_answer() {
        let long = format!(
            "{}\nso the area is $\\frac{{1}}{{2}}$.",
            "We reason. ".repeat(400)
        );
        assert_eq!(bare_answer(&long).as_deref(), Some("\\frac{1}{2}"));
        let long = format!("{}\ntotal: 10^3", "We reason. ".repeat(400));
        assert_eq!(bare_answer(&long).as_deref(), Some("10^3"));
        let start = std::time::Instant::now();
        let bomb = "$1$ or ".repeat(5_000) + "$2$";
        assert!(bare_answer(&bomb).is_some_and(|a| a.matches(',').count() >= 60));
        let bomb = "1 or ".repeat(5_000) + "2";
        assert!(bare_answer(&bomb).is_some_and(|a| a.contains(" or ")));
        assert!(start.elapsed().as_millis() < 500);
    }

    #[test]
    fn prose_is_not_math() {
        assert!(!math_like("I think it is 5", false));
        assert!(math_like(r"\begin{pmatrix} 1 & 2 \end{pmatrix}", false));
        assert!(math_like(r"3\text{ cm}", false));
        assert!(!math_like(r"3\text{ apples please}", false));
        assert!(math_like("2 pi", false));
    }
}
