//! Guess the number: a small partially observable game for belief tracking (ReBel's setting,
//! methods-extra §19; issue 18's text game).
//!
//! The prompt `GUESS 12-26:` hides a number in `[12, 26]`. Each policy turn either probes,
//! `19?` (the turn stops at `?`), and reads back one character: `L` (the number is lower),
//! `H` (higher), `=` (it is 19) or `X` (the probe is not a number); or answers, a turn without
//! `?`, which ends the episode for the verifier (math: the answer's last number against the
//! hidden one). A turn may begin with a stated belief, the interval the policy thinks still
//! holds the number: `(12,18)15?`.
//!
//! The environment keeps the true interval that the feedback so far implies (the tracker) and
//! checks each turn's belief against it ([`BeliefCheck`]): `state` is 1 when the stated
//! interval is the tracker's, `task` is 1 when the turn's action fits the game's phase (a probe
//! while the interval holds several numbers, an answer once it holds one), and the key is the
//! stated interval. **[PROPOSED]**: these are this game's stand-ins for ReBel's belief
//! predicates and task phase; the policy never sees the tracker.
//!
//! Records: `{"id", "prompt", "low", "high", "answer"}` (`cargo xtask gen-guess-number`,
//! `datasets/guess-number/`).

use crate::data::Example;
use crate::env::{BeliefCheck, Environment, Turn};
use crate::error::{Error, Result};

/// What a probe turn ends with (the turn's stop string).
pub const PROBE: &str = "?";

/// The game's state for one episode.
#[derive(Debug, Clone, Default)]
pub struct GuessNumber {
    secret: i64,
    /// The tracker: the interval that the feedback so far leaves.
    low: i64,
    high: i64,
}

/// A turn's text split into its stated belief (`None` when absent or malformed) and action.
pub fn split_belief(text: &str) -> (Option<(i64, i64)>, &str) {
    let t = text.trim_start();
    let Some(rest) = t.strip_prefix('(') else {
        return (None, t);
    };
    let Some(close) = rest.find(')') else {
        return (None, t);
    };
    let belief = rest[..close]
        .split_once(',')
        .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
    match belief {
        Some(b) => (Some(b), &rest[close + 1..]),
        None => (None, t),
    }
}

/// The stated belief as the tracker writes it: `(low,high)`.
pub fn belief_text(low: i64, high: i64) -> String {
    format!("({low},{high})")
}

fn field(example: &Example, key: &str) -> Result<i64> {
    let v = &example.record[key];
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| Error::Environment {
            example: example.id.clone(),
            message: format!("guess_number needs an integer `{key}` (got {v})"),
        })
}

impl GuessNumber {
    /// The tracker's interval (what the feedback so far leaves).
    pub fn interval(&self) -> (i64, i64) {
        (self.low, self.high)
    }

    /// The feedback to probe `n`, narrowing the tracker.
    fn answer_probe(&mut self, n: i64) -> &'static str {
        use std::cmp::Ordering;
        match self.secret.cmp(&n) {
            Ordering::Less => {
                self.high = self.high.min(n - 1);
                "L"
            }
            Ordering::Greater => {
                self.low = self.low.max(n + 1);
                "H"
            }
            Ordering::Equal => {
                (self.low, self.high) = (n, n);
                "="
            }
        }
    }
}

impl Environment for GuessNumber {
    fn stop_strings(&self) -> Vec<String> {
        vec![PROBE.to_string()]
    }

    /// The answer without its stated belief (`(17,17)17` → `17`): the verifier reads a bare
    /// number, and a belief's bounds are never taken for the answer.
    fn answer_text<'a>(&self, action: &'a str) -> &'a str {
        split_belief(action).1
    }

    fn reset(&mut self, example: &Example) -> Result<()> {
        let (low, high, secret) = (
            field(example, "low")?,
            field(example, "high")?,
            field(example, "answer")?,
        );
        if !(low <= secret && secret <= high) {
            return Err(Error::Environment {
                example: example.id.clone(),
                message: format!("answer {secret} is outside low..high = {low}..{high}"),
            });
        }
        *self = Self { secret, low, high };
        Ok(())
    }

    fn step(&mut self, action: &str) -> Turn {
        let (belief, act) = split_belief(action);
        let known = self.low == self.high;
        let probe = act.trim_end().strip_suffix(PROBE);
        let check = BeliefCheck {
            key: belief.map(|(a, b)| belief_text(a, b)),
            state: f32::from(u8::from(belief == Some(self.interval()))),
            task: f32::from(u8::from(probe.is_some() != known)),
            format_ok: belief.is_some(),
        };
        let turn = match probe {
            None => Turn::finish(),
            Some(n) => match n.trim().parse::<i64>() {
                Ok(n) => Turn::observe(self.answer_probe(n)),
                Err(_) => Turn::observe("X"),
            },
        };
        Turn {
            belief: Some(check),
            ..turn
        }
    }
}

