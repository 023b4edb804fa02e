//! Gradient accumulation's split: the rows of one optimizer mini-batch into micro-batches that
//! each fit a budget of padded tokens (`train.micro_batch_tokens`).
//!
//! A packed micro-batch costs rows × its longest row (prompt + response) in every `[B, T]`
//! activation, so that product is what the budget bounds. Rows keep their order; a row longer
//! than the budget on its own is a micro-batch by itself.

use crate::batch::Sample;

/// Splits `rows` (indices into `samples`) into consecutive micro-batches of at most `budget`
/// padded tokens each; `budget = 0` keeps `rows` whole.
pub fn split_rows(samples: &[Sample], rows: &[usize], budget: usize) -> Vec<Vec<usize>> {
    if budget == 0 || rows.is_empty() {
        return vec![rows.to_vec()];
    }
    let len = |i: usize| samples[i].prompt.len() + samples[i].response.len();
    let mut parts: Vec<Vec<usize>> = Vec::new();
    let (mut current, mut longest) = (Vec::new(), 0usize);
    for &i in rows {
        let longest_with = longest.max(len(i));
        if !current.is_empty() && (current.len() + 1) * longest_with > budget {
            parts.push(std::mem::take(&mut current));
            longest = 0;
        }
        longest = longest.max(len(i));
        current.push(i);
    }
    parts.push(current);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(prompt: usize, response: usize) -> Sample {
        let (ids, logp) = (vec![2; response], vec![0.0; response]);
        Sample::unscored(
            0,
            vec![1; prompt],
            ids,
            logp,
            rlvr_models::FinishReason::Stop,
        )
    }

    /// Lengths (prompt + response) 10, 10, 30, 5, 5 with a budget of 40: [0, 1] (2 × 10 = 20;
    /// adding row 2 would make 3 × 30 = 90), [2] (adding row 3 would make 2 × 30 = 60), [3, 4]
    /// (2 × 5 = 10).
    #[test]
    fn splits_by_padded_tokens_in_order() {
        let samples = vec![
            sample(4, 6),
            sample(4, 6),
            sample(4, 26),
            sample(4, 1),
            sample(4, 1),
        ];
        let rows: Vec<usize> = (0..5).collect();
        assert_eq!(
            split_rows(&samples, &rows, 40),
            vec![vec![0, 1], vec![2], vec![3, 4]]
        );
        // Every part fits the budget unless it is a single row.
        for part in split_rows(&samples, &rows, 25) {
            let longest = part.iter().map(|&i| 4 + samples[i].response.len()).max();
            assert!(
                part.len() == 1 || part.len() * longest.unwrap() <= 25,
                "{part:?}"
            );
        }
        assert_eq!(split_rows(&samples, &rows, 0), vec![rows.clone()]);
        assert_eq!(split_rows(&samples, &rows, 1000), vec![rows.clone()]);
        assert_eq!(split_rows(&samples, &rows, 1).len(), 5);
    }
}
