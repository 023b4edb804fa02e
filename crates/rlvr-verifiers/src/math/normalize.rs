//! Stage 2 of the math pipeline: rewrite an extracted answer into a canonical LaTeX-ish string.

use std::sync::LazyLock;

use regex::Regex;

/// Words dropped when they follow a number or stand in `\text{}` next to one: units and currency.
pub(super) const UNIT_WORDS: &str = "degrees?|cm|mm|km|m|meters?|metres?|inch(?:es)?|in|feet|foot|ft|yards?|yd|miles?|units?|square|sq|cubic|cents?|dollars?|hours?|hrs?|minutes?|mins?|seconds?|secs?|days?|weeks?|months?|years?|pounds?|lbs?|kg|grams?|g|liters?|litres?|ml|mph|percent|points?|ways|people|students";

/// Stand-in for `\\\\` while spacing commands are removed.
const ROW_BREAK: &str = "\u{1}";

static TEXT_CMD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
        .expect("static regex")
});
static UNIT_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^\s*(?:{UNIT_WORDS})(?:\s+(?:{UNIT_WORDS}))*\s*$"
    ))
    .expect("static regex")
});
static TRAILING_UNIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(.*[\d}}])\s*(?:(?:{UNIT_WORDS})\b\s*)+(?:\^\{{?[23]\}}?)?\s*$"
    ))
    .expect("static regex")
});
static NUMBER_THEN_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(-?\d[\d,]*(?:\.\d+)?)\s+[a-zA-Z]{2,}(?:\s+[a-zA-Z]{2,})*$")
        .expect("static regex")
});
static MATH_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:pi|sqrt|sin|cos|tan|cot|sec|csc|ln|log|exp|inf|infinity|or|and)\b")
        .expect("static regex")
});
static THOUSANDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$").expect("static regex"));
static FRAC_SHORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\frac\s*(?:\{([^{}]*)\}|([0-9a-zA-Z]))\s*(?:\{([^{}]*)\}|([0-9a-zA-Z]))")
        .expect("static regex")
});
static SQRT_SHORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\\sqrt\s*([0-9a-zA-Z])").expect("static regex"));
static MIXED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(-?)(\d+)\s*\\frac\{(\d+)\}\{(\d+)\}$").expect("static regex"));
static SUBSCRIPT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"_\{(\w+)\}").expect("static regex"));
static OR_AND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\s+(?:or|and)\s+|\s*\\text\{\s*(?:or|and)\s*\}\s*").expect("static regex")
});
static DIGIT_GROUPS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d+(?:[ \t\n]+\d+)+").expect("static regex"));
static REPEATING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d*)\.(\d*)\\overline\s*\{(\d+)\}").expect("static regex"));
static CHOICE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\(?([A-Ea-e])\)?$").expect("static regex"));

