//! Per-layer key/value cache for autoregressive decoding.

use burn::tensor::{Int, Tensor};

/// Keys and values of every layer for the positions decoded so far.
///
/// Each layer holds `k`, `v` of shape `[B, num_key_value_heads, t, head_dim]` (before the
/// grouped-query repeat, so the cache is `num_attention_heads / num_key_value_heads` times
/// smaller than the attention inputs) with RoPE already applied to `k`. New positions are
/// appended with `Tensor::cat` on dim 2.
#[derive(Debug, Clone)]
pub struct KvCache {
    layers: Vec<Option<(Tensor<4>, Tensor<4>)>>,
}

impl KvCache {
    /// An empty cache for a model with `num_layers` decoder blocks.
    pub fn new(num_layers: usize) -> Self {
        Self {
            layers: vec![None; num_layers],
        }
    }

    /// Number of cached positions t (0 when empty).
    pub fn seq_len(&self) -> usize {
        self.layers
            .first()
            .and_then(Option::as_ref)
            .map_or(0, |(k, _)| k.dims()[2])
    }

    /// Keeps only the batch rows listed in `rows` (in that order), e.g. to drop finished
    /// sequences from a decoding batch.
    pub fn select_rows(&mut self, rows: &Tensor<1, Int>) {
        for layer in self.layers.iter_mut().flatten() {
            let (k, v) = layer.clone();
            *layer = (k.select(0, rows.clone()), v.select(0, rows.clone()));
        }
    }

    /// The device of the cached tensors (`None` when empty).
    pub fn device(&self) -> Option<burn::tensor::Device> {
        self.layers
            .first()
            .and_then(Option::as_ref)
            .map(|(k, _)| k.device())
    }

    /// Number of batch rows (0 when empty).
    pub fn num_rows(&self) -> usize {
        self.layers
            .first()
            .and_then(Option::as_ref)
            .map_or(0, |(k, _)| k.dims()[0])
    }

    /// Prepends `n` zero positions to every row (left padding that a decode mask must block),
    /// e.g. to bring a shorter cache to the length of the batch it joins.
    pub fn pad_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        for layer in self.layers.iter_mut().flatten() {
            let (k, v) = layer.clone();
            let [b, h, _, d] = k.dims();
            let zeros = Tensor::<4>::zeros([b, h, n, d], &k.device());
            *layer = (
                Tensor::cat(vec![zeros.clone(), k], 2),
                Tensor::cat(vec![zeros, v], 2),
            );
        }
    }

    /// Removes the first `n` positions of every row, e.g. padding columns that no remaining
    /// row attends to.
    ///
    /// # Panics
    /// If `n` exceeds [`KvCache::seq_len`].
    pub fn drop_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let t = self.seq_len();
        assert!(n <= t, "KvCache::drop_front: {n} > seq_len {t}");
        for layer in self.layers.iter_mut().flatten() {
            let (k, v) = layer.clone();
            *layer = (k.narrow(2, n, t - n), v.narrow(2, n, t - n));
        }
    }

    /// Appends the rows of `other` after this cache's rows (batch dim). An empty cache takes
    /// `other` as it is.
    ///
    /// # Panics
    /// If both caches hold rows and their layer counts or sequence lengths differ.
    pub fn append_rows(&mut self, other: KvCache) {
        if self.num_rows() == 0 {
            *self = other;
            return;
        }
        if other.num_rows() == 0 {
            return;
        }
        assert_eq!(
            self.layers.len(),
            other.layers.len(),
            "KvCache::append_rows: layer counts differ"
        );
        assert_eq!(
            self.seq_len(),
            other.seq_len(),
            "KvCache::append_rows: sequence lengths differ (pad_front the shorter one)"
        );
        for (mine, theirs) in self.layers.iter_mut().zip(other.layers) {
            if let (Some((k0, v0)), Some((k1, v1))) = (mine.take(), theirs) {
                *mine = Some((Tensor::cat(vec![k0, k1], 0), Tensor::cat(vec![v0, v1], 0)));
            }
        }
    }

    /// Appends this step's `k`, `v` (`[B, kv_heads, t_new, head_dim]`) to layer `layer` and
    /// returns the full keys and values `[B, kv_heads, t + t_new, head_dim]`.
    pub(crate) fn append(
        &mut self,
        layer: usize,
        k: Tensor<4>,
        v: Tensor<4>,
    ) -> (Tensor<4>, Tensor<4>) {
        let (k, v) = match self.layers[layer].take() {
            Some((k0, v0)) => (Tensor::cat(vec![k0, k], 2), Tensor::cat(vec![v0, v], 2)),
            None => (k, v),
        };
        self.layers[layer] = Some((k.clone(), v.clone()));
        (k, v)
    }
}
