//! The verifier registry: one serde-tagged enum, built from TOML (`[verifier] kind = "math"`).

use serde::{Deserialize, Serialize};

use crate::{CodeConfig, MathConfig, Result, RubricConfig, Verifier};

/// Which verifier to use and its knobs, as written in a run's TOML:
///
/// ```toml
/// [verifier]
/// kind = "math"        # or "code", "rubric"; an unknown kind lists the valid ones
/// rel_tol = 1e-6
/// fallback = "last_number"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VerifierConfig {
    /// [`crate::MathVerifier`].
    Math(MathConfig),
    /// [`crate::CodeVerifier`].
    Code(CodeConfig),
    /// [`crate::RubricVerifier`].
    Rubric(RubricConfig),
}

impl VerifierConfig {
    /// Per-item limit of [`VerifierConfig::item_time_limit`] for verifiers that start no process.
    pub const DEFAULT_ITEM_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

    /// Validates the config and builds the verifier.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] naming the bad field; for `code`,
    /// [`crate::Error::Sandbox`] when no Python interpreter can be started.
    pub fn build(&self) -> Result<Box<dyn Verifier>> {
        Ok(match self {
            VerifierConfig::Math(c) => Box::new(c.init()?),
            VerifierConfig::Code(c) => Box::new(c.init()?),
            VerifierConfig::Rubric(c) => Box::new(c.init()?),
        })
    }

    /// The per-item limit to pass to [`crate::verify_batch`] for this verifier: for `code`, the
    /// run's wall-clock limit plus [`crate::sandbox::KILL_GRACE`] (one source of truth, so the
    /// batch never abandons a worker whose sandbox is still inside its own limit); for the
    /// others, [`VerifierConfig::DEFAULT_ITEM_TIME_LIMIT`].
    pub fn item_time_limit(&self) -> std::time::Duration {
        match self {
            VerifierConfig::Code(c) => c.item_time_limit(),
            _ => Self::DEFAULT_ITEM_TIME_LIMIT,
        }
    }

    /// The sandbox isolation a `code` verifier built from this config runs under (`None` for
    /// the other kinds), for the training log. Probing is cached per interpreter, so calling
    /// this next to [`VerifierConfig::build`] costs nothing extra.
    ///
    /// # Errors
    /// As [`VerifierConfig::build`] for `code`: [`crate::Error::Sandbox`] when no interpreter
    /// starts or a required layer is missing and `allow_weak_sandbox` is off.
    pub fn isolation(&self) -> Result<Option<crate::sandbox::Isolation>> {
        match self {
            VerifierConfig::Code(c) => {
                Ok(Some(crate::sandbox::Sandbox::new(&c.sandbox)?.isolation()))
            }
            _ => Ok(None),
        }
    }

    /// The default config of a kind.
    pub fn default_for(kind: crate::Kind) -> Self {
        match kind {
            crate::Kind::Math => VerifierConfig::Math(MathConfig::default()),
            crate::Kind::Code => VerifierConfig::Code(CodeConfig::default()),
            crate::Kind::Rubric => VerifierConfig::Rubric(RubricConfig::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_kinds_and_unknown_kind() {
        let c: VerifierConfig = toml::from_str("kind = \"math\"\nrel_tol = 1e-4").unwrap();
        assert!(matches!(c, VerifierConfig::Math(MathConfig { rel_tol, .. }) if rel_tol == 1e-4));
        let err = toml::from_str::<VerifierConfig>("kind = \"maths\"")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("math") && err.contains("code") && err.contains("rubric"),
            "{err}"
        );
        let err = toml::from_str::<VerifierConfig>("kind = \"math\"\nrel_tol = -1.0")
            .unwrap()
            .build()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("math.rel_tol"), "{err}");
        let err = toml::from_str::<VerifierConfig>("kind = \"math\"\nrel_tols = 1.0").unwrap_err();
        assert!(err.to_string().contains("rel_tols"), "{err}");
    }
}
