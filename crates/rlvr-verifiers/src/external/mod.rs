//! Rewards written outside this crate: a user program over stdin/stdout ([`command`]) or a
//! remote reward service ([`http`]).
//!
//! Both read the whole dataset record ([`crate::Reference::Record`]), and both hold their
//! rewards to the crate's rule: a reward is a finite number in `[0, 1]`. A reward outside that
//! range (or not a number) is not clamped: it is an [`crate::Outcome::Error`] verdict with
//! reward 0 whose reason gives the value, so a mis-scaled program is seen at once instead of
//! training on silently clipped rewards.

pub mod command;
pub mod http;

pub use command::{CommandConfig, CommandVerifier};
pub use http::{HttpConfig, HttpVerifier};

use crate::Outcome;

/// `x` as a reward, or why it is not one.
pub(crate) fn checked_reward(x: f64) -> Result<f32, String> {
    if x.is_finite() && (0.0..=1.0).contains(&x) {
        Ok(x as f32)
    } else {
        Err(format!("reward {x} is outside [0, 1]"))
    }
}

/// The outcome of a reward when the program or service says nothing more: `Correct` at 1,
/// `Wrong` at 0, `Partial` between.
pub(crate) fn outcome_of(reward: f32) -> Outcome {
    if reward >= 1.0 {
        Outcome::Correct
    } else if reward <= 0.0 {
        Outcome::Wrong
    } else {
        Outcome::Partial
    }
}

/// At most `max` characters of `text`, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect();
    if text.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}
