//! The verifier registry: one serde-tagged enum, built from TOML (`[verifier] kind = "math"`).

use serde::{Deserialize, Serialize};

use crate::composite::CompositeConfig;
use crate::ecpo::EcpoConfig;
use crate::external::{CommandConfig, HttpConfig};
use crate::grid_program::GridProgramConfig;
use crate::k2v::K2vConfig;
use crate::{CodeConfig, Kind, MathConfig, Reference, Result, RubricConfig, Verifier};

/// Which verifier to use and its knobs, as written in a run's TOML:
///
/// ```toml
/// [verifier]
/// kind = "math"        # or "code", "rubric", "command", "http", "composite", "k2v", "ecpo",
///                      # "grid_program"; an unknown kind lists the valid ones
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
    /// [`crate::external::CommandVerifier`]: a user program over JSON Lines.
    Command(CommandConfig),
    /// [`crate::external::HttpVerifier`]: a remote reward service (OpenRLHF's remote RM).
    Http(HttpConfig),
    /// [`crate::composite::CompositeVerifier`]: a weighted sum of other verifiers.
    Composite(CompositeConfig),
    /// [`crate::k2v::K2vVerifier`]: the K2V reward (methods-extra §17).
    K2v(K2vConfig),
    /// [`crate::ecpo::EcpoVerifier`]: the ECPO ranking reward (methods-extra §20).
    Ecpo(EcpoConfig),
    /// [`crate::grid_program::GridProgramVerifier`]: grid-program tasks checked by execution
    /// (GeoX's modes, methods-extra §21).
    GridProgram(GridProgramConfig),
}

impl VerifierConfig {
    /// Per-item limit of [`VerifierConfig::item_time_limit`] for verifiers that start no process.
    pub const DEFAULT_ITEM_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

    /// Validates the config and builds the verifier.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] naming the bad field; for `code`,
    /// [`crate::Error::Sandbox`] when no Python interpreter can be started; for `command`, a
    /// program that cannot be started (`verifier.command`).
    pub fn build(&self) -> Result<Box<dyn Verifier>> {
        Ok(match self {
            VerifierConfig::Math(c) => Box::new(c.init()?),
            VerifierConfig::Code(c) => Box::new(c.init()?),
            VerifierConfig::Rubric(c) => Box::new(c.init()?),
            VerifierConfig::Command(c) => Box::new(c.init()?),
            VerifierConfig::Http(c) => Box::new(c.init()?),
            VerifierConfig::Composite(c) => Box::new(c.init()?),
            VerifierConfig::K2v(c) => Box::new(c.init()?),
            VerifierConfig::Ecpo(c) => Box::new(c.init()?),
            VerifierConfig::GridProgram(c) => Box::new(c.init()?),
        })
    }

    /// The kind of this config.
    pub fn kind(&self) -> Kind {
        match self {
            VerifierConfig::Math(_) => Kind::Math,
            VerifierConfig::Code(_) => Kind::Code,
            VerifierConfig::Rubric(_) => Kind::Rubric,
            VerifierConfig::Command(_) => Kind::Command,
            VerifierConfig::Http(_) => Kind::Http,
            VerifierConfig::Composite(_) => Kind::Composite,
            VerifierConfig::K2v(_) => Kind::K2v,
            VerifierConfig::Ecpo(_) => Kind::Ecpo,
            VerifierConfig::GridProgram(_) => Kind::GridProgram,
        }
    }

    /// The reference a verifier built from this config needs, read from a dataset record:
    /// [`Reference::from_record`] of [`VerifierConfig::kind`], or for `composite` one reference
    /// per part.
    ///
    /// # Errors
    /// A message naming the missing or mistyped field (and the part, for `composite`).
    pub fn reference(&self, record: &serde_json::Value) -> std::result::Result<Reference, String> {
        match self {
            VerifierConfig::Composite(c) => c.reference(record),
            other => Reference::from_record(other.kind(), record),
        }
    }

    /// The per-item limit to pass to [`crate::verify_batch`] for this verifier: for `code`, the
    /// run's wall-clock limit plus [`crate::sandbox::KILL_GRACE`] (one source of truth, so the
    /// batch never abandons a worker whose sandbox is still inside its own limit); for the
    /// others, [`VerifierConfig::DEFAULT_ITEM_TIME_LIMIT`]. For `command`, its `timeout_s` plus a
    /// kill grace; for `http` (which scores chunks), one whole batch call with every retry; for
    /// `composite`, its parts' limits added up.
    pub fn item_time_limit(&self) -> std::time::Duration {
        match self {
            VerifierConfig::Code(c) => c.item_time_limit(),
            VerifierConfig::Command(c) => c.item_time_limit(),
            VerifierConfig::Http(c) => c.item_time_limit(),
            VerifierConfig::Composite(c) => c.item_time_limit(),
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
            // A remote backend (`sandbox_fusion`) starts no local sandbox.
            VerifierConfig::Code(c) if c.backend == crate::CodeBackend::Local => {
                Ok(Some(crate::sandbox::Sandbox::new(&c.sandbox)?.isolation()))
            }
            VerifierConfig::Composite(c) => {
                for p in &c.parts {
                    if let Some(i) = p.verifier.isolation()? {
                        return Ok(Some(i));
                    }
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// The default config of a kind. `command`, `http` and `composite` have no usable default
    /// (no program, URL or parts): theirs fail [`VerifierConfig::build`] naming the missing
    /// field.
    pub fn default_for(kind: crate::Kind) -> Self {
        match kind {
            crate::Kind::Math => VerifierConfig::Math(MathConfig::default()),
            crate::Kind::Code => VerifierConfig::Code(CodeConfig::default()),
            crate::Kind::Rubric => VerifierConfig::Rubric(RubricConfig::default()),
            crate::Kind::Command => VerifierConfig::Command(CommandConfig {
                command: Vec::new(),
                timeout_s: 10.0,
                processes: 0,
            }),
            crate::Kind::Http => VerifierConfig::Http(HttpConfig::new("")),
            crate::Kind::Composite => {
                VerifierConfig::Composite(CompositeConfig { parts: Vec::new() })
            }
            crate::Kind::K2v => VerifierConfig::K2v(K2vConfig::default()),
            crate::Kind::Ecpo => VerifierConfig::Ecpo(EcpoConfig::default()),
            crate::Kind::GridProgram => VerifierConfig::GridProgram(GridProgramConfig::default()),
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