/// Canonical form of an answer string (no spaces).
///
/// Removes `$`, `\(\)`, `\left`/`\right`, spacing commands, `\displaystyle`, degree signs,
/// percent signs, currency, unit words and a trailing period; maps `\dfrac`/`\tfrac` to
/// `\frac`, unicode minus/times/π/√/∞ to ASCII/LaTeX, `\text{word}` to `word`, shorthand
/// `\frac43` to `\frac{4}{3}`, `1\frac{4}{5}` (a mixed number) to `(1+\frac{4}{5})`, thousands
/// separators away, and a multiple-choice `(C)` to `C`.
pub fn normalize(answer: &str) -> String {
    // Protect LaTeX row breaks (`\\`) from the single-backslash spacing commands below.
    let mut s = answer.trim().replace("\\\\", ROW_BREAK);
    // Delimiters of inline math.
    for (open, close) in [("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")] {
        if s.len() >= open.len() + close.len() && s.starts_with(open) && s.ends_with(close) {
            s = s[open.len()..s.len() - close.len()].trim().to_string();
        }
    }
    for (from, to) in [
        ("\\displaystyle", ""),
        ("\\left.", ""),
        ("\\right.", ""),
        ("\\left", ""),
        ("\\right", ""),
        ("\\bigl", ""),
        ("\\bigr", ""),
        ("\\Bigl", ""),
        ("\\Bigr", ""),
        ("\\!", ""),
        ("\\,", ""),
        ("\\;", " "),
        ("\\:", " "),
        ("\\ ", " "),
        ("~", " "),
        ("\\dfrac", "\\frac"),
        ("\\tfrac", "\\frac"),
        ("\\cfrac", "\\frac"),
        ("^{\\circ}", ""),
        ("^\\circ", ""),
        ("\\circ", ""),
        ("\\degree", ""),
        ("°", ""),
        ("\\%", ""),
        ("%", ""),
        ("\\$", ""),
        ("$", ""),
        ("−", "-"),
        ("–", "-"),
        ("×", "\\times "),
        ("·", "\\cdot "),
        ("÷", "/"),
        ("π", "\\pi "),
        ("√", "\\sqrt"),
        ("∞", "\\infty "),
        ("\\le ", "\\leq "),
        ("\\ge ", "\\geq "),
        ("≤", "\\leq "),
        ("≥", "\\geq "),
        ("{,}", ","),
        ("\\varnothing", "\\emptyset"),
        ("\\mathbb{R}", "(-\\infty,\\infty)"),
        ("\\{\\}", "\\emptyset"),
        ("\\{ \\}", "\\emptyset"),
    ] {
        if s.contains(from) {
            s = s.replace(from, to);
        }
    }
    // `\text{...}`: unit words next to other content go away, other text keeps its content.
    if s.contains('\\') && TEXT_CMD.is_match(&s) {
        let only_text = TEXT_CMD.replace_all(&s, "").trim().is_empty();
        s = TEXT_CMD
            .replace_all(&s, |c: &regex::Captures<'_>| {
                if !only_text && UNIT_TEXT.is_match(&c[1]) {
                    String::new()
                } else {
                    format!(" {} ", c[1].trim())
                }
            })
            .into_owned();
        // A unit's power (`\mbox{ inches}^2`) is left dangling after removal.
        s = s
            .trim()
            .trim_end_matches("^2")
            .trim_end_matches("^{2}")
            .to_string();
    }
    // `1 or -2`, `3 \text{ and } -1`: a list.
    if s.contains("or") || s.contains("and") {
        s = OR_AND.replace_all(&s, ", ").into_owned();
    }
    let s = s.trim();
    // Markdown bold around the answer (`**42**`, or half of it left by the extraction).
    let s = s.trim_start_matches("**").trim_end_matches("**");
    let mut s = s
        .trim()
        .trim_end_matches('.')
        .trim_end_matches("\\")
        .trim()
        .to_string();
    if let Some(c) = TRAILING_UNIT.captures(&s) {
        s = c[1].trim().to_string();
    }
    if NUMBER_THEN_WORDS.is_match(&s) && !MATH_WORDS.is_match(&s) {
        s = s.split_whitespace().next().unwrap_or_default().to_string();
    }
    if s.contains("\\frac") {
        s = FRAC_SHORT
            .replace_all(&s, |c: &regex::Captures<'_>| {
                let a = c.get(1).or(c.get(2)).map_or("", |m| m.as_str());
                let b = c.get(3).or(c.get(4)).map_or("", |m| m.as_str());
                format!("\\frac{{{a}}}{{{b}}}")
            })
            .into_owned();
    }
    if s.contains("\\sqrt") {
        s = SQRT_SHORT.replace_all(&s, "\\sqrt{$1}").into_owned();
    }
    // `1, 234` is a list but `11,\! 111` (LaTeX thin-space-free separators) is a number.
    // `1 234 567` is one number, `12 34` and `1 2 3` are lists.
    if s.contains(char::is_whitespace) && DIGIT_GROUPS.is_match(&s) {
        s = DIGIT_GROUPS
            .replace_all(&s, |c: &regex::Captures<'_>| {
                let groups: Vec<&str> = c[0].split_whitespace().collect();
                let thousands = groups[0].len() <= 3 && groups[1..].iter().all(|g| g.len() == 3);
                if thousands {
                    groups.concat()
                } else {
                    groups.join(", ")
                }
            })
            .into_owned();
    }
    if s.contains("\\overline") {
        s = REPEATING
            .replace_all(&s, |c: &regex::Captures<'_>| {
                repeating_decimal(&c[1], &c[2], &c[3]).unwrap_or_else(|| c[0].to_string())
            })
            .into_owned();
    }
    let spaced_list = s.contains(", ") && !answer.contains("\\!");
    s = squeeze_spaces(&s);
    if !spaced_list && THOUSANDS.is_match(&s) {
        s.retain(|c| c != ',');
    }
    if let Some(c) = MIXED.captures(&s) {
        s = format!("{}({}+\\frac{{{}}}{{{}}})", &c[1], &c[2], &c[3], &c[4]);
    }
    if s.contains("_{") {
        s = SUBSCRIPT.replace_all(&s, "_$1").into_owned();
    }
    if let Some(c) = CHOICE.captures(&s) {
        s = c[1].to_ascii_uppercase();
    }
    s.replace(ROW_BREAK, "\\\\")
}

