//! Reward programs for RLVR: math answer equivalence, sandboxed Python execution against tests,
//! weighted rubrics. Does not link burn.
//!
//! A [`Verifier`] turns a model response and a task's [`Reference`] into a [`Verdict`]: a reward
//! in `[0, 1]`, an [`Outcome`] (correct, wrong, unparseable, timeout, crashed, ...), the extracted
//! answer and per-test or per-criterion details. Bad model output is always a verdict, never an
//! error; [`Error`] is for bad configuration and a sandbox that cannot start.
//!
//! - [`math`]: extract (`\boxed{}`, `#### n`, "the answer is") → normalize → equivalence
//!   (exact rationals, tolerance, algebraic identity at random points, intervals, tuples, sets,
//!   matrices, equations).
//! - [`code`] on [`sandbox`]: Python programs against MBPP asserts, HumanEval `check`, or
//!   stdin/stdout cases, in a fresh directory with rlimits, namespaces and a verdict channel the
//!   program cannot forge.
//! - [`rubric`]: weighted regex / contains / numeric / length / JSON-schema / LLM-judge criteria.
//! - [`external`]: rewards written in any language: a program fed JSON Lines
//!   ([`external::command`]) or a remote reward service ([`external::http`]).
//! - [`composite`]: a weighted sum of other verifiers, each part's reward in the verdict.
//! - [`dense`]: the execution-aware dense code reward (syntax, tests, style, security,
//!   execution) with per-line penalties for token credit, on the code verifier.
//! - [`k2v`]: the K2V reward for knowledge-graph fill-in-the-blank questions (answer match,
//!   answer-gated checklist, format shaping).
//! - [`ecpo`]: the ECPO reward for evidence-certified Top-K rankings (NDCG, certificate
//!   validity, the evidence cycle).
//! - [`grid_program`]: grid-program tasks checked by execution (GeoX's deduction, abduction,
//!   induction and proposals).
//!
//! [`VerifierConfig`] is the TOML registry (`[verifier] kind = "math"`), and [`verify_batch`]
//! scores a batch in parallel with a per-item time limit.
//!
//! ```
//! use rlvr_verifiers::{Reference, Verifier, VerifierConfig};
//!
//! let config: VerifierConfig = toml::from_str("kind = \"math\"").unwrap();
//! let verifier = config.build().unwrap();
//! let gold = Reference::Math { answer: "1234".into() };
//! assert!(verifier.verify("... so she has #### 1,234", &gold).passed);
//! assert!(!verifier.verify("The answer is 1235.", &gold).passed);
//! ```
#![warn(missing_docs)]

mod batch;
pub mod code;
pub mod composite;
mod config;
pub mod dense;
pub mod ecpo;
mod error;
pub mod external;
pub mod grid_program;
mod jsonl;
pub mod k2v;
pub mod math;
mod reference;
pub mod rubric;
pub mod sandbox;
pub mod sandbox_fusion;
#[cfg(feature = "serve")]
pub mod serve;
mod verdict;
mod verifier;

pub use batch::verify_batch;
pub use code::{CodeBackend, CodeConfig, CodeVerifier, RewardMode};
pub use composite::{CompositeConfig, CompositeVerifier, PartConfig};
pub use config::VerifierConfig;
pub use dense::{Component, DenseConfig};
pub use ecpo::{EcpoConfig, EcpoVerifier};
pub use error::{Error, Result};
pub use external::{CommandConfig, CommandVerifier, HttpConfig, HttpVerifier};
pub use grid_program::{GridProgramConfig, GridProgramVerifier};
pub use jsonl::read_jsonl;
pub use k2v::{K2vConfig, K2vVerifier};
pub use math::{MathConfig, MathVerifier};
pub use reference::{CodeReference, IoCase, Kind, Reference};
pub use rubric::{Criterion, CriterionKind, RubricConfig, RubricVerifier};
pub use verdict::{Outcome, PartVerdict, PenaltySpan, RewardMap, Verdict};
pub use verifier::Verifier;
