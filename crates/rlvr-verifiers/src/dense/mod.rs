//! The execution-aware dense code reward with token mapping (methods-extra §9, after "Domain-
//! Adaptable Reinforcement Learning for Code Generation with Dense Rewards", arXiv 2605.21180).
//!
//! On the code verifier (`[verifier] kind = "code"` with a `[verifier.dense]` table) a response's
//! program gets five components, each in `[0, 1]`:
//!
//! - r_syntax ∈ {0, 1}: the program compiles (CPython's `compile`, which runs nothing); the
//!   gate: when it is 0 every other component is 0 and the tests are not run;
//! - r_func = passed tests / total tests (the sandboxed run of [`crate::code`]);
//! - r_style = 1 − min(1, n_lint / L), L = `lint_scale` (rules: `style_rules.py`);
//! - r_security = 1 − min(1, n_sec / S), S = `sec_scale` (rules: `security_rules.py`);
//! - r_exec ∈ {0, 1}: the program loads and no test fails on an exception of the program, no
//!   timeout, no crash;
//!
//! and, with `require_pass` (default on), r_style, r_security and r_exec are 0 unless at least
//! one test passes: otherwise an empty program (`pass`) would earn syntax + style + security +
//! exec = 0.5 of R, since the tests' `NameError` is raised in the test, not in the program, and
//! a policy trained on R learns to answer with nothing.
//!
//! and R = Σ w_c r_c / Σ w_c (the spec's weights 0.1 / 0.5 / 0.1 / 0.1 / 0.2 sum to 1, so R is
//! the spec's weighted sum). Each component is a `parts` entry of the verdict
//! (`reward/part/<component>` in the trainer).
//!
//! Localized diagnostics (the syntax-error line, each style and security finding, each distinct
//! line of the program where a test's exception was raised) become [`crate::PenaltySpan`]s:
//! −κ·w_c / Σw over the characters of the response that hold that program line (the program's
//! place in the fenced block is tracked, [`crate::code::extract_program_at`]). The trainer
//! splits each evenly over the tokens that overlap the span and adds it to those tokens'
//! advantages (the critic-free form of the spec).
//!
//! **[PROPOSED]** (the paper gives no code): the weights, L, S, the rule sets, r_exec's meaning
//! on MBPP, the `require_pass` gate, the traceback rule (distinct lines; an exception whose line is unknown or outside
//! the program spreads over the whole program) and the normalization by Σw.
//!
//! Forging: syntax, style and security come from an analyzer process that only parses the
//! program (it is never executed there); r_func and r_exec come from the trusted checker's
//! nonce-protected report. The one value the program's own process supplies is the traceback
//! line, which is range-checked and can only move the program's own penalty, not remove it.

pub mod analyzer;
pub mod reward;
pub mod spans;
mod verify;

use serde::{Deserialize, Serialize};

pub(crate) use verify::verify_dense;

/// One component of the dense code reward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    /// r_syntax: the program compiles (the gate).
    Syntax,
    /// r_func: the fraction of tests passed.
    Func,
    /// r_style: 1 − min(1, n_lint / L).
    Style,
    /// r_security: 1 − min(1, n_sec / S).
    Security,
    /// r_exec: ran to completion without an exception of the program.
    Exec,
}

impl Component {
    /// Every component, in the order of the verdict's parts.
    pub const ALL: [Component; 5] = [
        Component::Syntax,
        Component::Func,
        Component::Style,
        Component::Security,
        Component::Exec,
    ];

    /// The name logged as `reward/part/<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Component::Syntax => "syntax",
            Component::Func => "func",
            Component::Style => "style",
            Component::Security => "security",
            Component::Exec => "exec",
        }
    }
}

