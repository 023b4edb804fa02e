//! Expression trees of LaTeX or plain-text math (`\frac{a}{b}`, `2\sqrt{3}`, `x^2+1`, `pi/2`),
//! with exact rational evaluation and complex floating-point evaluation.

use std::collections::{BTreeMap, BTreeSet};

use super::num::{Complex, Rational};
use super::token::{FUNC_WORDS, Tok, tokenize};

/// Maximum nesting depth the parser accepts (a parser bomb of brackets becomes a parse error).
const MAX_DEPTH: usize = 64;
/// Maximum number of tokens in one expression.
pub(super) const MAX_TOKENS: usize = 2_000;

/// A function of one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// Square root (`\sqrt{}`); `\sqrt[n]{}` becomes a power.
    Sqrt,
    /// `\sin`.
    Sin,
    /// `\cos`.
    Cos,
    /// `\tan`.
    Tan,
    /// `\cot`.
    Cot,
    /// `\sec`.
    Sec,
    /// `\csc`.
    Csc,
    /// Natural logarithm (`\ln`, and `\log` as in most competition answers' identities).
    Ln,
    /// `\exp`.
    Exp,
    /// `|x|`.
    Abs,
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// An exact number written without a decimal point.
    Num(Rational),
    /// An exact number written with a decimal point or exponent (`0.5`, `1e-3`): compared with
    /// tolerance against inexact values, not only exactly.
    Decimal(Rational),
    /// A number too large for [`Rational`].
    Float(f64),
    /// A variable (`x`, `x_1`, `\alpha`).
    Var(String),
    /// π.
    Pi,
    /// Euler's number.
    E,
    /// The imaginary unit.
    I,
    /// ∞ (only meaningful as an interval end).
    Inf,
    /// Sum.
    Add(Vec<Expr>),
    /// Product.
    Mul(Vec<Expr>),
    /// Negation.
    Neg(Box<Expr>),
    /// Quotient.
    Div(Box<Expr>, Box<Expr>),
    /// Power.
    Pow(Box<Expr>, Box<Expr>),
    /// Function application.
    Func(Func, Box<Expr>),
    /// Factorial.
    Fact(Box<Expr>),
}

