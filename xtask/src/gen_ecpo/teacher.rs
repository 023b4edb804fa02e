//! The careless teacher of the supervised warm start: mostly the ideal answer, otherwise one of
//! the four mistakes ECPO's coupled rewards are built to catch (an incomplete certificate, a
//! post-hoc rationalization, a wrong order, a hard negative ranked in).

use super::example::{Example, Item, pick, render};
use crate::gen_data::SplitMix64;

/// Probability (percent) that the teacher writes the ideal answer.
pub const IDEAL: u64 = 45;
/// Probability (percent) of the ideal ranking with an incomplete certificate: the first
/// relevance-2 item cites only one of its two spans; without one, the second item cites a span
/// of another candidate instead of its own.
pub const INCOMPLETE: u64 = 20;
/// Probability (percent) of a post-hoc rationalization: the ideal ranking, each item citing one
/// span of the example drawn uniformly, whatever its subject.
pub const RATIONALIZED: u64 = 15;
/// Probability (percent) that the two top items are swapped when their relevances differ (the
/// ideal answer otherwise), certificates kept.
pub const SWAPPED: u64 = 10;
/// Probability (percent) that a hard negative (drawn among them) is listed second, citing all
/// its own spans, after the ideal first item.
pub const HARD_NEGATIVE: u64 = 10;

const _: () = assert!(IDEAL + INCOMPLETE + RATIONALIZED + SWAPPED + HARD_NEGATIVE == 100);

/// What the teacher does with one example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branch {
    /// [`IDEAL`].
    Ideal,
    /// [`INCOMPLETE`].
    Incomplete,
    /// [`RATIONALIZED`].
    Rationalized,
    /// [`SWAPPED`].
    Swapped,
    /// [`HARD_NEGATIVE`].
    HardNegative,
}

impl Branch {
    /// Draws a branch with the probabilities above.
    pub fn draw(rng: &mut SplitMix64) -> Branch {
        let mut u = rng.below(100);
        for (p, b) in [
            (IDEAL, Branch::Ideal),
            (INCOMPLETE, Branch::Incomplete),
            (RATIONALIZED, Branch::Rationalized),
            (SWAPPED, Branch::Swapped),
        ] {
            if u < p {
                return b;
            }
            u -= p;
        }
        Branch::HardNegative
    }
}

/// The teacher's completion of `ex` (see the constants).
pub fn completion(ex: &Example, rng: &mut SplitMix64) -> String {
    let branch = Branch::draw(rng);
    render(&items(ex, branch, rng))
}

/// The items `branch` writes for `ex`.
pub fn items(ex: &Example, branch: Branch, rng: &mut SplitMix64) -> Vec<Item> {
    let mut items = ex.ideal_items();
    match branch {
        Branch::Ideal => {}
        Branch::Incomplete => {
            if let Some(it) = items.iter_mut().find(|it| it.cited.len() == 2) {
                it.cited = vec![pick(rng, &it.cited)];
            } else {
                // No relevance-2 candidate: the task then has two of relevance ≥ 1 listed.
                let second = &mut items[1];
                let foreign: Vec<usize> = (1..=ex.spans.len())
                    .filter(|&j| ex.spans[j - 1].subject != second.id)
                    .collect();
                second.cited = vec![pick(rng, &foreign)];
            }
        }
        Branch::Rationalized => {
            for it in &mut items {
                it.cited = vec![1 + rng.below(ex.spans.len() as u64) as usize];
            }
        }
        Branch::Swapped => {
            if items.len() >= 2 && ex.relevance(&items[0].id) != ex.relevance(&items[1].id) {
                items.swap(0, 1);
            }
        }
        Branch::HardNegative => {
            let negative = pick(rng, &ex.hard_negatives());
            items.truncate(1);
            items.push(Item {
                id: negative.to_string(),
                cited: ex.spans_of(negative, false),
            });
        }
    }
    items
}
