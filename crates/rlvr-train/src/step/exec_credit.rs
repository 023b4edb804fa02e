//! The token mapping of the execution-aware dense code reward (methods-extra §9): each
//! localized finding's −κ·w_c (a character span of the response, from
//! `rlvr_verifiers::dense`) is split evenly over the response tokens that overlap it, by the
//! tokenizer's character boundaries, and added to those tokens' advantages on top of the
//! group-normalized sequence advantage (the spec's critic-free form).

use std::time::Instant;

use rlvr_models::Tokenizer;
use rlvr_objectives::shaping::{StepOffset, span_token_offsets};

use crate::batch::Sample;
use crate::error::Result;
use crate::metrics::Metrics;

/// Character boundaries of `ids` in their decoded text: `bounds[k]..bounds[k + 1]` are the
/// characters of token `k` (special tokens removed, as `Sample::text`). Each boundary is the
/// length of the decoded prefix `ids[..k]` without the replacement characters an unfinished
/// UTF-8 sequence decodes to at its end, so a character that spans several byte-level tokens
/// belongs to the token that completes it (the earlier ones do not hold it); boundaries are made
/// non-decreasing and at most the full text's length.
pub fn token_char_bounds(tokenizer: &Tokenizer, ids: &[u32]) -> Result<Vec<usize>> {
    let mut bounds = Vec::with_capacity(ids.len() + 1);
    for k in 0..=ids.len() {
        let prefix = tokenizer.decode_skip_special(&ids[..k])?;
        let complete = if k < ids.len() {
            prefix.trim_end_matches('\u{FFFD}')
        } else {
            &prefix
        };
        bounds.push(complete.chars().count());
    }
    let mut low = bounds[ids.len()];
    for b in bounds.iter_mut().rev() {
        low = low.min(*b);
        *b = low;
    }
    Ok(bounds)
}

/// Per sample, the per-token offsets of its penalty spans (empty for a sample without any),
/// and the time this took as `time/dense_token_map_s`. Also logs `dense/penalty_abs_mean`
/// (mean |offset| per response token of the batch) when some sample has spans.
pub fn offsets(
    tokenizer: &Tokenizer,
    samples: &[Sample],
    m: &mut Metrics,
) -> Result<Vec<Vec<f32>>> {
    if samples.iter().all(|s| s.penalty_spans.is_empty()) {
        return Ok(vec![Vec::new(); samples.len()]);
    }
    let t = Instant::now();
    let mut out = Vec::with_capacity(samples.len());
    for s in samples {
        if s.penalty_spans.is_empty() {
            out.push(Vec::new());
            continue;
        }
        let spans: Vec<StepOffset> = s
            .penalty_spans
            .iter()
            .map(|p| StepOffset {
                char_start: p.char_start,
                char_end: p.char_end,
                offset: p.penalty,
            })
            .collect();
        out.push(span_token_offsets(
            &spans,
            &token_char_bounds(tokenizer, &s.response)?,
        ));
    }
    m.insert("time/dense_token_map_s".into(), t.elapsed().as_secs_f64());
    let tokens: usize = samples.iter().map(|s| s.response.len()).sum();
    let sum: f64 = out.iter().flatten().map(|x| f64::from(x.abs())).sum();
    m.insert("dense/penalty_abs_mean".into(), sum / tokens.max(1) as f64);
    Ok(out)
}
