//! Character spans → per-token offsets by the tokenizer's character boundaries, each span's
//! amount split evenly over the tokens that overlap it: the token mapping of the
//! execution-aware dense code reward (methods-extra §9, "−κ·w_c split evenly over the tokens
//! that overlap that source line"). SRaR's [`super::token_offsets`] maps spans by proportion
//! instead (as the SRaR code); this one uses each token's real characters.

use super::srar::StepOffset;

/// Per-token offsets of `spans` over tokens whose characters are `bounds[k]..bounds[k + 1]`
/// (`bounds` has one entry more than there are tokens, non-decreasing). Each span's `offset`
/// is divided evenly among the tokens with at least one character inside
/// `[char_start, char_end)`; a span no token overlaps adds nothing. Offsets add up where spans
/// overlap, so the sum over tokens is the sum of the overlapped spans' offsets.
pub fn span_token_offsets(spans: &[StepOffset], bounds: &[usize]) -> Vec<f32> {
    let tokens = bounds.len().saturating_sub(1);
    let mut out = vec![0.0f32; tokens];
    for s in spans {
        let hit: Vec<usize> = (0..tokens)
            .filter(|&k| {
                bounds[k + 1] > bounds[k] && bounds[k] < s.char_end && bounds[k + 1] > s.char_start
            })
            .collect();
        if hit.is_empty() {
            continue;
        }
        let share = s.offset / hit.len() as f32;
        for k in hit {
            out[k] += share;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(char_start: usize, char_end: usize, offset: f32) -> StepOffset {
        StepOffset {
            char_start,
            char_end,
            offset,
        }
    }

    /// Tokens "de|f |ad|d(" = chars [0,2) [2,4) [4,6) [6,8) plus an empty end token [8,8).
    /// A span [3, 5) touches tokens 1 and 2: −0.2 each of −0.4; a span [0, 8) all four
    /// non-empty tokens (−0.1 each of −0.4); the empty token gets nothing; a span past the
    /// text nothing.
    #[test]
    fn split_evenly_by_hand() {
        let bounds = [0, 2, 4, 6, 8, 8];
        let o = span_token_offsets(&[span(3, 5, -0.4)], &bounds);
        assert_eq!(o, vec![0.0, -0.2, -0.2, 0.0, 0.0]);
        let o = span_token_offsets(&[span(0, 8, -0.4), span(3, 5, -0.4)], &bounds);
        let want = [-0.1, -0.3, -0.3, -0.1, 0.0];
        for (a, b) in o.iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{o:?}");
        }
        assert_eq!(
            span_token_offsets(&[span(9, 12, -1.0)], &bounds),
            vec![0.0; 5]
        );
        assert!(span_token_offsets(&[span(0, 1, -1.0)], &[0]).is_empty());
    }
}