/// `a.b\overline{c}` as an exact fraction `\frac{N}{D}` (`0.\overline{3}` → `\frac{3}{9}`);
/// `None` when the digits are too many for `u128`.
fn repeating_decimal(int: &str, fixed: &str, rep: &str) -> Option<String> {
    if int.len() + fixed.len() + rep.len() > 30 {
        return None;
    }
    let pow = |n: usize| 10u128.checked_pow(u32::try_from(n).ok()?);
    let a: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let b: u128 = if fixed.is_empty() {
        0
    } else {
        fixed.parse().ok()?
    };
    let c: u128 = rep.parse().ok()?;
    let (k, m) = (pow(fixed.len())?, pow(rep.len())? - 1);
    let num = a
        .checked_mul(k)?
        .checked_add(b)?
        .checked_mul(m)?
        .checked_add(c)?;
    let den = k.checked_mul(m)?;
    Some(format!("\\frac{{{num}}}{{{den}}}"))
}

/// Removes whitespace, except one space between a LaTeX command and a following letter
/// (`\cot x` must not become `\cotx`).
fn squeeze_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending = false;
    for c in s.chars() {
        if c.is_whitespace() {
            pending = true;
            continue;
        }
        if pending && c.is_ascii_alphabetic() && ends_with_command(&out) {
            out.push(' ');
        }
        pending = false;
        out.push(c);
    }
    out
}

fn ends_with_command(s: &str) -> bool {
    let letters = s
        .chars()
        .rev()
        .take_while(char::is_ascii_alphabetic)
        .count();
    letters > 0 && s[..s.len() - letters].ends_with('\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, want: &str) {
        assert_eq!(normalize(input), want, "input: {input:?}");
    }

    #[test]
    fn normalization_table() {
        check("$\\dfrac{1}{2}$", "\\frac{1}{2}");
        check("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\frac{\\pi}{2})");
        check("90^\\circ", "90");
        check("50\\%", "50");
        check("\\$32,\\!348", "32348");
        check("10,\\!080", "10080");
        check("11,\\! 111,\\! 111,\\! 100", "11111111100");
        check("1,234", "1234");
        check("1,-2", "1,-2");
        check("\\text{Evelyn}", "Evelyn");
        check("864 \\mbox{ inches}^2", "864");
        check("15\\mbox{ cm}^2", "15");
        check("5.4 \\text{ cents}", "5.4");
        check("\\frac{270}7\\text{ degrees}", "\\frac{270}{7}");
        check("\\frac43", "\\frac{4}{3}");
        check("\\frac 59", "\\frac{5}{9}");
        check("\\frac9{19}", "\\frac{9}{19}");
        check("11\\sqrt2", "11\\sqrt{2}");
        check("1\\frac{4}{5}", "(1+\\frac{4}{5})");
        check("137 \\frac{1}{2}", "(137+\\frac{1}{2})");
        check("4210_{5}", "4210_5");
        check("\\text{(C)}", "C");
        check("(b)", "B");
        check("1234.", "1234");
        check("−56", "-56");
        check("18 dollars", "18");
        check("42 apples", "42");
        check("2 pi", "2pi");
        check("\\$18.90", "18.90");
        check("\\cot x", "\\cot x");
        check("1 234 567", "1234567");
        check("12 34", "12,34");
        check("1 2 3", "1,2,3");
        check("1{,}000", "1000");
        check("0.\\overline{3}", "\\frac{3}{9}");
        check("0.1\\overline{6}", "\\frac{15}{90}");
        check("1.\\overline{3}", "\\frac{12}{9}");
        check("1 or -2", "1,-2");
        check("3 \\text{ and } -1", "3,-1");
        check("**42**", "42");
        check("\\{\\}", "\\emptyset");
        check("\\mathbb{R}", "(-\\infty,\\infty)");
        check("\\frac{\\cos x}{\\sin x}", "\\frac{\\cos x}{\\sin x}");
        check(
            "\\begin{pmatrix} 1 \\\\ \\frac{2}{3} \\end{pmatrix}",
            "\\begin{pmatrix}1\\\\\\frac{2}{3}\\end{pmatrix}",
        );
    }
}
