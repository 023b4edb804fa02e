//! A sampled response ([`Sample`]) and the packing of samples into right-padded `[B, T]`
//! tensors for scoring and the loss.
//!
//! Row b is `prompt ++ response ++ pad`. `mask[b, t] = 1` exactly on the response tokens the
//! policy wrote (all of them, except an environment's observations in a multi-turn episode), so
//! `logp[b, t]` (the log-prob of token t given the tokens before it) lines up with the sampler's
//! log-probs, the advantages and the mask, position by position.

use burn::tensor::{Device, Int, Tensor, TensorData};
use rlvr_models::FinishReason;

/// One sampled response and what the update needs of it.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Index of the example in the dataset.
    pub example: usize,
    /// Prompt token ids.
    pub prompt: Vec<u32>,
    /// Response token ids, including the stop token when it stopped.
    pub response: Vec<u32>,
    /// Log-probs of the response tokens under the policy that generated them, at the rollout
    /// temperature: log softmax(logits / T) (the trained policy is the temperature-scaled one).
    pub old_logp: Vec<f32>,
    /// Why sampling stopped.
    pub finish: FinishReason,
    /// The step whose weights sampled it (the policy after that many RL steps): the current
    /// step's, or an older one with asynchronous rollouts (`rollout.max_staleness`).
    pub policy_version: usize,
    /// The decoded response (special tokens removed).
    pub text: String,
    /// Verifier reward, filled by the verify stage.
    pub reward: f32,
    /// Whether the verifier judged the response correct, filled by the verify stage.
    pub passed: bool,
    /// The answer the verifier extracted, if any (EDAS compares wrong answers by it).
    pub extracted: Option<String>,
    /// Advantage, filled by the advantage stage.
    pub advantage: f32,
    /// Per-token additions to `advantage`, one per response token (SRaR's step offsets); empty
    /// when no stage sets them.
    pub token_offsets: Vec<f32>,
    /// The dense code reward's localized penalties (character spans of `text`), filled by the
    /// verify stage; empty for every other verifier (`step/exec_credit.rs` maps them to tokens).
    pub penalty_spans: Vec<rlvr_verifiers::PenaltySpan>,
    /// Per-token loss coefficients, one per response token (DelTA's c, for the self-normalized
    /// aggregation); empty when no stage sets them (every coefficient 1).
    pub token_coef: Vec<f32>,
    /// Per response token, whether the policy wrote it (trained on) or an environment did (a
    /// tool's response in a multi-turn episode: masked out of the loss); empty when every
    /// token is the policy's.
    pub loss_mask: Vec<bool>,
    /// A multi-turn episode's policy turns (token spans and belief checks, ReBel's input);
    /// empty on the one-turn path.
    pub steps: Vec<rlvr_objectives::StepCredit>,
}

