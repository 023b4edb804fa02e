//! Rotary position embeddings in the Hugging Face `rotate_half` convention (not burn's
//! interleaved `RotaryEncoding`): Su et al. 2021, "RoFormer", Eq. (34), as laid out by
//! `transformers`' `apply_rotary_pos_emb`.

use burn::tensor::{Device, Tensor, TensorData};

/// cos/sin tables for the positions of one forward pass, `[B or 1, 1, T, head_dim]`.
#[derive(Debug, Clone)]
pub(crate) struct Rope {
    cos: Tensor<4>,
    sin: Tensor<4>,
}

impl Rope {
    /// Tables for `positions` (`rows × len`, row-major), as HF computes them:
    /// `inv_freq[i] = 1 / θ^(2i/d)` and `freq = position · inv_freq` in f32, then
    /// `emb = cat(freq, freq)`, `cos = cos(emb)`, `sin = sin(emb)`.
    pub(crate) fn new(
        positions: &[i64],
        rows: usize,
        len: usize,
        head_dim: usize,
        theta: f64,
        device: &Device,
    ) -> Self {
        let half = head_dim / 2;
        let inv_freq: Vec<f32> = (0..half)
            .map(|i| 1.0 / (theta as f32).powf((2 * i) as f32 / head_dim as f32))
            .collect();
        let mut cos = Vec::with_capacity(positions.len() * head_dim);
        let mut sin = Vec::with_capacity(positions.len() * head_dim);
        for &p in positions {
            for _ in 0..2 {
                for &f in &inv_freq {
                    let angle = f64::from(p as f32 * f);
                    cos.push(angle.cos() as f32);
                    sin.push(angle.sin() as f32);
                }
            }
        }
        let shape = [rows, 1, len, head_dim];
        Self {
            cos: Tensor::from_data(TensorData::new(cos, shape), device),
            sin: Tensor::from_data(TensorData::new(sin, shape), device),
        }
    }

    /// `x · cos + rotate_half(x) · sin` for `x: [B, heads, T, head_dim]`.
    pub(crate) fn apply(&self, x: Tensor<4>) -> Tensor<4> {
        let half = x.dims()[3] / 2;
        let x1 = x.clone().narrow(3, 0, half);
        let x2 = x.clone().narrow(3, half, half);
        let rotated = Tensor::cat(vec![x2.neg(), x1], 3); // rotate_half: [-x2, x1]
        x * self.cos.clone() + rotated * self.sin.clone()
    }
}
