//! Conditioned scoring: the log-probs of each sample's response tokens under the policy when a
//! context is inserted between its prompt and its response,
//! `[prompt tokens ⊕ context tokens ⊕ response tokens]` (methods-extra §24's conditional
//! log-probs provider: CEPO's r± contexts, OPPO's oracle context).
//!
//! The rows are packed and scored like a rescored rollout (`logprobs::score_responses`: the same
//! packing, the same scored window, the same rows per forward pass), at the rollout
//! temperature, on a no-grad policy.

use rlvr_models::CausalLm;

use crate::batch::Sample;
use crate::logprobs::score_responses;

/// Log-probs of the response tokens of `samples[rows[j]]` after `prompt ⊕ contexts[j]`, one
/// vector per row (one value per response token), under `policy` (pass `model().valid()`:
/// nothing here needs a gradient) at `temperature`. An empty context gives the sample's own
/// rescored log-probs.
///
/// # Panics
/// If `rows` and `contexts` differ in length.
pub fn conditioned_logprobs(
    policy: &CausalLm,
    samples: &[Sample],
    rows: &[usize],
    contexts: &[Vec<u32>],
    temperature: f32,
    pad_id: u32,
) -> Vec<Vec<f32>> {
    assert_eq!(rows.len(), contexts.len(), "one context per scored row");
    let altered: Vec<Sample> = rows
        .iter()
        .zip(contexts)
        .map(|(&i, ctx)| {
            let s = &samples[i];
            let prompt = [s.prompt.as_slice(), ctx].concat();
            // The scorer reads only the ids and which tokens to score (one old log-prob each).
            let marks = vec![0.0; s.response.len()];
            Sample::unscored(s.example, prompt, s.response.clone(), marks, s.finish)
        })
        .collect();
    score_responses(policy, &altered, temperature, None, pad_id).0
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Int, Tensor, TensorData};
    use rlvr_models::{FinishReason, ModelConfig};

    use super::*;
    use crate::logprobs::rescore;

    fn samples() -> Vec<Sample> {
        [
            (vec![3u32, 4], vec![5u32, 6, 7]),
            (vec![8, 9, 10], vec![11, 1]),
            (vec![4], vec![12, 13, 14, 15]),
        ]
        .into_iter()
        .map(|(p, r)| {
            let lp = vec![-1.0; r.len()];
            Sample::unscored(0, p, r, lp, FinishReason::Stop)
        })
        .collect()
    }

    /// With empty contexts the conditioned log-probs are the samples' own rescored ones; with
    /// contexts of different lengths on a subset of rows, each row equals a direct
    /// `token_logprobs_at` on its concatenated ids alone (a batch of one, no padding).
    #[test]
    fn contexts_condition_the_response_scores() {
        let device = Device::flex();
        let model = CausalLm::new(&ModelConfig::tiny(16, 8, 2), &device);
        let temperature = 1.5;
        let mut rescored = samples();
        let rollout = crate::config::RolloutSection {
            temperature,
            ..Default::default()
        };
        rescore(&model, &mut rescored, &rollout, 0);
        let all: Vec<usize> = (0..3).collect();
        let empty =
            conditioned_logprobs(&model, &samples(), &all, &vec![vec![]; 3], temperature, 0);
        for (s, got) in rescored.iter().zip(&empty) {
            assert_eq!(got.len(), s.old_logp.len());
            for (a, b) in got.iter().zip(&s.old_logp) {
                assert!((a - b).abs() < 1e-5, "{got:?} vs {:?}", s.old_logp);
            }
        }
        let rows = [2usize, 0];
        let contexts = vec![vec![9u32, 9, 2], vec![6u32]];
        let got = conditioned_logprobs(&model, &samples(), &rows, &contexts, temperature, 0);
        let plain = samples();
        for ((&i, ctx), row) in rows.iter().zip(&contexts).zip(&got) {
            let s = &plain[i];
            let ids: Vec<i64> = s
                .prompt
                .iter()
                .chain(ctx)
                .chain(&s.response)
                .map(|&t| i64::from(t))
                .collect();
            let start = s.prompt.len() + ctx.len();
            let mask: Vec<f32> = (0..ids.len())
                .map(|t| f32::from(u8::from(t >= start)))
                .collect();
            let n = ids.len();
            let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [1, n]), &device);
            let mask = Tensor::<2>::from_data(TensorData::new(mask, [1, n]), &device);
            let direct: Vec<f32> = rlvr_models::token_logprobs_at(&model, ids, mask, temperature)
                .logp
                .into_data()
                .try_to_vec()
                .unwrap();
            assert_eq!(row.len(), s.response.len());
            for (k, lp) in row.iter().enumerate() {
                assert!(
                    (lp - direct[start + k]).abs() < 1e-5,
                    "{row:?} vs {direct:?}"
                );
            }
            // The context changes the scores (the same tokens without it).
            let own = &empty[i];
            assert!(row.iter().zip(own).any(|(a, b)| (a - b).abs() > 1e-4));
        }
    }
}
