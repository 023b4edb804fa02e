//! Packing samples into right-padded `[B, T]` tensors for scoring and the loss.
//!
//! Row b is `prompt ++ response ++ pad`. `mask[b, t] = 1` exactly on the response tokens, so
//! `logp[b, t]` (the log-prob of token t given the tokens before it) lines up with the sampler's
//! log-probs, the advantages and the mask, position by position.

use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::rollout::Sample;

/// A right-padded batch.
#[derive(Debug, Clone)]
pub struct PackedBatch {
    /// Token ids `[B, T]`.
    pub ids: Tensor<2, Int>,
    /// 1 on response tokens, 0 elsewhere `[B, T]`.
    pub mask: Tensor<2>,
    /// Sampler log-probs on response tokens, 0 elsewhere `[B, T]`.
    pub old_logp: Tensor<2>,
    /// The sequence's advantage on its response tokens, 0 elsewhere `[B, T]`.
    pub advantages: Tensor<2>,
    /// Response lengths (number of mask ones per row).
    pub lengths: Vec<usize>,
}

/// Packs `samples[i]` for `i` in `rows`.
pub fn pack(samples: &[Sample], rows: &[usize], pad_id: u32, device: &Device) -> PackedBatch {
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
    let mut adv = vec![0f32; b * width];
    let mut lengths = Vec::with_capacity(b);
    for (r, &i) in rows.iter().enumerate() {
        let s = &samples[i];
        let row = r * width;
        for (t, &tok) in s.prompt.iter().chain(&s.response).enumerate() {
            ids[row + t] = i64::from(tok);
        }
        for (k, &lp) in s.old_logp.iter().enumerate().take(s.response.len()) {
            let t = row + s.prompt.len() + k;
            mask[t] = 1.0;
            old[t] = lp;
            adv[t] = s.advantage;
        }
        lengths.push(s.response.len());
    }
    let shape = [b, width];
    PackedBatch {
        ids: Tensor::from_data(TensorData::new(ids, shape), device),
        mask: Tensor::from_data(TensorData::new(mask, shape), device),
        old_logp: Tensor::from_data(TensorData::new(old, shape), device),
        advantages: Tensor::from_data(TensorData::new(adv, shape), device),
        lengths,
    }
}
