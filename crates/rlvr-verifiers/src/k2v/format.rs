//! The K2V format shaping (methods-extra §17, "Reward"; the paper's code): a reward for the
//! `<think>…</think><answer>…</answer>` structure, independent of the answer.

use super::tags::Tags;

/// The base reward of a response that matches the format pattern.
pub const FORMAT_BASE: f64 = 0.25;
/// The reward for each of the four tags appearing exactly once.
pub const PER_TAG: f64 = 0.125;

/// The format term of the K2V reward.
///
/// 0 unless the response matches `pattern` ([`Tags::format_regex`] of `tags`) from its start; otherwise
/// `0.25 + 0.125 · #{tags appearing exactly once}` minus the trailing-text penalty, which the
/// paper's code applies twice, slightly differently (the "count_xml" rule): with
/// `n` = the characters after the last `</answer>` and `p` = `trailing_penalty`,
/// `p · n` when `<answer>` appears once and `p · (n − 1)` when `</answer>` appears once.
/// With both tags once the penalty is `p · (2n − 1)`: a response that ends exactly on
/// `</answer>` gets `+p`, so the most is `0.75 + p` (the spec's "at most ≈ 0.75"). The term is
/// not clamped (a long enough tail makes it negative).
pub fn format_score(
    response: &str,
    tags: &Tags,
    pattern: &regex::Regex,
    trailing_penalty: f64,
) -> f64 {
    if !pattern.is_match(response) {
        return 0.0;
    }
    let once = |tag: &str| response.matches(tag).count() == 1;
    // `text.split("</answer>")[-1]`: everything after the last closing tag.
    let tail = response
        .rsplit(tags.answer_close)
        .next()
        .unwrap_or_default()
        .chars()
        .count() as f64;
    let mut score = FORMAT_BASE;
    if once(tags.think_open) {
        score += PER_TAG;
    }
    if once(tags.think_close) {
        score += PER_TAG;
    }
    if once(tags.answer_open) {
        score += PER_TAG;
        score -= trailing_penalty * tail;
    }
    if once(tags.answer_close) {
        score += PER_TAG;
        score -= trailing_penalty * (tail - 1.0);
    }
    score
}

/// The largest value of [`format_score`]: `0.75 + trailing_penalty` (every tag once, nothing
/// after the answer).
pub fn max_format_score(trailing_penalty: f64) -> f64 {
    FORMAT_BASE + 4.0 * PER_TAG + trailing_penalty
}
