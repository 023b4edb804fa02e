//! SMEPO's semantic masking (methods-extra §10; "Hide to Guide: Learning via Semantic
//! Masking", arXiv 2605.25198): an expert trace keeps its plan, and the spans a reward checks
//! (numbers in math, code bodies, answer entities) are replaced by placeholders, so that the
//! trace shown as guidance cannot be copied into a correct answer.
//!
//! - [`mask_math_trace`]: every numeric span becomes `[NUMBER]`: LaTeX fractions and roots
//!   with a digit inside, `a \times 10^{b}` and `aeb`, `a/b`, percentages, decimals, integers
//!   (with thousands separators; a sign only where it is not a binary operator). Structural
//!   numbers (`step 2`, `case 3`, …, case-insensitive) are protected and kept.
//! - [`mask_code_trace`]: the body of every fenced code block becomes `[CODE]`, the language
//!   tag kept.
//! - [`mask_entities`]: each given entity (a search task's answer) becomes `[ENTITY]`, whole
//!   words, case-insensitive (**\[PROPOSED]**: the paper's entity masker is not public).
//! - [`contains_answer`]: whether a masked trace still holds the answer as a whole token, the
//!   check that decides whether a trace may be shown at all.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// What replaces a numeric span.
pub const NUMBER: &str = "[NUMBER]";
/// What replaces a code block's body.
pub const CODE: &str = "[CODE]";
/// What replaces an answer entity.
pub const ENTITY: &str = "[ENTITY]";

/// Words whose following number is structure, not content (the paper's list).
const STRUCTURAL: &str =
    "step|case|part|subcase|problem|example|exercise|lemma|theorem|claim|stage|round";

static PROTECTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)\b(?:{STRUCTURAL})\s*#?\s*\d+")).expect("valid regex")
});

/// The numeric spans, most specific first (an alternation takes the first branch that
/// matches at a position).
static NUMERIC: LazyLock<Regex> = LazyLock::new(|| {
    let digits = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+";
    let braced = r"\{[^{}]*\d[^{}]*\}";
    let spans = [
        format!(r"\\[dt]?frac\s*{braced}\s*{braced}"),
        format!(r"\\sqrt\s*(?:\[[^\]]*\])?\s*{braced}"),
        format!(r"(?:{digits})\s*\\times\s*10\s*\^\s*(?:\{{\s*[-+]?\d+\s*\}}|[-+]?\d+)"),
        format!(r"(?:{digits})[eE][-+]?\d+"),
        format!(r"(?:{digits})\s*/\s*(?:{digits})"),
        format!(r"(?:{digits})\s*\\?%"),
        digits.to_string(),
    ];
    Regex::new(&format!(r"(?P<sign>[-+−])?(?:{})", spans.join("|"))).expect("valid regex")
});

static FENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)```([^\n`]*)\n.*?(?:```|\z)").expect("valid regex"));

/// `text` with every numeric span replaced by [`NUMBER`], structural numbers kept.
pub fn mask_math_trace(text: &str) -> String {
    // Protect structural numbers by cutting the text around them.
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in PROTECTED.find_iter(text) {
        out.push_str(&mask_numbers(&text[last..m.start()]));
        out.push_str(m.as_str());
        last = m.end();
    }
    out.push_str(&mask_numbers(&text[last..]));
    out
}

fn mask_numbers(text: &str) -> String {
    NUMERIC
        .replace_all(text, |c: &Captures| {
            let whole = c.get(0).expect("match");
            match c.name("sign") {
                // A sign right after a value is a binary operator: keep it.
                Some(s) if is_operand_end(&text[..whole.start()]) => {
                    format!("{}{NUMBER}", s.as_str())
                }
                _ => NUMBER.to_string(),
            }
        })
        .into_owned()
}

/// Whether `before` ends in something a binary operator could follow (a value, a closing
/// bracket, or a placeholder), ignoring spaces.
fn is_operand_end(before: &str) -> bool {
    before
        .trim_end()
        .chars()
        .last()
        .is_some_and(|c| c.is_alphanumeric() || matches!(c, ')' | ']' | '}'))
}

/// `text` with the body of every fenced code block replaced by [`CODE`] (an unclosed fence
/// is masked to the end).
pub fn mask_code_trace(text: &str) -> String {
    FENCE
        .replace_all(text, |c: &Captures| format!("```{}\n{CODE}\n```", &c[1]))
        .into_owned()
}

/// `text` with each of `entities` (whole words, case-insensitive) replaced by [`ENTITY`];
/// empty entities are ignored.
pub fn mask_entities(text: &str, entities: &[&str]) -> String {
    let mut out = text.to_string();
    for e in entities.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        let re = Regex::new(&format!(r"(?i)\b{}\b", regex::escape(e))).expect("escaped");
        out = re.replace_all(&out, ENTITY).into_owned();
    }
    out
}

/// Whether `answer` still appears in `masked` as a whole token (not inside a longer number
/// or word); an empty answer never does.
pub fn contains_answer(masked: &str, answer: &str) -> bool {
    let answer = answer.trim();
    if answer.is_empty() {
        return false;
    }
    let word = |c: char| c.is_alphanumeric() || c == '.';
    masked.match_indices(answer).any(|(i, _)| {
        let before = masked[..i].chars().last();
        let after = masked[i + answer.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(|c| word(c) && c != '.')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GSM8K's annotated calculations become blanks with their operators kept; the final
    /// `#### 72` too.
    #[test]
    fn gsm8k_calculations_lose_their_values() {
        let trace = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n\
                     She sold 48+24 = <<48+24=72>>72 clips altogether.\n#### 72";
        assert_eq!(
            mask_math_trace(trace),
            "Natalia sold [NUMBER] = <<[NUMBER]=[NUMBER]>>[NUMBER] clips in May.\n\
             She sold [NUMBER]+[NUMBER] = <<[NUMBER]+[NUMBER]=[NUMBER]>>[NUMBER] clips \
             altogether.\n#### [NUMBER]"
        );
    }

    #[test]
    fn every_numeric_form_is_one_span_and_structure_stays() {
        let cases = [
            (r"\frac{3}{4} of it", "[NUMBER] of it"),
            (r"\dfrac{x+1}{2}", "[NUMBER]"),
            (r"\frac{a}{b} stays", r"\frac{a}{b} stays"),
            (r"\sqrt[3]{27} = 3", "[NUMBER] = [NUMBER]"),
            (r"6.02 \times 10^{23} atoms", "[NUMBER] atoms"),
            ("1.5e-3 s", "[NUMBER] s"),
            ("50% off", "[NUMBER] off"),
            (r"12.5\% rate", "[NUMBER] rate"),
            ("$1,234.50 paid", "$[NUMBER] paid"),
            ("x = -7", "x = [NUMBER]"),
            ("5 - 3 = 2", "[NUMBER] - [NUMBER] = [NUMBER]"),
            ("5-3", "[NUMBER]-[NUMBER]"),
            ("(2)-1", "([NUMBER])-[NUMBER]"),
            (
                "Step 2: add 5. CASE 3 gives 9",
                "Step 2: add [NUMBER]. CASE 3 gives [NUMBER]",
            ),
            ("no numbers here", "no numbers here"),
        ];
        for (text, want) in cases {
            assert_eq!(mask_math_trace(text), want, "{text}");
        }
    }

    #[test]
    fn code_bodies_are_masked_with_their_language() {
        let trace = "Plan: loop over the list.\n```python\ndef f(x):\n    return x\n```\n\
                     Then test.\n```\nprint(1)\n```\nAnd ```rust\nfn open(";
        assert_eq!(
            mask_code_trace(trace),
            "Plan: loop over the list.\n```python\n[CODE]\n```\nThen test.\n```\n[CODE]\n```\n\
             And ```rust\n[CODE]\n```"
        );
    }

    #[test]
    fn entities_are_masked_as_whole_words() {
        assert_eq!(
            mask_entities("Paris is in France; Parisian food. PARIS!", &["Paris", ""]),
            "[ENTITY] is in France; Parisian food. [ENTITY]!"
        );
    }

    #[test]
    fn the_answer_check_sees_whole_tokens_only() {
        assert!(contains_answer("so it is 72.", "72"));
        assert!(contains_answer("72", "72"));
        assert!(!contains_answer("so it is 172 or 723 or 7.2", "72"));
        assert!(!contains_answer("Step 3: [NUMBER]", "7"));
        assert!(contains_answer("Step 3: [NUMBER]", "3"));
        assert!(!contains_answer("anything", " "));
    }
}
