//! A step-level decoding batch for continuous batching: rows join (prefilled) and leave
//! between decode steps, sharing one left-padded KV cache.
//!
//! [`generate`](crate::generate) runs a fixed set of prompts to the end. A server instead
//! admits new requests while others are still decoding: [`DecodeBatch::prefill`] runs the new
//! prompts on their own, left-pads the shorter of the two caches (the batch's or the new
//! rows') to the other's length and appends the new rows; [`DecodeBatch::step`] feeds one token
//! per row; [`DecodeBatch::retain`] drops finished rows and the padding columns no remaining row
//! needs. Every row keeps its own padding count, so its RoPE positions start at 0 at its first
//! real token and padded keys are masked out: a row's logits do not depend on the other rows
//! (up to float rounding). Sampling stays with the caller ([`Sampler`](crate::Sampler), one RNG
//! per row), so a seeded row draws the same tokens alone or batched.

use burn::tensor::{Bool, Int, Tensor, TensorData};

use crate::kv_cache::KvCache;
use crate::model::{CausalLm, ForwardArgs, Positions};

/// Rows decoding together: their KV cache and each row's left padding.
///
/// Run it on `model.valid()`, like [`generate`](crate::generate).
#[derive(Debug, Clone)]
pub struct DecodeBatch {
    cache: KvCache,
    /// Left padding (masked cache columns) of each row.
    pads: Vec<usize>,
    num_layers: usize,
}

impl DecodeBatch {
    /// An empty batch for a model with `num_layers` decoder blocks.
    pub fn new(num_layers: usize) -> Self {
        Self {
            cache: KvCache::new(num_layers),
            pads: Vec::new(),
            num_layers,
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.pads.len()
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.pads.is_empty()
    }

    /// Cached positions per row, padding included.
    pub fn seq_len(&self) -> usize {
        self.cache.seq_len()
    }

    /// Left padding of each row (cache columns it never attends to).
    pub fn pads(&self) -> &[usize] {
        &self.pads
    }

    /// Runs `prompts` through the model (left-padded among themselves with `pad_token_id`),
    /// appends them as the last rows of the batch and returns their last-position logits,
    /// row-major `[prompts.len(), V]`: the distribution of each row's first new token.
    ///
    /// # Panics
    /// If a prompt is empty or holds an id `>= vocab_size`.
    pub fn prefill(
        &mut self,
        model: &CausalLm,
        prompts: &[Vec<u32>],
        pad_token_id: u32,
    ) -> Vec<f32> {
        let vocab = model.vocab_size();
        for (i, p) in prompts.iter().enumerate() {
            assert!(!p.is_empty(), "DecodeBatch::prefill: prompt {i} is empty");
            if let Some(&bad) = p.iter().find(|&&t| t as usize >= vocab) {
                panic!(
                    "DecodeBatch::prefill: prompt {i} holds token id {bad} >= vocab_size {vocab}"
                );
            }
        }
        if prompts.is_empty() {
            return Vec::new();
        }
        let device = model.device();
        let t = prompts.iter().map(Vec::len).max().unwrap_or(0);
        let mut pads: Vec<usize> = prompts.iter().map(|p| t - p.len()).collect();
        let mut ids = Vec::with_capacity(prompts.len() * t);
        for (p, &pad) in prompts.iter().zip(&pads) {
            ids.extend(std::iter::repeat_n(i64::from(pad_token_id), pad));
            ids.extend(p.iter().map(|&x| i64::from(x)));
        }
        let (positions, mask) = if pads.iter().any(|&p| p > 0) {
            let positions = pads
                .iter()
                .flat_map(|&pad| (0..t).map(move |i| i.saturating_sub(pad) as i64))
                .collect();
            // Query q may not see key k when k is in its future or is padding; a padding
            // query keeps itself so that no softmax row is empty.
            let mut blocked = Vec::with_capacity(pads.len() * t * t);
            for &pad in &pads {
                for q in 0..t {
                    blocked.extend((0..t).map(|k| k > q || (k < pad && k != q)));
                }
            }
            let mask = Tensor::<4, Bool>::from_data(
                TensorData::new(blocked, [pads.len(), 1, t, t]),
                &device,
            );
            (Positions::PerToken(positions), Some(mask))
        } else {
            (Positions::Range(0), None)
        };
        let mut cache = KvCache::new(self.num_layers);
        let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [prompts.len(), t]), &device);
        let hidden = model.hidden(
            ids,
            ForwardArgs {
                positions,
                mask,
                cache: Some(&mut cache),
            },
        );
        let logits = last_logits(model, hidden);

