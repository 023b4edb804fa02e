//! The calculator tool's arithmetic: integer expressions with `+ - * /`, unary minus and
//! parentheses, evaluated exactly (`i64`, checked), by recursive descent.
//!
//! Grammar: `expr = term (('+' | '-') term)*`, `term = unary (('*' | '/') unary)*`,
//! `unary = '-' unary | atom`, `atom = integer | '(' expr ')'`; spaces are ignored. Division
//! must be exact: the tool answers about integers only, so `7/2` is an error, not `3`.

use std::fmt;

/// Why an expression has no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExprError {
    /// A character or token that does not fit the grammar, at this byte offset.
    Syntax(usize, String),
    /// Division by zero.
    DivisionByZero,
    /// `a / b` with a remainder.
    InexactDivision(i64, i64),
    /// A result outside `i64`.
    Overflow,
    /// More than [`MAX_LEN`] characters.
    TooLong(usize),
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(at, what) => write!(f, "syntax error at {at}: {what}"),
            Self::DivisionByZero => write!(f, "division by zero"),
            Self::InexactDivision(a, b) => write!(f, "{a}/{b} is not an integer"),
            Self::Overflow => write!(f, "overflow"),
            Self::TooLong(n) => write!(f, "expression of {n} characters (at most {MAX_LEN})"),
        }
    }
}

/// The longest expression the tool accepts (a bound on recursion depth too).
pub const MAX_LEN: usize = 256;

/// The value of `text`.
///
/// # Errors
/// [`ExprError`] for a malformed expression or an arithmetic failure.
pub fn eval(text: &str) -> Result<i64, ExprError> {
    if text.len() > MAX_LEN {
        return Err(ExprError::TooLong(text.len()));
    }
    let mut p = Parser {
        bytes: text.as_bytes(),
        at: 0,
    };
    let v = p.expr()?;
    p.skip_spaces();
    match p.peek() {
        None => Ok(v),
        Some(c) => Err(p.unexpected(c)),
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_spaces(&mut self) {
        while self.bytes.get(self.at) == Some(&b' ') {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_spaces();
        self.bytes.get(self.at).copied()
    }

    fn unexpected(&self, c: u8) -> ExprError {
        ExprError::Syntax(self.at, format!("unexpected {:?}", char::from(c)))
    }

    fn expr(&mut self) -> Result<i64, ExprError> {
        let mut v = self.term()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.at += 1;
            let r = self.term()?;
            v = if op == b'+' {
                v.checked_add(r)
            } else {
                v.checked_sub(r)
            }
            .ok_or(ExprError::Overflow)?;
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<i64, ExprError> {
        let mut v = self.unary()?;
        while let Some(op @ (b'*' | b'/')) = self.peek() {
            self.at += 1;
            let r = self.unary()?;
            v = if op == b'*' {
                v.checked_mul(r).ok_or(ExprError::Overflow)?
            } else if r == 0 {
                return Err(ExprError::DivisionByZero);
            } else if v % r != 0 {
                return Err(ExprError::InexactDivision(v, r));
            } else {
                v.checked_div(r).ok_or(ExprError::Overflow)?
            };
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<i64, ExprError> {
        if self.peek() == Some(b'-') {
            self.at += 1;
            return self.unary()?.checked_neg().ok_or(ExprError::Overflow);
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<i64, ExprError> {
        match self.peek() {
            Some(b'(') => {
                self.at += 1;
                let v = self.expr()?;
                match self.peek() {
                    Some(b')') => {
                        self.at += 1;
                        Ok(v)
                    }
                    Some(c) => Err(self.unexpected(c)),
                    None => Err(ExprError::Syntax(self.at, "missing ')'".into())),
                }
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.at;
                while self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
                    self.at += 1;
                }
                let digits = std::str::from_utf8(&self.bytes[start..self.at]).expect("ASCII");
                digits.parse().map_err(|_| ExprError::Overflow)
            }
            Some(c) => Err(self.unexpected(c)),
            None => Err(ExprError::Syntax(self.at, "unexpected end".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_parentheses_and_unary_minus_by_hand() {
        assert_eq!(eval("2+3*4"), Ok(14));
        assert_eq!(eval("(2+3)*4"), Ok(20));
        assert_eq!(eval(" 10 - 4 - 3 "), Ok(3)); // left-associative
        assert_eq!(eval("-3*-(2+1)"), Ok(9));
        assert_eq!(eval("84/4/3"), Ok(7));
    }

    #[test]
    fn failures_are_errors_not_values() {
        assert_eq!(eval("7/2"), Err(ExprError::InexactDivision(7, 2)));
        assert_eq!(eval("1/0"), Err(ExprError::DivisionByZero));
        assert_eq!(eval("9223372036854775807+1"), Err(ExprError::Overflow));
        assert!(matches!(eval("2+"), Err(ExprError::Syntax(..))));
        assert!(matches!(eval("(1"), Err(ExprError::Syntax(..))));
        assert!(matches!(eval("1 2"), Err(ExprError::Syntax(2, _))));
        assert!(matches!(eval("2^3"), Err(ExprError::Syntax(1, _))));
        assert!(matches!(eval(""), Err(ExprError::Syntax(..))));
        let deep = "(".repeat(300);
        assert_eq!(eval(&deep), Err(ExprError::TooLong(300)));
    }
}
