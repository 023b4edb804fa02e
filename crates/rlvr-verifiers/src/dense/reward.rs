//! The components and the sequence reward of the dense code reward (methods-extra §9):
//! pure functions of counts, so they are checked by hand.

use super::{Component, DenseConfig};

/// The five components of one program, each in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Components {
    /// r_syntax ∈ {0, 1}.
    pub syntax: f32,
    /// r_func = passed / total.
    pub func: f32,
    /// r_style = 1 − min(1, n_lint / L).
    pub style: f32,
    /// r_security = 1 − min(1, n_sec / S).
    pub security: f32,
    /// r_exec ∈ {0, 1}.
    pub exec: f32,
}

/// What the analysis and the test run found, as counts.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Counts {
    /// The program compiles.
    pub compiles: bool,
    /// Tests passed.
    pub passed: usize,
    /// Tests in the reference (≥ 1).
    pub total: usize,
    /// Style findings in the program (the reference's prefix excluded).
    pub lint: usize,
    /// Security findings in the program (the reference's prefix excluded).
    pub security: usize,
    /// The program loaded, every test ran without an exception of the program, no timeout
    /// and no crash.
    pub ran_to_completion: bool,
}

impl Components {
    /// The components of `counts` under `config`; the syntax gate zeroes everything when the
    /// program does not compile, and (with `require_pass`) style, security and exec are 0
    /// when no test passes.
    pub fn from_counts(counts: &Counts, config: &DenseConfig) -> Self {
        if !counts.compiles {
            return Components::default();
        }
        let func = counts.passed as f32 / counts.total.max(1) as f32;
        if config.require_pass && counts.passed == 0 {
            return Components {
                syntax: 1.0,
                func,
                ..Components::default()
            };
        }
        let frac = |n: usize, scale: f32| 1.0 - (n as f32 / scale).min(1.0);
        Components {
            syntax: 1.0,
            func,
            style: frac(counts.lint, config.lint_scale),
            security: frac(counts.security, config.sec_scale),
            exec: f32::from(u8::from(counts.ran_to_completion)),
        }
    }

    /// The value of one component.
    pub fn get(&self, c: Component) -> f32 {
        match c {
            Component::Syntax => self.syntax,
            Component::Func => self.func,
            Component::Style => self.style,
            Component::Security => self.security,
            Component::Exec => self.exec,
        }
    }

    /// R = Σ w_c r_c / Σ w_c.
    pub fn reward(&self, config: &DenseConfig) -> f32 {
        let sum: f32 = Component::ALL
            .iter()
            .map(|&c| config.weight(c) * self.get(c))
            .sum();
        sum / config.weight_sum()
    }
}

/// −κ·w_c / Σw: the penalty of one localized finding of component `c`.
pub fn finding_penalty(c: Component, config: &DenseConfig) -> f32 {
    -config.kappa * config.weight(c) / config.weight_sum()
}