        // Bring both caches to one length, then stack the new rows under the old ones.
        let old_len = self.cache.seq_len();
        if self.is_empty() {
            self.cache = cache;
        } else {
            let len = old_len.max(t);
            self.cache.pad_front(len - old_len);
            self.pads.iter_mut().for_each(|p| *p += len - old_len);
            cache.pad_front(len - t);
            pads.iter_mut().for_each(|p| *p += len - t);
            self.cache.append_rows(cache);
        }
        self.pads.extend(pads);
        logits
    }

    /// One decode step: feeds `tokens[i]` to row `i` and returns the next-token logits of
    /// every row, row-major `[rows, V]`.
    ///
    /// # Panics
    /// If `tokens.len()` differs from the number of rows or the batch is empty.
    pub fn step(&mut self, model: &CausalLm, tokens: &[u32]) -> Vec<f32> {
        assert!(!self.is_empty(), "DecodeBatch::step: the batch is empty");
        assert_eq!(
            tokens.len(),
            self.len(),
            "DecodeBatch::step: one token per row"
        );
        let device = model.device();
        let b = self.len();
        let cache_len = self.cache.seq_len();
        let padded = self.pads.iter().any(|&p| p > 0);
        let positions = if padded {
            Positions::PerToken(
                self.pads
                    .iter()
                    .map(|&pad| (cache_len - pad) as i64)
                    .collect(),
            )
        } else {
            Positions::Range(cache_len)
        };
        let mask = padded.then(|| {
            let blocked: Vec<bool> = self
                .pads
                .iter()
                .flat_map(|&pad| (0..=cache_len).map(move |k| k < pad))
                .collect();
            Tensor::<4, Bool>::from_data(
                TensorData::new(blocked, [b, 1, 1, cache_len + 1]),
                &device,
            )
        });
        let ids = Tensor::<2, Int>::from_data(
            TensorData::new(tokens.iter().map(|&x| i64::from(x)).collect(), [b, 1]),
            &device,
        );
        let hidden = model.hidden(
            ids,
            ForwardArgs {
                positions,
                mask,
                cache: Some(&mut self.cache),
            },
        );
        last_logits(model, hidden)
    }

    /// Keeps only the rows listed in `keep` (indices into the current rows, in that order) and
    /// removes the leading cache columns that every remaining row has as padding.
    pub fn retain(&mut self, keep: &[usize]) {
        if keep.is_empty() {
            *self = Self::new(self.num_layers);
            return;
        }
        let identity = keep.len() == self.len() && keep.iter().enumerate().all(|(i, &k)| i == k);
        if !identity {
            let device = self.device();
            let rows = Tensor::<1, Int>::from_data(
                TensorData::new(
                    keep.iter().map(|&s| s as i64).collect::<Vec<_>>(),
                    [keep.len()],
                ),
                &device,
            );
            self.cache.select_rows(&rows);
            self.pads = keep.iter().map(|&s| self.pads[s]).collect();
        }
        let common = self.pads.iter().copied().min().unwrap_or(0);
        if common > 0 {
            self.cache.drop_front(common);
            self.pads.iter_mut().for_each(|p| *p -= common);
        }
    }

    fn device(&self) -> burn::tensor::Device {
        self.cache
            .device()
            .expect("a batch with rows has a non-empty cache")
    }
}

/// Logits of the last position, copied to the host: `[B, T, hidden]` → row-major `[B, V]`.
fn last_logits(model: &CausalLm, hidden: Tensor<3>) -> Vec<f32> {
    let [_, t, _] = hidden.dims();
    model
        .logits(hidden.narrow(1, t - 1, 1))
        .into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .expect("f32 logits")
}

#[cfg(test)]
mod tests {
    use burn::tensor::Device;

    use super::*;
    use crate::config::ModelConfig;

    fn tiny() -> CausalLm {
        CausalLm::new(&ModelConfig::tiny(32, 64, 2), &Device::flex())
    }

    fn argmax(row: &[f32]) -> u32 {
        (0..row.len()).fold(0, |b, i| if row[i] > row[b] { i } else { b }) as u32
    }

    fn close(x: &[f32], y: &[f32]) {
        assert_eq!(x.len(), y.len());
        for (a, b) in x.iter().zip(y) {
            assert!((a - b).abs() < 1e-4, "{a} vs {b}");
        }
    }

    #[test]
    fn joining_and_leaving_rows_keep_a_rows_logits() {
        // Row A decodes alone for 3 steps, then B (a longer prompt) joins, decodes one step and
        // leaves: at every step A's logits equal those of A in a batch of its own.
        let model = tiny();
        let a = vec![3u32, 4, 5];
        let b = vec![7u32, 8, 9, 10, 11, 12, 13];
        let mut alone = DecodeBatch::new(model.num_layers());
        let mut mixed = DecodeBatch::new(model.num_layers());
        let mut la = alone.prefill(&model, std::slice::from_ref(&a), 0);
        close(&la, &mixed.prefill(&model, std::slice::from_ref(&a), 0));
        for _ in 0..3 {
            let t = argmax(&la);
            la = alone.step(&model, &[t]);
            close(&la, &mixed.step(&model, &[t]));
        }
        let lb = mixed.prefill(&model, std::slice::from_ref(&b), 0);
        assert_eq!(mixed.len(), 2);
        // A holds 3 + 3 = 6 columns, B 7: A gets one padding column.
        assert_eq!(mixed.pads(), &[1, 0]);
        let (ta, tb) = (argmax(&la), argmax(&lb));
        la = alone.step(&model, &[ta]);
        let both = mixed.step(&model, &[ta, tb]);
        close(&la, &both[..32]);
        // B leaves: A's padding column is no longer needed by anyone and is dropped.
        mixed.retain(&[0]);
        assert_eq!(mixed.pads(), &[0]);
        assert_eq!(mixed.seq_len(), alone.seq_len());
        let t = argmax(&la);
        close(&alone.step(&model, &[t]), &mixed.step(&model, &[t]));
        mixed.retain(&[]);
        assert!(mixed.is_empty());
        assert_eq!(mixed.seq_len(), 0);
    }
}