/// Knobs of the dense code reward (`[verifier.dense]`), defaults from methods-extra §9.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenseConfig {
    /// w_syntax (default 0.1).
    #[serde(default = "w_syntax")]
    pub w_syntax: f32,
    /// w_func (default 0.5).
    #[serde(default = "w_func")]
    pub w_func: f32,
    /// w_style (default 0.1).
    #[serde(default = "w_small")]
    pub w_style: f32,
    /// w_security (default 0.1).
    #[serde(default = "w_small")]
    pub w_security: f32,
    /// w_exec (default 0.2; raise it for a simulator domain such as RoboEval).
    #[serde(default = "w_exec")]
    pub w_exec: f32,
    /// L: lint findings at which r_style reaches 0 (default 10).
    #[serde(default = "lint_scale")]
    pub lint_scale: f32,
    /// S: security findings at which r_security reaches 0 (default 3).
    #[serde(default = "sec_scale")]
    pub sec_scale: f32,
    /// κ: the scale of the localized token penalties (default 1; 0 keeps the dense sequence
    /// reward and adds no token penalties).
    #[serde(default = "kappa")]
    pub kappa: f32,
    /// The longest line the style rule E501 accepts, in characters (default 79, PEP 8).
    #[serde(default = "max_line_length")]
    pub max_line_length: usize,
    /// **[PROPOSED]** r_style, r_security and r_exec count only when at least one test passes
    /// (default true). Off, a program that defines nothing earns 0.5 of R with the spec's
    /// weights; on, it earns r_syntax alone, no more than any program that compiles.
    #[serde(default = "require_pass")]
    pub require_pass: bool,
}

fn w_syntax() -> f32 {
    0.1
}
fn w_func() -> f32 {
    0.5
}
fn w_small() -> f32 {
    0.1
}
fn w_exec() -> f32 {
    0.2
}
fn lint_scale() -> f32 {
    10.0
}
fn sec_scale() -> f32 {
    3.0
}
fn kappa() -> f32 {
    1.0
}
fn max_line_length() -> usize {
    79
}
fn require_pass() -> bool {
    true
}

impl Default for DenseConfig {
    fn default() -> Self {
        DenseConfig {
            w_syntax: w_syntax(),
            w_func: w_func(),
            w_style: w_small(),
            w_security: w_small(),
            w_exec: w_exec(),
            lint_scale: lint_scale(),
            sec_scale: sec_scale(),
            kappa: kappa(),
            max_line_length: max_line_length(),
            require_pass: require_pass(),
        }
    }
}

impl DenseConfig {
    /// The weight of a component, as configured.
    pub fn weight(&self, c: Component) -> f32 {
        match c {
            Component::Syntax => self.w_syntax,
            Component::Func => self.w_func,
            Component::Style => self.w_style,
            Component::Security => self.w_security,
            Component::Exec => self.w_exec,
        }
    }

    /// Σ w_c.
    pub fn weight_sum(&self) -> f32 {
        Component::ALL.iter().map(|&c| self.weight(c)).sum()
    }

    /// Checks the knobs: weights finite and ≥ 0, not all 0; L, S ≥ 1; κ finite and ≥ 0;
    /// `max_line_length` ≥ 1.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] naming the key (`verifier.dense.<key>`).
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |key: &str, reason: String| crate::Error::InvalidConfig {
            field: format!("verifier.dense.{key}"),
            reason,
        };
        for c in Component::ALL {
            let w = self.weight(c);
            if !(w.is_finite() && w >= 0.0) {
                return Err(bad(&format!("w_{}", c.name()), format!("{w} must be ≥ 0")));
            }
        }
        if self.weight_sum() <= 0.0 {
            return Err(bad("w_func", "the weights are all 0".into()));
        }
        for (key, v) in [
            ("lint_scale", self.lint_scale),
            ("sec_scale", self.sec_scale),
        ] {
            if !(v.is_finite() && v >= 1.0) {
                return Err(bad(key, format!("{v} must be ≥ 1")));
            }
        }
        if !(self.kappa.is_finite() && self.kappa >= 0.0) {
            return Err(bad("kappa", format!("{} must be ≥ 0", self.kappa)));
        }
        if self.max_line_length == 0 {
            return Err(bad("max_line_length", "must be ≥ 1".into()));
        }
        Ok(())
    }
}