/// The bisection oracle: probes the middle of the tracker's interval (stating it as its
/// belief) until one number is left, then answers it. It reads only the feedback.
pub fn bisect(example: &Example) -> impl FnMut(&[String]) -> String + '_ {
    let mut interval: Option<(i64, i64, i64)> = None; // (low, high, last probe)
    move |observations: &[String]| {
        let (mut low, mut high) = match interval {
            None => (
                field(example, "low").unwrap_or(0),
                field(example, "high").unwrap_or(0),
            ),
            Some((l, h, _)) => (l, h),
        };
        if let (Some((_, _, probe)), Some(o)) = (interval, observations.last()) {
            match o.as_str() {
                "L" => high = probe - 1,
                "H" => low = probe + 1,
                _ => (low, high) = (probe, probe),
            }
        }
        let belief = belief_text(low, high);
        if low >= high {
            return format!("{belief}{low}");
        }
        let mid = low + (high - low) / 2;
        interval = Some((low, high, mid));
        format!("{belief}{mid}{PROBE}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Reply;

    fn example(low: i64, high: i64, answer: i64) -> Example {
        Example {
            id: "g".into(),
            prompt: Some(format!("GUESS {low}-{high}:")),
            messages: None,
            record: serde_json::json!({"low": low, "high": high, "answer": answer.to_string()}),
        }
    }

    #[test]
    fn probes_narrow_the_tracker_and_beliefs_are_checked_against_it() {
        let mut env = GuessNumber::default();
        env.reset(&example(12, 26, 17)).unwrap();
        let t = env.step("(12,26)19?");
        assert_eq!(t.reply, Reply::Observation("L".into()));
        let b = t.belief.unwrap();
        assert_eq!(
            (b.key.as_deref(), b.state, b.task),
            (Some("(12,26)"), 1.0, 1.0)
        );
        assert_eq!(env.interval(), (12, 18));
        // A wrong belief, then a probe that hits.
        let b = env.step("(12,19)17?").belief.unwrap();
        assert_eq!((b.state, b.task, b.format_ok), (0.0, 1.0, true));
        assert_eq!(env.interval(), (17, 17));
        // No belief; answering is the phase now; an answer ends the episode, and the verifier
        // reads it without the belief.
        assert_eq!(env.answer_text("(17,17)17"), "17");
        let t = env.step("17");
        assert_eq!(t.reply, Reply::Final);
        let b = t.belief.unwrap();
        assert_eq!((b.key, b.task, b.format_ok), (None, 1.0, false));
    }

    #[test]
    fn a_bad_probe_is_x_an_early_answer_is_off_phase_and_bad_records_are_refused() {
        let mut env = GuessNumber::default();
        env.reset(&example(1, 9, 4)).unwrap();
        assert_eq!(env.step("AB?").reply, Reply::Observation("X".into()));
        assert_eq!(env.interval(), (1, 9));
        assert_eq!(env.step("(1,9)4").belief.unwrap().task, 0.0);
        let err = env.reset(&example(1, 9, 12)).unwrap_err().to_string();
        assert!(err.contains("outside"), "{err}");
        let mut no_low = example(1, 9, 4);
        no_low.record.as_object_mut().unwrap().remove("low");
        assert!(
            env.reset(&no_low)
                .unwrap_err()
                .to_string()
                .contains("`low`")
        );
    }

    #[test]
    fn beliefs_parse_only_when_well_formed() {
        assert_eq!(split_belief("(3,7)5?"), (Some((3, 7)), "5?"));
        assert_eq!(split_belief("(3;7)5?"), (None, "(3;7)5?"));
        assert_eq!(split_belief("5?"), (None, "5?"));
    }
}
