//! Tokens of LaTeX or plain-text math: numbers, one-letter variables, commands, operators.

use super::expr::{Func, MAX_TOKENS};

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    /// A number literal.
    Num(String),
    /// A one-letter variable.
    Ident(String),
    /// A command or known word (`frac`, `pi`, `sin`).
    Cmd(String),
    /// An operator or bracket.
    Op(char),
}

/// Function names recognized with or without a backslash.
pub(super) const FUNC_WORDS: [(&str, Func); 10] = [
    ("sqrt", Func::Sqrt),
    ("sin", Func::Sin),
    ("cos", Func::Cos),
    ("tan", Func::Tan),
    ("cot", Func::Cot),
    ("sec", Func::Sec),
    ("csc", Func::Csc),
    ("ln", Func::Ln),
    ("log", Func::Ln),
    ("exp", Func::Exp),
];

/// Commands that start with a function name but are not one (`\sinh` is not `\sin h`).
const KNOWN: [&str; 6] = ["sinh", "cosh", "tanh", "coth", "pitchfork", "sech"];

/// Splits an expression into tokens; `Err` for a character outside the grammar or too many tokens.
pub(super) fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if toks.len() > MAX_TOKENS {
            return Err("expression too long".into());
        }
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            // Scientific notation: `6.72e-5`, `1E3`.
            if i < chars.len() && matches!(chars[i], 'e' | 'E') {
                let sign = usize::from(matches!(chars.get(i + 1), Some('+' | '-')));
                if chars.get(i + 1 + sign).is_some_and(char::is_ascii_digit) {
                    i += 1 + sign;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            toks.push(Tok::Num(chars[start..i].iter().collect()));
        } else if c == '\\' {
            i += 1;
            let start = i;
            while i < chars.len() && chars[i].is_ascii_alphabetic() {
                i += 1;
            }
            if i == start {
                // `\{`, `\}`, `\,` and the like.
                match chars.get(i) {
                    Some('{') => toks.push(Tok::Op('(')),
                    Some('}') => toks.push(Tok::Op(')')),
                    Some(_) => {}
                    None => return Err("dangling backslash".into()),
                }
                i += 1;
            } else {
                let name: String = chars[start..i].iter().collect();
                // `\cotx` (a missing space) is `\cot x`.
                let split = FUNC_WORDS.iter().map(|(w, _)| *w).chain(["pi"]).find(|w| {
                    name.len() > w.len() && name.starts_with(w) && !KNOWN.contains(&name.as_str())
                });
                match split {
                    Some(w) => {
                        toks.push(Tok::Cmd(w.to_string()));
                        toks.extend(name[w.len()..].chars().map(|c| Tok::Ident(c.to_string())));
                    }
                    None => toks.push(Tok::Cmd(name)),
                }
            }
        } else if c.is_ascii_alphabetic() {
            // A whole letter run that is a known word (`pi`, `sqrt`, `sin`) is a command; anything
            // else is a product of one-letter variables (`xy` = x*y).
            let mut end = i;
            while end < chars.len() && chars[end].is_ascii_alphabetic() {
                end += 1;
            }
            let run: String = chars[i..end]
                .iter()
                .collect::<String>()
                .to_ascii_lowercase();
            let known = ["infinity", "inf", "pi"].contains(&run.as_str())
                || FUNC_WORDS.iter().any(|(w, _)| *w == run);
            if known {
                toks.push(Tok::Cmd(run));
                i = end;
            } else {
                toks.push(Tok::Ident(c.to_string()));
                i += 1;
            }
        } else if "+-*/^()[]{},=!_|".contains(c) {
            toks.push(Tok::Op(c));
            i += 1;
        } else {
            return Err(format!("unexpected character {c:?}"));
        }
    }
    Ok(toks)
}
