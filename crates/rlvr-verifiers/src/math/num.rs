//! Exact rationals (checked `i128`) and complex floats, the two number types of the math checker.

use std::ops::{Add, Div, Mul, Neg, Sub};

/// An exact rational `num / den` in lowest terms with `den > 0`; arithmetic returns `None` on
/// overflow (the caller then falls back to floating point).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rational {
    /// Numerator.
    pub num: i128,
    /// Denominator, always positive.
    pub den: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rational {
    /// `num / den` reduced; `None` when `den == 0`.
    pub fn new(num: i128, den: i128) -> Option<Self> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        let sign = if den < 0 { -1 } else { 1 };
        Some(Rational {
            num: sign * num / g,
            den: sign * den / g,
        })
    }

    /// The integer `n`.
    pub fn int(n: i128) -> Self {
        Rational { num: n, den: 1 }
    }

    /// Parses `"123"`, `"-1.25"`, `".5"`, `"1e-3"` exactly; `None` for anything else or on
    /// overflow.
    pub fn parse_decimal(s: &str) -> Option<Self> {
        let (mantissa, exp) = match s.find(['e', 'E']) {
            Some(k) => (&s[..k], s[k + 1..].parse::<i32>().ok()?),
            None => (s, 0),
        };
        let (neg, digits) = match mantissa.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
        };
        let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
        if int_part.is_empty() && frac_part.is_empty()
            || !int_part
                .bytes()
                .chain(frac_part.bytes())
                .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let mut num: i128 = 0;
        for b in int_part.bytes().chain(frac_part.bytes()) {
            num = num.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
        }
        let scale = exp - i32::try_from(frac_part.len()).ok()?;
        if scale.abs() > 36 {
            return None;
        }
        let p = 10i128.checked_pow(scale.unsigned_abs())?;
        let num = if neg { -num } else { num };
        if scale >= 0 {
            Rational::new(num.checked_mul(p)?, 1)
        } else {
            Rational::new(num, p)
        }
    }

    /// `self ^ e` for an integer exponent; `None` on overflow or `0 ^ negative`.
    pub fn powi(self, e: i128) -> Option<Self> {
        if e.abs() > 256 {
            return None;
        }
        let k = u32::try_from(e.unsigned_abs()).ok()?;
        let (n, d) = (self.num.checked_pow(k)?, self.den.checked_pow(k)?);
        if e >= 0 {
            Rational::new(n, d)
        } else {
            Rational::new(d, n)
        }
    }

    /// Checked sum.
    pub fn checked_add(self, o: Self) -> Option<Self> {
        let n = self
            .num
            .checked_mul(o.den)?
            .checked_add(o.num.checked_mul(self.den)?)?;
        Rational::new(n, self.den.checked_mul(o.den)?)
    }

    /// Checked product.
    pub fn checked_mul(self, o: Self) -> Option<Self> {
        let g1 = gcd(self.num, o.den).max(1);
        let g2 = gcd(o.num, self.den).max(1);
        let n = (self.num / g1).checked_mul(o.num / g2)?;
        Rational::new(n, (self.den / g2).checked_mul(o.den / g1)?)
    }

    /// Checked quotient; `None` for division by zero.
    pub fn checked_div(self, o: Self) -> Option<Self> {
        self.checked_mul(Rational::new(o.den, o.num)?)
    }

    /// The nearest `f64`.
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

/// A complex number of `f64`s; enough for numeric identity tests of answers with `i`, roots of
/// negatives and logarithms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Complex {
    /// Real part.
    pub re: f64,
    /// Imaginary part.
    pub im: f64,
}