/// Parses one expression; `Err` with a reason for anything outside the grammar.
pub fn parse(s: &str) -> Result<Expr, String> {
    let toks = tokenize(s)?;
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
    };
    let e = p.expr()?;
    if p.pos != p.toks.len() {
        return Err(format!("unexpected {:?}", p.toks[p.pos]));
    }
    Ok(e)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn eat_op(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Op(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err("expression nested too deeply".into())
        } else {
            Ok(())
        }
    }

    fn expr(&mut self) -> Result<Expr, String> {
        self.enter()?;
        let mut terms = vec![self.term()?];
        loop {
            if self.eat_op('+') {
                terms.push(self.term()?);
            } else if self.eat_op('-') {
                terms.push(Expr::Neg(Box::new(self.term()?)));
            } else {
                break;
            }
        }
        self.depth -= 1;
        Ok(if terms.len() == 1 {
            terms.pop().expect("one term")
        } else {
            Expr::Add(terms)
        })
    }

    fn term(&mut self) -> Result<Expr, String> {
        let mut acc = self.unary()?;
        loop {
            if self.eat_op('*') || self.eat_cmd(&["cdot", "times"]) {
                acc = mul(acc, self.unary()?);
            } else if self.eat_op('/') || self.eat_cmd(&["div"]) {
                acc = Expr::Div(Box::new(acc), Box::new(self.unary()?));
            } else if self.starts_primary() {
                acc = mul(acc, self.power()?);
            } else {
                return Ok(acc);
            }
        }
    }

    fn eat_cmd(&mut self, names: &[&str]) -> bool {
        if let Some(Tok::Cmd(c)) = self.peek()
            && names.contains(&c.as_str())
        {
            self.pos += 1;
            return true;
        }
        false
    }

    fn starts_primary(&self) -> bool {
        match self.peek() {
            Some(Tok::Num(_) | Tok::Ident(_)) => true,
            Some(Tok::Op(c)) => matches!(c, '(' | '{' | '['),
            Some(Tok::Cmd(c)) => {
                !matches!(c.as_str(), "cdot" | "times" | "div" | "pm" | "cup" | "in")
            }
            None => false,
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        self.enter()?;
        let e = if self.eat_op('-') {
            Expr::Neg(Box::new(self.unary()?))
        } else if self.eat_op('+') {
            self.unary()?
        } else {
            self.power()?
        };
        self.depth -= 1;
        Ok(e)
    }

    fn power(&mut self) -> Result<Expr, String> {
        let base = self.postfix()?;
        if self.eat_op('^') {
            self.enter()?;
            let exp = if self.eat_op('-') {
                Expr::Neg(Box::new(self.power()?))
            } else {
                self.power()?
            };
            self.depth -= 1;
            return Ok(Expr::Pow(Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }

    fn postfix(&mut self) -> Result<Expr, String> {
        let mut e = self.primary()?;
        while self.eat_op('!') {
            e = Expr::Fact(Box::new(e));
        }
        Ok(e)
    }

    /// A braced group or a single token, as LaTeX arguments are (`\frac43`).
    fn argument(&mut self) -> Result<Expr, String> {
        if self.eat_op('{') {
            let e = self.expr()?;
            return if self.eat_op('}') {
                Ok(e)
            } else {
                Err("missing `}`".into())
            };
        }
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Num(n)) if n.len() > 1 && !n.contains('.') => {
                // `\frac43`: a LaTeX argument is one character.
                self.toks[self.pos] = Tok::Num(n[1..].to_string());
                number(&n[..1])
            }
            _ => self.postfix(),
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        self.enter()?;
        let tok = self.peek().cloned().ok_or("unexpected end of expression")?;
        self.pos += 1;
        let e = match tok {
            Tok::Num(n) => number(&n)?,
            Tok::Ident(v) => {
                let mut name = v;
                if self.eat_op('_') {
                    match self.peek().cloned() {
                        Some(Tok::Num(s) | Tok::Ident(s)) => {
                            self.pos += 1;
                            name = format!("{name}_{s}");
                        }
                        _ => return Err("bad subscript".into()),
                    }
                }
                match name.as_str() {
                    "i" => Expr::I,
                    "e" => Expr::E,
                    _ => Expr::Var(name),
                }
            }
            Tok::Op(open @ ('(' | '{' | '[')) => {
                let close = match open {
                    '(' => ')',
                    '{' => '}',
                    _ => ']',
                };
                let e = self.expr()?;
                if !self.eat_op(close) {
                    return Err(format!("missing `{close}`"));
                }
                e
            }
            Tok::Op('|') => {
                let e = self.expr()?;
                if !self.eat_op('|') {
                    return Err("missing `|`".into());
                }
                Expr::Func(Func::Abs, Box::new(e))
            }
            Tok::Cmd(c) => self.command(&c)?,
            Tok::Op(c) => return Err(format!("unexpected `{c}`")),
        };
        self.depth -= 1;
        Ok(e)
    }

    fn command(&mut self, c: &str) -> Result<Expr, String> {
        Ok(match c {
            "frac" => {
                let a = self.argument()?;
                let b = self.argument()?;
                Expr::Div(Box::new(a), Box::new(b))
            }
            "sqrt" => {
                if self.eat_op('[') {
                    let n = self.expr()?;
                    if !self.eat_op(']') {
                        return Err("missing `]`".into());
                    }
                    let a = self.argument()?;
                    let one = Expr::Num(Rational::int(1));
                    Expr::Pow(Box::new(a), Box::new(Expr::Div(Box::new(one), Box::new(n))))
                } else {
                    Expr::Func(Func::Sqrt, Box::new(self.argument()?))
                }
            }
            "pi" => Expr::Pi,
            "infty" | "inf" | "infinity" => Expr::Inf,
            "mathrm" | "text" | "mathbf" | "operatorname" => self.argument()?,
            _ => {
                if let Some((_, f)) = FUNC_WORDS.iter().find(|(w, _)| *w == c) {
                    // `\sin^2 x` is `(\sin x)^2`.
                    let power = if self.eat_op('^') {
                        Some(self.postfix()?)
                    } else {
                        None
                    };
                    let arg = if matches!(self.peek(), Some(Tok::Op('(' | '{'))) {
                        self.primary()?
                    } else {
                        self.power()?
                    };
                    let e = Expr::Func(*f, Box::new(arg));
                    match power {
                        Some(p) => Expr::Pow(Box::new(e), Box::new(p)),
                        None => e,
                    }
                } else if c.chars().all(|ch| ch.is_ascii_lowercase()) && c.len() <= 8 {
                    // Greek letters and other named symbols act as variables.
                    Expr::Var(format!("\\{c}"))
                } else {
                    return Err(format!("unsupported command \\{c}"));
                }
            }
        })
    }
}

fn number(n: &str) -> Result<Expr, String> {
    let decimal = n.contains(['.', 'e', 'E']);
    match Rational::parse_decimal(n) {
        Some(r) if decimal => Ok(Expr::Decimal(r)),
        Some(r) => Ok(Expr::Num(r)),
        None => n
            .parse::<f64>()
            .map(Expr::Float)
            .map_err(|_| format!("bad number {n:?}")),
    }
}

fn mul(a: Expr, b: Expr) -> Expr {
    match a {
        Expr::Mul(mut v) => {
            v.push(b);
            Expr::Mul(v)
        }
        a => Expr::Mul(vec![a, b]),
    }
}

impl Expr {
    /// The variables the expression mentions.
    pub fn vars(&self, out: &mut BTreeSet<String>) {
        match self {
            Expr::Var(v) => {
                out.insert(v.clone());
            }
            Expr::Add(v) | Expr::Mul(v) => v.iter().for_each(|e| e.vars(out)),
            Expr::Neg(a) | Expr::Func(_, a) | Expr::Fact(a) => a.vars(out),
            Expr::Div(a, b) | Expr::Pow(a, b) => {
                a.vars(out);
                b.vars(out);
            }
            _ => {}
        }
    }

    /// Whether a decimal literal (or a float) occurs in the expression.
    pub fn has_decimal(&self) -> bool {
        match self {
            Expr::Decimal(_) | Expr::Float(_) => true,
            Expr::Add(v) | Expr::Mul(v) => v.iter().any(Expr::has_decimal),
            Expr::Neg(a) | Expr::Func(_, a) | Expr::Fact(a) => a.has_decimal(),
            Expr::Div(a, b) | Expr::Pow(a, b) => a.has_decimal() || b.has_decimal(),
            _ => false,
        }
    }

    /// Whether the expression is `±∞`.
    pub fn is_infinite(&self) -> bool {
        match self {
            Expr::Inf => true,
            Expr::Neg(a) => a.is_infinite(),
            _ => false,
        }
    }

    /// The exact rational value, when the expression is built from numbers with `+ - * /` and
    /// integer powers only.
    pub fn exact(&self) -> Option<Rational> {
        match self {
            Expr::Num(r) | Expr::Decimal(r) => Some(*r),
            Expr::Add(v) => v
                .iter()
                .try_fold(Rational::int(0), |acc, e| acc.checked_add(e.exact()?)),
            Expr::Mul(v) => v
                .iter()
                .try_fold(Rational::int(1), |acc, e| acc.checked_mul(e.exact()?)),
            Expr::Neg(a) => a.exact()?.checked_mul(Rational::int(-1)),
            Expr::Div(a, b) => a.exact()?.checked_div(b.exact()?),
            Expr::Pow(a, b) => {
                let e = b.exact()?;
                if e.den != 1 {
                    return None;
                }
                a.exact()?.powi(e.num)
            }
            Expr::Fact(a) => {
                let n = a.exact()?;
                if n.den != 1 || !(0..=33).contains(&n.num) {
                    return None;
                }
                Some(Rational::int((1..=n.num).product()))
            }
            _ => None,
        }
    }

    /// The complex value with variables bound by `env` (unbound variables are NaN).
    pub fn eval(&self, env: &BTreeMap<String, Complex>) -> Complex {
        let nan = Complex::real(f64::NAN);
        match self {
            Expr::Num(r) | Expr::Decimal(r) => Complex::real(r.to_f64()),
            Expr::Float(f) => Complex::real(*f),
            Expr::Var(v) => env.get(v).copied().unwrap_or(nan),
            Expr::Pi => Complex::real(std::f64::consts::PI),
            Expr::E => Complex::real(std::f64::consts::E),
            Expr::I => Complex { re: 0.0, im: 1.0 },
            Expr::Inf => Complex::real(f64::INFINITY),
            Expr::Add(v) => v
                .iter()
                .fold(Complex::real(0.0), |acc, e| acc + e.eval(env)),
            Expr::Mul(v) => v
                .iter()
                .fold(Complex::real(1.0), |acc, e| acc * e.eval(env)),
            Expr::Neg(a) => -a.eval(env),
            Expr::Div(a, b) => a.eval(env) / b.eval(env),
            Expr::Pow(a, b) => a.eval(env).pow(b.eval(env)),
            Expr::Fact(a) => {
                let n = a.eval(env);
                if n.im != 0.0 || n.re.fract() != 0.0 || !(0.0..=170.0).contains(&n.re) {
                    return nan;
                }
                Complex::real((1..=n.re as u32).map(f64::from).product())
            }
            Expr::Func(f, a) => {
                let x = a.eval(env);
                match f {
                    Func::Sqrt => x.sqrt(),
                    Func::Sin => x.sin(),
                    Func::Cos => x.cos(),
                    Func::Tan => x.sin() / x.cos(),
                    Func::Cot => x.cos() / x.sin(),
                    Func::Sec => Complex::real(1.0) / x.cos(),
                    Func::Csc => Complex::real(1.0) / x.sin(),
                    Func::Ln => x.ln(),
                    Func::Exp => x.exp(),
                    Func::Abs => Complex::real(x.abs()),
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "expr/tests.rs"]
mod tests;
