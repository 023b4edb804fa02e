//! The `Verifier` trait: a response and a reference in, a verdict out.

use rayon::prelude::*;

use crate::{Reference, Verdict};

/// A reward program.
///
/// One required method, [`Verifier::verify`]; [`Verifier::verify_batch`] scores many items in
/// parallel (rayon) and may be overridden. Bad model output is a verdict, never an error or a
/// panic. For a per-item time limit use the free function [`crate::verify_batch`].
pub trait Verifier: Send + Sync {
    /// Judges one response against its reference.
    ///
    /// A reference of the wrong kind (a code reference given to the math verifier) yields a
    /// verdict with [`crate::Outcome::Error`].
    fn verify(&self, response: &str, reference: &Reference) -> Verdict;

    /// Judges many `(response, reference)` pairs in parallel; output in input order.
    fn verify_batch(&self, items: &[(String, Reference)]) -> Vec<Verdict> {
        items
            .par_iter()
            .map(|(response, reference)| self.verify(response, reference))
            .collect()
    }

    /// Short name used in reports (`math`, `code`, `rubric`).
    fn name(&self) -> &'static str;
}
