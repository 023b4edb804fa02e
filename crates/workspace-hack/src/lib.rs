//! Build-only crate (the "workspace hack" pattern).
//!
//! Cargo unifies dependency features per build invocation, not per workspace, so
//! `cargo test -p rlvr-optim` and `cargo test -p rlvr-models` would otherwise each build burn with
//! a slightly different feature set of its transitive dependencies: minutes of recompilation on a
//! 2-core machine. Every crate that links burn has this one as a dev-dependency (test builds only,
//! without a version, so `cargo package` drops it and a library user never builds it); it names
//! the union of the shared dependencies, so all test builds resolve to one build. It has no code.
