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