impl Sample {
    /// A sample as sampling leaves it: its ids, the generating policy's log-probs and why it
    /// stopped; text, reward, verdict and advantage are filled by the later phases.
    pub fn unscored(
        example: usize,
        prompt: Vec<u32>,
        response: Vec<u32>,
        old_logp: Vec<f32>,
        finish: FinishReason,
    ) -> Self {
        Self {
            example,
            prompt,
            response,
            old_logp,
            finish,
            policy_version: 0,
            text: String::new(),
            reward: 0.0,
            passed: false,
            extracted: None,
            advantage: 0.0,
            token_offsets: Vec::new(),
            penalty_spans: Vec::new(),
            token_coef: Vec::new(),
            loss_mask: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// Whether response token `k` is the policy's own (in the loss).
    pub fn trains_on(&self, k: usize) -> bool {
        self.loss_mask.get(k).copied().unwrap_or(true)
    }

    /// The number of response tokens the policy wrote (all of them without an environment).
    pub fn policy_tokens(&self) -> usize {
        if self.loss_mask.is_empty() {
            self.response.len()
        } else {
            self.loss_mask.iter().filter(|&&m| m).count()
        }
    }
}

/// The batch rows of `prompt_ids` with `group_size` responses each: every prompt repeated.
pub fn group_rows(prompt_ids: &[Vec<u32>], group_size: usize) -> Vec<Vec<u32>> {
    let mut prompts = Vec::with_capacity(prompt_ids.len() * group_size);
    for ids in prompt_ids {
        for _ in 0..group_size {
            prompts.push(ids.clone());
        }
    }
    prompts
}

/// A right-padded batch.
#[derive(Debug, Clone)]
pub struct PackedBatch {
    /// Token ids `[B, T]`.
    pub ids: Tensor<2, Int>,
    /// 1 on the policy's response tokens, 0 elsewhere (prompt, observations, padding) `[B, T]`.
    pub mask: Tensor<2>,
    /// Log-probs of the generating policy on response tokens, 0 elsewhere `[B, T]`.
    pub old_logp: Tensor<2>,
    /// Log-probs of the sampler (after top-k / top-p) on response tokens, 0 elsewhere `[B, T]`.
    pub sampler_logp: Tensor<2>,
    /// The sequence's advantage plus its per-token offset (SRaR) on its response tokens, 0
    /// elsewhere `[B, T]`.
    pub advantages: Tensor<2>,
    /// Policy tokens per row (number of mask ones).
    pub lengths: Vec<usize>,
    /// Per-token loss coefficients `[B, T]` (DelTA's c on response tokens, 1 elsewhere and on
    /// samples without them); `None` when no sample of the batch has any.
    pub token_coef: Option<Tensor<2>>,
}

/// Packs `samples[i]` for `i` in `rows`; the sampler's log-probs are the policy's
/// (`sampler_logp` = `old_logp`).
pub fn pack(samples: &[Sample], rows: &[usize], pad_id: u32, device: &Device) -> PackedBatch {
    pack_with_sampler(samples, None, rows, pad_id, device)
}

/// [`pack`] with the sampler's own log-probs: `sampler_logp[i]` per response token of
/// `samples[i]` (the policy restricted to the top-k / top-p set, renormalized), `None` when
/// sampling does not truncate and the sampler is the policy.
///
/// # Panics
/// If `sampler_logp` is given and its length differs from `samples`'.
pub fn pack_with_sampler(
    samples: &[Sample],
    sampler_logp: Option<&[Vec<f32>]>,
    rows: &[usize],
    pad_id: u32,
    device: &Device,
) -> PackedBatch {
    if let Some(s) = sampler_logp {
        assert_eq!(
            s.len(),
            samples.len(),
            "one sampler log-prob row per sample"
        );
    }
    let width = rows
        .iter()
        .map(|&i| samples[i].prompt.len() + samples[i].response.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let b = rows.len();
    let mut ids = vec![pad_id as i64; b * width];
    let mut mask = vec![0f32; b * width];
    let mut old = vec![0f32; b * width];
    let mut sampler = vec![0f32; b * width];
    let mut adv = vec![0f32; b * width];
    let mut lengths = Vec::with_capacity(b);
    let weighted = rows.iter().any(|&i| !samples[i].token_coef.is_empty());
    let mut coef = if weighted {
        vec![1f32; b * width]
    } else {
        Vec::new()
    };
    for (r, &i) in rows.iter().enumerate() {
        let s = &samples[i];
        let row = r * width;
        for (t, &tok) in s.prompt.iter().chain(&s.response).enumerate() {
            ids[row + t] = i64::from(tok);
        }
        for (k, &lp) in s.old_logp.iter().enumerate().take(s.response.len()) {
            let t = row + s.prompt.len() + k;
            if !s.trains_on(k) {
                continue;
            }
            mask[t] = 1.0;
            old[t] = lp;
            sampler[t] = sampler_logp.map_or(lp, |v| v[i][k]);
            adv[t] = s.advantage + s.token_offsets.get(k).copied().unwrap_or(0.0);
            if let Some(&c) = s.token_coef.get(k).filter(|_| weighted) {
                coef[t] = c;
            }
        }
        lengths.push(s.policy_tokens());
    }
    let shape = [b, width];
    PackedBatch {
        ids: Tensor::from_data(TensorData::new(ids, shape), device),
        mask: Tensor::from_data(TensorData::new(mask, shape), device),
        old_logp: Tensor::from_data(TensorData::new(old, shape), device),
        sampler_logp: Tensor::from_data(TensorData::new(sampler, shape), device),
        advantages: Tensor::from_data(TensorData::new(adv, shape), device),
        lengths,
        token_coef: weighted.then(|| Tensor::from_data(TensorData::new(coef, shape), device)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(prompt: Vec<u32>, response: Vec<u32>, advantage: f32, offsets: Vec<f32>) -> Sample {
        let old_logp = vec![-0.5; response.len()];
        Sample {
            advantage,
            token_offsets: offsets,
            ..Sample::unscored(0, prompt, response, old_logp, FinishReason::Stop)
        }
    }

    /// Row 0: prompt of 2, response of 3 with offsets (0.5, 0, −0.25) on advantage 1 → the
    /// advantage row is (0, 0, 1.5, 1, 0.75); row 1 has no offsets and one pad.
    #[test]
    fn token_offsets_add_to_the_sequence_advantage_position_by_position() {
        let samples = vec![
            sample(vec![1, 2], vec![3, 4, 5], 1.0, vec![0.5, 0.0, -0.25]),
            sample(vec![1], vec![3, 4, 5], -2.0, vec![]),
        ];
        let p = pack(&samples, &[0, 1], 0, &Device::flex());
        let adv = p.advantages.into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(
            adv,
            vec![0.0, 0.0, 1.5, 1.0, 0.75, 0.0, -2.0, -2.0, -2.0, 0.0]
        );
        let mask = p.mask.into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(mask, vec![0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0]);
    }

    /// An observation token (loss mask false) is out of the mask, the advantages and the
    /// length, and its id stays in the row.
    #[test]
    fn observation_tokens_are_packed_but_masked_out() {
        let mut s = sample(vec![1], vec![3, 9, 4], 2.0, vec![]);
        s.loss_mask = vec![true, false, true];
        let p = pack(&[s], &[0], 0, &Device::flex());
        let ids = p
            .ids
            .into_data()
            .convert::<i64>()
            .try_to_vec::<i64>()
            .unwrap();
        assert_eq!(ids, vec![1, 3, 9, 4]);
        let mask = p.mask.into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(mask, vec![0.0, 1.0, 0.0, 1.0]);
        let adv = p.advantages.into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(adv, vec![0.0, 2.0, 0.0, 2.0]);
        assert_eq!(p.lengths, vec![2]);
    }
}
