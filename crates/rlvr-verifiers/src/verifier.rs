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

    /// Most items this verifier scores in one [`Verifier::verify_chunk`] call (default 1: item
    /// by item). [`crate::verify_batch`] hands out chunks of this size, each under one time limit.
    fn chunk_size(&self) -> usize {
        1
    }

    /// Judges a chunk of at most [`Verifier::chunk_size`] items in one call (a remote service
    /// scores a whole batch per request); output in input order, one verdict per item. The
    /// default calls [`Verifier::verify`] on each item in turn.
    fn verify_chunk(&self, items: &[(String, Reference)]) -> Vec<Verdict> {
        items
            .iter()
            .map(|(response, reference)| self.verify(response, reference))
            .collect()
    }

    /// Checks, before any response is scored, that `reference` can ever be matched: a dataset
    /// row whose reference this verifier cannot use is refused when the run loads its data,
    /// rather than scored 0 for every response. The default accepts every reference.
    ///
    /// # Errors
    /// A message saying what is wrong with the reference.
    fn check_reference(&self, reference: &Reference) -> Result<(), String> {
        let _ = reference;
        Ok(())
    }

    /// Short name used in reports (`math`, `code`, `rubric`).
    fn name(&self) -> &'static str;
}
