//! Log-probs of the trained policy and of the sampler.
//!
//! The trained policy is softmax(logits / T) at the rollout temperature T (as verl and TRL
//! train it), so the behaviour policy of an untruncated rollout is exactly the policy whose
//! log-probs are stored. Top-k / top-p sampling draws from that policy restricted to a set and
//! renormalized; its log-probs are the sampler's, which truncated importance sampling
//! (`objective.tis`) compares with the policy's. At T = 1 the update's scores are
//! `rlvr_models::token_logprobs` unchanged.

use burn::tensor::Tensor;
use rlvr_models::{CausalLm, scored_log_softmax};

use crate::batch::{Sample, pack};
use crate::config::RolloutSection;

/// Rows scored per forward pass when rescoring a rollout (bounds the `[rows, T, V]` tensors).
const RESCORE_ROWS: usize = 16;

/// Whether the stored log-probs need a rescoring pass after generation: generation reports
/// log softmax of the raw logits, which is the policy only at T = 1, and the sampler only
/// without truncation.
pub fn needs_rescoring(rollout: &RolloutSection) -> bool {
    rollout.temperature != 1.0 || truncates(rollout)
}

/// Whether top-k or top-p sampling makes the sampler differ from the policy.
pub fn truncates(rollout: &RolloutSection) -> bool {
    rollout.top_p < 1.0 || rollout.top_k > 0
}

/// Rescores a rollout with the no-grad policy that generated it: sets every sample's
/// `old_logp` to the policy's log-probs at the rollout temperature and returns the sampler's
/// log-probs per sample (the policy restricted to the top-k / top-p set, renormalized), or
/// `None` when sampling does not truncate.
pub fn rescore(
    policy: &CausalLm,
    samples: &mut [Sample],
    rollout: &RolloutSection,
    pad_id: u32,
) -> Option<Vec<Vec<f32>>> {
    let truncation = truncates(rollout).then_some(rollout);
    let (policy_rows, sampler) =
        score_responses(policy, samples, rollout.temperature, truncation, pad_id);
    for (s, lp) in samples.iter_mut().zip(policy_rows) {
        s.old_logp = lp;
    }
    sampler
}

/// The log-probs of every sample's response tokens under `policy` at `temperature`, one vector
/// per sample (`RESCORE_ROWS` rows per forward pass, the LM head over the scored window only),
/// and with `truncation` also the sampler's (the policy restricted to that section's top-k /
/// top-p set, renormalized). The samples' own `old_logp` only mark the scored tokens.
pub fn score_responses(
    policy: &CausalLm,
    samples: &[Sample],
    temperature: f32,
    truncation: Option<&RolloutSection>,
    pad_id: u32,
) -> (Vec<Vec<f32>>, Option<Vec<Vec<f32>>>) {
    let device = policy.device();
    let mut out: Vec<Vec<f32>> = samples
        .iter()
        .map(|s| vec![0.0; s.response.len()])
        .collect();
    let mut sampler = truncation.map(|_| out.clone());
    let rows: Vec<usize> = (0..samples.len()).collect();
    for chunk in rows.chunks(RESCORE_ROWS) {
        let packed = pack(samples, chunk, pad_id, &device);
        let Some((logp_all, targets, s)) =
            scored_log_softmax(policy, packed.ids, &packed.mask, temperature)
        else {
            continue;
        };
        let logp = logp_all.clone().gather(2, targets).squeeze_dim::<2>(2); // [B, T-s]
        let sampler_logp = truncation.map(|r| logp.clone() - truncated_log_mass(logp_all, r)); // [B, T-s]
        let host = |t: Tensor<2>| -> Vec<f32> {
            t.into_data()
                .convert::<f32>()
                .try_to_vec::<f32>()
                .expect("f32 log-probs")
        };
        let width = logp.dims()[1];
        let policy_rows = host(logp);
        let sampler_rows = sampler_logp.map(host);
        for (r, &i) in chunk.iter().enumerate() {
            let sample = &samples[i];
            // Response token k sits at column prompt + k, i.e. at prompt + k − s of the window.
            let start = r * width + sample.prompt.len() - s;
            let n = sample.response.len();
            out[i] = policy_rows[start..start + n].to_vec();
            if let (Some(all), Some(rows)) = (sampler.as_mut(), &sampler_rows) {
                all[i] = rows[start..start + n].to_vec();
            }
        }
    }
    (out, sampler)
}

