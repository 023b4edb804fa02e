//! Stage 1 of the math pipeline: find the final answer in a response or a gold solution.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::bare;

/// What to take when a text has no explicit final-answer marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// A bare answer (see [`bare::bare_answer`]), else the last number in the text (the common
    /// lenient choice for GSM8K-style tasks).
    #[default]
    LastNumber,
    /// A bare answer (see [`bare::bare_answer`]), else nothing: prose without a final answer it ends
    /// on is unparseable.
    Bare,
    /// Nothing: a response without `\boxed{}`, `####` or "the answer is" is unparseable.
    None,
}

/// Where an extracted answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The last `\boxed{…}` or `\fbox{…}`.
    Boxed,
    /// GSM8K's `#### n`.
    Hashes,
    /// "The answer is …" / "Answer: …".
    AnswerIs,
    /// The whole response, or the math it ends on, read as one answer ([`bare::bare_answer`]).
    Bare,
    /// The configured fallback (last number).
    LastNumber,
}

static HASHES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"####[ \t]*([^\n]*)").expect("static regex"));
/// The marker alone, so that several on one line are several matches (a capture of the rest of
/// the line would swallow the later ones and make the first win).
static ANSWER_IS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:final answer|the answer|answer)\s*(?:is\s*:?|:)\s*(?:\*\*)?\s*")
        .expect("static regex")
});
static SENTENCE_END: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\.(?:\s|\*|$)").expect("static regex"));
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?|-?\.\d+").expect("static regex")
});

/// The final answer of `text` and where it came from.
///
/// Order: the last `\boxed{}`/`\fbox{}` (nested braces), then the last `#### …` line, then the
/// last "the answer is …" (up to the end of its sentence or its first `$…$`), then `fallback`:
/// a bare answer ([`bare::bare_answer`]) and, for [`Fallback::LastNumber`], the last number.
pub fn extract(text: &str, fallback: Fallback) -> Option<(String, Source)> {
    if let Some(b) = boxed_answer(text) {
        return Some((b, Source::Boxed));
    }
    if let Some(c) = HASHES.captures_iter(text).last() {
        let s = c[1].trim();
        if !s.is_empty() {
            return Some((s.to_string(), Source::Hashes));
        }
    }
    if let Some(m) = ANSWER_IS.find_iter(text).last() {
        let rest = text[m.end()..].lines().next().unwrap_or_default().trim();
        if let Some(s) = answer_sentence(rest) {
            return Some((s, Source::AnswerIs));
        }
    }
    if fallback != Fallback::None
        && let Some(b) = bare::bare_answer(text)
    {
        return Some((b, Source::Bare));
    }
    match fallback {
        Fallback::LastNumber => NUMBER
            .find_iter(text)
            .last()
            .map(|m| (m.as_str().to_string(), Source::LastNumber)),
        Fallback::Bare | Fallback::None => None,
    }
}

/// The last `\boxed{}` answer, or the list of boxes it ends when boxes are chained only by
/// `,`/`or`/`and` (`$\boxed{3}$ or $\boxed{4}$` → `3, 4`: a hedge is several answers, which match
/// only a list gold; `\boxed{3} but actually \boxed{4}` is a correction and reads `4`).
fn boxed_answer(text: &str) -> Option<String> {
    let mut rest = text;
    let mut parts = Vec::new();
    while parts.len() < 64 {
        let Some((before, body, end)) = last_boxed_at(rest) else {
            break;
        };
        // An earlier box joins the list only if nothing but a separator follows it.
        if !parts.is_empty() && end != rest.len() {
            break;
        }
        parts.push(body);
        let mut prefix = before.trim_end().trim_end_matches('$').trim_end();
        let mut joined = false;
        for sep in [
            ",",
            " or",
            " and",
            "\\text{ or }",
            "\\text{ and }",
            "\\quad",
        ] {
            if let Some(p) = prefix.strip_suffix(sep) {
                prefix = p.trim_end().trim_end_matches('$').trim_end();
                joined = true;
                break;
            }
        }
        if !joined {
            break;
        }
        rest = prefix;
    }
    if parts.len() <= 1 {
        return last_boxed(text).map(str::to_string);
    }
    parts.reverse();
    Some(parts.join(", "))
}

/// The text before the last `\boxed`/`\fbox` command, that box's braced body, and the byte
/// offset just past its closing brace.
fn last_boxed_at(text: &str) -> Option<(&str, &str, usize)> {
    let start = [text.rfind("\\boxed"), text.rfind("\\fbox")]
        .into_iter()
        .flatten()
        .max()?;
    let body = last_boxed(&text[start..])?;
    let offset = body.as_ptr() as usize - text.as_ptr() as usize;
    let end = offset + body.len() + 1;
    text.get(end - 1..end)
        .filter(|c| *c == "}")
        .map(|_| (&text[..start], &text[offset..end - 1], end))
}