impl Complex {
    /// `re + 0i`.
    pub fn real(re: f64) -> Self {
        Complex { re, im: 0.0 }
    }
    /// Modulus.
    pub fn abs(self) -> f64 {
        self.re.hypot(self.im)
    }
    /// Whether both parts are finite.
    pub fn is_finite(self) -> bool {
        self.re.is_finite() && self.im.is_finite()
    }
    /// Principal natural logarithm.
    pub fn ln(self) -> Self {
        Complex {
            re: self.abs().ln(),
            im: self.im.atan2(self.re),
        }
    }
    /// Exponential.
    pub fn exp(self) -> Self {
        let r = self.re.exp();
        Complex {
            re: r * self.im.cos(),
            im: r * self.im.sin(),
        }
    }
    /// Principal power `self ^ e`; integer real exponents use repeated multiplication so that
    /// `(-2)^3` stays exactly real.
    pub fn pow(self, e: Self) -> Self {
        if e.im == 0.0 && e.re.fract() == 0.0 && e.re.abs() <= 64.0 {
            let mut acc = Complex::real(1.0);
            for _ in 0..(e.re.abs() as u32) {
                acc = acc * self;
            }
            return if e.re < 0.0 {
                Complex::real(1.0) / acc
            } else {
                acc
            };
        }
        if self.re == 0.0 && self.im == 0.0 {
            return if e.re > 0.0 {
                Complex::real(0.0)
            } else {
                Complex::real(f64::NAN)
            };
        }
        (e * self.ln()).exp()
    }
    /// Principal square root.
    pub fn sqrt(self) -> Self {
        if self.im == 0.0 {
            return if self.re >= 0.0 {
                Complex::real(self.re.sqrt())
            } else {
                Complex {
                    re: 0.0,
                    im: (-self.re).sqrt(),
                }
            };
        }
        self.pow(Complex::real(0.5))
    }
    /// Sine.
    pub fn sin(self) -> Self {
        Complex {
            re: self.re.sin() * self.im.cosh(),
            im: self.re.cos() * self.im.sinh(),
        }
    }
    /// Cosine.
    pub fn cos(self) -> Self {
        Complex {
            re: self.re.cos() * self.im.cosh(),
            im: -self.re.sin() * self.im.sinh(),
        }
    }
}

impl Add for Complex {
    type Output = Complex;
    fn add(self, o: Complex) -> Complex {
        Complex {
            re: self.re + o.re,
            im: self.im + o.im,
        }
    }
}
impl Sub for Complex {
    type Output = Complex;
    fn sub(self, o: Complex) -> Complex {
        Complex {
            re: self.re - o.re,
            im: self.im - o.im,
        }
    }
}
impl Mul for Complex {
    type Output = Complex;
    fn mul(self, o: Complex) -> Complex {
        Complex {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }
}
impl Div for Complex {
    type Output = Complex;
    fn div(self, o: Complex) -> Complex {
        let d = o.re * o.re + o.im * o.im;
        Complex {
            re: (self.re * o.re + self.im * o.im) / d,
            im: (self.im * o.re - self.re * o.im) / d,
        }
    }
}
impl Neg for Complex {
    type Output = Complex;
    fn neg(self) -> Complex {
        // `0.0 - x` keeps a zero imaginary part positive, so that the principal root of a
        // negated real stays on the positive imaginary axis.
        Complex {
            re: 0.0 - self.re,
            im: 0.0 - self.im,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_parse_exactly() {
        // 1.25 = 5/4, .5 = 1/2, 1e-3 = 1/1000, -0.15 = -3/20 (hand-reduced).
        assert_eq!(Rational::parse_decimal("1.25"), Rational::new(5, 4));
        assert_eq!(Rational::parse_decimal(".5"), Rational::new(1, 2));
        assert_eq!(Rational::parse_decimal("1e-3"), Rational::new(1, 1000));
        assert_eq!(Rational::parse_decimal("-0.15"), Rational::new(-3, 20));
        assert_eq!(Rational::parse_decimal("1.2.3"), None);
        assert_eq!(Rational::parse_decimal("."), None);
    }

    #[test]
    fn arithmetic_is_exact_and_checked() {
        let third = Rational::new(1, 3).unwrap();
        assert_eq!(
            third.checked_add(third).and_then(|x| x.checked_add(third)),
            Some(Rational::int(1))
        );
        assert_eq!(Rational::int(2).powi(-2), Rational::new(1, 4));
        assert_eq!(Rational::int(10).powi(40), None);
        assert_eq!(Rational::int(1).checked_div(Rational::int(0)), None);
    }

    #[test]
    fn complex_roots_of_negatives() {
        // sqrt(-4) = 2i; (-2)^3 = -8 exactly.
        let r = Complex::real(-4.0).sqrt();
        assert!((r.re).abs() < 1e-12 && (r.im - 2.0).abs() < 1e-12);
        assert_eq!(
            Complex::real(-2.0).pow(Complex::real(3.0)),
            Complex::real(-8.0)
        );
    }
}