/// log Σ_{v ∈ kept} p_T(v) per position, `[B, S]`, for the sampler's kept set: the `top_k`
/// most likely tokens, then the smallest prefix of them (by probability) whose mass reaches
/// `top_p` of theirs, as `rlvr_models::Sampler` draws (ties aside).
fn truncated_log_mass(logp_all: Tensor<3>, rollout: &RolloutSection) -> Tensor<2> {
    let [b, s, v] = logp_all.dims();
    let sorted = logp_all.clone().sort_descending(2); // [B, S, V]
    let k = if rollout.top_k > 0 {
        rollout.top_k.min(v)
    } else {
        v
    };
    let probs = sorted.clone().narrow(2, 0, k).exp(); // [B, S, k]
    let threshold = if rollout.top_p < 1.0 {
        let mass = probs.clone().sum_dim(2); // [B, S, 1]
        let before = probs.clone().cumsum(2) - probs; // mass of the more likely candidates
        let target = mass.mul_scalar(rollout.top_p).repeat_dim(2, k);
        let count = before.lower(target).float().sum_dim(2); // [B, S, 1], >= 1
        let last = (count - 1.0).int().clamp_min(0); // index of the least likely kept token
        sorted.gather(2, last) // [B, S, 1]
    } else {
        sorted.narrow(2, k - 1, 1) // [B, S, 1]
    };
    let keep = logp_all
        .clone()
        .greater_equal(threshold.repeat_dim(2, v))
        .float(); // [B, S, V]
    (logp_all.exp() * keep).sum_dim(2).log().reshape([b, s]) // [B, S]
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};
    use rlvr_models::{GenerationConfig, ModelConfig, generate};

    fn rollout(temperature: f32, top_p: f32, top_k: usize) -> RolloutSection {
        RolloutSection {
            temperature,
            top_p,
            top_k,
            ..RolloutSection::default()
        }
    }

    /// Hand check of the kept mass on one position with p = (0.5, 0.3, 0.2): top_k = 2 keeps
    /// 0.8; top_p = 0.6 keeps the prefix (0.5, 0.3) whose mass first reaches 0.6; top_p = 0.5
    /// keeps 0.5 alone (the mass before the second candidate already reaches the target).
    #[test]
    fn the_kept_mass_follows_the_samplers_rule() {
        let device = Device::flex();
        let logp = Tensor::<3>::from_data(
            TensorData::new(vec![0.3f32.ln(), 0.5f32.ln(), 0.2f32.ln()], [1, 1, 3]),
            &device,
        );
        let mass = |r: RolloutSection| {
            let v: Vec<f32> = truncated_log_mass(logp.clone(), &r)
                .exp()
                .into_data()
                .try_to_vec()
                .unwrap();
            v[0]
        };
        assert!((mass(rollout(1.0, 1.0, 2)) - 0.8).abs() < 1e-6);
        assert!((mass(rollout(1.0, 0.6, 0)) - 0.8).abs() < 1e-6);
        assert!((mass(rollout(1.0, 0.5, 0)) - 0.5).abs() < 1e-6);
        assert!((mass(rollout(1.0, 0.9, 1)) - 0.5).abs() < 1e-6);
    }

    /// At T = 1 the rescored policy log-probs equal the ones generation reports (a teacher-
    /// forced pass of the same policy), and at T = 2 they equal log softmax(logits / 2), which
    /// `rlvr_models::token_logprobs_at` gives too.
    #[test]
    fn rescoring_matches_generation_at_t1_and_the_scaled_policy_at_t2() {
        let device = Device::flex();
        let config = ModelConfig::tiny(16, 8, 2);
        let model = CausalLm::new(&config, &device);
        let gen_cfg = GenerationConfig {
            max_new_tokens: 4,
            temperature: 1.0,
            top_k: None,
            top_p: None,
            stop_token_ids: Vec::new(),
            pad_token_id: 0,
        };
        let outs = generate(&model, &[vec![3, 4], vec![5, 6, 7]], &gen_cfg, 7);
        let mut samples: Vec<Sample> = outs
            .iter()
            .zip([vec![3, 4], vec![5, 6, 7]])
            .map(|(o, prompt)| {
                let (tokens, logprobs) = (o.tokens.clone(), o.logprobs.clone());
                Sample::unscored(0, prompt, tokens, logprobs, o.finish_reason)
            })
            .collect();
        let generated: Vec<Vec<f32>> = samples.iter().map(|s| s.old_logp.clone()).collect();
        let none = rescore(&model, &mut samples, &rollout(1.0, 1.0, 0), 0);
        assert!(none.is_none());
        for (s, g) in samples.iter().zip(&generated) {
            for (a, b) in s.old_logp.iter().zip(g) {
                assert!((a - b).abs() < 1e-4, "{a} vs {b}");
            }
        }
        let sampler = rescore(&model, &mut samples, &rollout(2.0, 0.5, 0), 0).unwrap();
        let packed = pack(&samples, &[0, 1], 0, &device);
        let scores = rlvr_models::token_logprobs_at(&model, packed.ids, packed.mask, 2.0);
        let rows: Vec<f32> = scores.logp.into_data().try_to_vec().unwrap();
        let width = rows.len() / 2;
        for (r, s) in samples.iter().enumerate() {
            for (k, lp) in s.old_logp.iter().enumerate() {
                let at = rows[r * width + s.prompt.len() + k];
                assert!((lp - at).abs() < 1e-4, "{lp} vs {at}");
                assert_ne!(*lp, generated[r][k], "T = 2 must change the log-probs");
                // The sampler renormalizes over a subset: its log-prob is at least the policy's.
                assert!(sampler[r][k] >= lp - 1e-6);
            }
        }
    }
}