/// The content of the last `\boxed{…}` or `\fbox{…}` in `text`, with nested and escaped braces
/// handled; `\boxed 5` (no braces) yields the next word.
pub fn last_boxed(text: &str) -> Option<&str> {
    let start = [text.rfind("\\boxed"), text.rfind("\\fbox")]
        .into_iter()
        .flatten()
        .max()?;
    let after = &text[start..];
    let after = after
        .strip_prefix("\\boxed")
        .or_else(|| after.strip_prefix("\\fbox"))?;
    let trimmed = after.trim_start();
    if let Some(body) = trimmed.strip_prefix('{') {
        let bytes = body.as_bytes();
        let (mut depth, mut i) = (1usize, 0usize);
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 1,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(&body[..i]);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    } else {
        let word = trimmed
            .split(|c: char| c.is_whitespace() || c == '$')
            .next()?;
        (!word.is_empty() && after.starts_with(' ')).then_some(word)
    }
}

/// The answer part of the text following "the answer is": the first `$…$` if the sentence has
/// one, else the text up to the end of the sentence.
fn answer_sentence(rest: &str) -> Option<String> {
    let sentence = match SENTENCE_END.find(rest) {
        Some(m) => &rest[..m.start()],
        None => rest,
    };
    let s = if let Some(open) = find_dollar(sentence, 0) {
        let mut start = open + 1;
        if sentence[start..].starts_with('$') {
            start += 1;
        }
        match find_dollar(sentence, start) {
            Some(close) => &sentence[start..close],
            None => &sentence[start..],
        }
    } else {
        sentence
    };
    let s = s.trim().trim_end_matches(['.', '*']).trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Byte offset of the first `$` at or after `from` that is not escaped as `\$`.
fn find_dollar(s: &str, from: usize) -> Option<usize> {
    let bytes = s.as_bytes();
    (from..bytes.len()).find(|&k| bytes[k] == b'$' && (k == 0 || bytes[k - 1] != b'\\'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, want: Option<(&str, Source)>) {
        let got = extract(text, Fallback::LastNumber);
        assert_eq!(
            got.as_ref().map(|(s, src)| (s.as_str(), *src)),
            want,
            "text: {text:?}"
        );
    }

    #[test]
    fn extraction_table() {
        use Source::*;
        check(r"so \boxed{\frac{1}{2}}.", Some((r"\frac{1}{2}", Boxed)));
        check(r"\boxed{1} then \boxed{\{1,2\}}", Some((r"\{1,2\}", Boxed)));
        check(r"$\boxed{3}$ or $\boxed{4}$.", Some(("3, 4", Boxed)));
        check(
            r"\boxed{3}, \boxed{4} and \boxed{5}",
            Some(("3, 4, 5", Boxed)),
        );
        check(r"\boxed{3} but actually \boxed{4}", Some(("4", Boxed)));
        check(r"\fbox{x^{2}}", Some(("x^{2}", Boxed)));
        check(r"\boxed 5 done", Some(("5", Boxed)));
        check("work\n#### 1,234\n", Some(("1,234", Hashes)));
        check("#### 3\n#### 72", Some(("72", Hashes)));
        check("The answer is 1234.", Some(("1234", AnswerIs)));
        check(
            "So the final answer is $\\frac{3}{4}$. Done",
            Some((r"\frac{3}{4}", AnswerIs)),
        );
        check("Answer: 3.5.", Some(("3.5", AnswerIs)));
        check("The answer is $\\$18.90$.", Some(("\\$18.90", AnswerIs)));
        check("the answer is **-56**", Some(("-56", AnswerIs)));
        // The last marker wins on one line as across lines (a correction, as with boxes); each
        // sentence claims one answer, so a hedge over sentences is read as its last claim.
        check(
            "The answer is 13. The answer is 12.",
            Some(("12", AnswerIs)),
        );
        check("the answer is 13 the answer is 12", Some(("12", AnswerIs)));
        check(
            "The answer is 13.\nThe answer is 12.",
            Some(("12", AnswerIs)),
        );
        check("I got 12 apples and then 15 more", Some(("15", LastNumber)));
        check("I got 12 apples and then 15", Some(("15", Bare)));
        check(r"\frac{1}{2}", Some((r"\frac{1}{2}", Bare)));
        check("no digits here", None);
        check(r"\boxed{unclosed", None);
    }

    #[test]
    fn fallback_none_gives_nothing() {
        assert_eq!(extract("it is 12", Fallback::None), None);
        assert_eq!(extract("10^3", Fallback::None), None);
        assert_eq!(
            extract("10^3", Fallback::Bare),
            Some(("10^3".to_string(), Source::Bare))
        );
        assert_eq!(extract("it is 12 or so", Fallback::Bare), None);
    }
}
