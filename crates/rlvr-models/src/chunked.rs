//! Per-token log-probs and entropies without a `[B, T, V]` tensor: the LM head, `log_softmax` and
//! the entropy run over chunks of the scored columns, and the backward pass recomputes each
//! chunk's logits instead of keeping them (the "fused linear cross-entropy" idea, by
//! recomputation).
//!
//! Training with [`ChunkedScores`] is two backward passes:
//!
//! 1. [`chunked_token_logprobs`] runs the decoder (recorded), then the head chunk by chunk with
//!    no graph, and returns the scores as **leaves**: the loss is built on them as on
//!    [`crate::token_logprobs_at`]'s, and its backward stops at the leaves.
//! 2. [`ChunkedScores::backward`] takes that backward's gradients, recomputes each chunk's
//!    logits under autodiff from detached hidden states and back-propagates
//!    `Σ ∂L/∂logp · logp + ∂L/∂H · H` of the chunk (the head's parameter gradients and
//!    `∂L/∂hidden` of the chunk), then back-propagates `Σ hidden · ∂L/∂hidden` through the
//!    decoder. By the chain rule the sum of these gradients is the gradient of the loss; only
//!    one chunk's `[B, chunk, V]` exists at a time.

use burn::module::Module;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Gradients, Int, Tensor};

use crate::logprobs::pad_front;
use crate::model::CausalLm;

/// The scores of a batch as leaves of the loss graph, and what [`ChunkedScores::backward`]
/// needs to carry the loss's gradient into the model.
#[derive(Debug)]
pub struct ChunkedScores {
    /// `[B, T]` log-probs of the tokens at the temperature, masked, a leaf that requires grad.
    pub logp: Tensor<2>,
    /// `[B, T]` entropies, masked, a leaf that requires grad.
    pub entropy: Tensor<2>,
    /// The decoder's hidden states predicting columns `s..T` (`[B, T-s, hidden]`, recorded).
    hidden: Tensor<3>,
    /// Token ids of columns `s..T` (`[B, T-s, 1]`).
    targets: Tensor<3, Int>,
    mask: Tensor<2>,
    s: usize,
    chunk: usize,
    temperature: f32,
}

/// Log-probs and entropies of `softmax(logits / temperature)` as [`crate::token_logprobs_at`]
/// computes them, with the LM head run over `chunk` scored columns at a time (`chunk >= 1`).
/// `None` when nothing is scored (`T < 2` or an all-zero mask).
///
/// # Panics
/// If `mask` and `input_ids` differ in shape, or `chunk` is 0.
pub fn chunked_token_logprobs(
    model: &CausalLm,
    input_ids: Tensor<2, Int>,
    mask: Tensor<2>,
    temperature: f32,
    chunk: usize,
) -> Option<ChunkedScores> {
    assert!(chunk > 0, "chunked_token_logprobs: chunk must be positive");
    let [b, t] = input_ids.dims();
    assert_eq!(mask.dims(), [b, t], "chunked_token_logprobs: mask shape");
    if t < 2 {
        return None;
    }
    let s = crate::logprobs::first_scored_column(&mask)?.max(1);
    let targets = input_ids.clone().narrow(1, s, t - s).unsqueeze_dim::<3>(2);
    let hidden = model.forward_hidden(input_ids).narrow(1, s - 1, t - s);
    // Pass 1: the values, with no graph (the no-grad model and detached hidden states).
    let head = model.valid();
    let (mut logps, mut entropies) = (Vec::new(), Vec::new());
    for (c0, len) in chunks(t - s, chunk) {
        let h = hidden.clone().inner().narrow(1, c0, len);
        let target = targets.clone().inner().narrow(1, c0, len);
        let (logp, entropy) = head_scores(&head, h, target, temperature);
        logps.push(logp);
        entropies.push(entropy);
    }
    let device = mask.device();
    let leaf = |parts: Vec<Tensor<2>>| {
        // Through the host so the leaf lives on the policy's own device (and its
        // gradient-checkpointing strategy); `[B, T]` is small.
        let values = pad_front(Tensor::cat(parts, 1), s).into_data();
        (Tensor::<2>::from_data(values, &device) * mask.clone()).require_grad()
    };
    Some(ChunkedScores {
        logp: leaf(logps),
        entropy: leaf(entropies),
        hidden,
        targets,
        mask,
        s,
        chunk,
        temperature,
    })
}

impl ChunkedScores {
    /// How many chunks the LM head runs over (per pass).
    pub fn chunks(&self) -> usize {
        (self.mask.dims()[1] - self.s).div_ceil(self.chunk)
    }

    /// The gradients of the loss w.r.t. `model`'s parameters, from `loss_grads` (the backward
    /// of a loss built on [`ChunkedScores::logp`] and [`ChunkedScores::entropy`]); a leaf the
    /// loss did not use contributes nothing.
    pub fn backward(self, model: &CausalLm, loss_grads: &Gradients) -> GradientsParams {
        let device = self.mask.device();
        let column_grad = |leaf: &Tensor<2>| {
            leaf.grad(loss_grads).map(|g| {
                let g = Tensor::<2>::from_data(g.into_data(), &device) * self.mask.clone();
                g.narrow(1, self.s, self.mask.dims()[1] - self.s)
            })
        };
        let (d_logp, d_entropy) = (column_grad(&self.logp), column_grad(&self.entropy));
        let mut accumulated = GradientsAccumulator::<CausalLm>::new();
        let mut d_hidden = Vec::new();
        let scored = self.mask.dims()[1] - self.s;
        for (c0, len) in chunks(scored, self.chunk) {
            let h = self
                .hidden
                .clone()
                .detach()
                .narrow(1, c0, len)
                .require_grad();
            let target = self.targets.clone().narrow(1, c0, len);
            let (logp, entropy) = head_scores(model, h.clone(), target, self.temperature);
            let mut surrogate = Tensor::<1>::zeros([1], &device);
            if let Some(d) = &d_logp {
                surrogate = surrogate + (logp * d.clone().narrow(1, c0, len)).sum();
            }
            if let Some(d) = &d_entropy {
                surrogate = surrogate + (entropy * d.clone().narrow(1, c0, len)).sum();
            }
            let grads = surrogate.backward();
            let [b, _, hs] = self.hidden.dims();
            let g = h
                .grad(&grads)
                .unwrap_or_else(|| Tensor::zeros([b, len, hs], &device));
            d_hidden.push(Tensor::<3>::from_data(g.into_data(), &device));
            accumulated.accumulate(model, GradientsParams::from_grads(grads, model));
        }
        let d_hidden = Tensor::cat(d_hidden, 1);
        let grads = (self.hidden * d_hidden).sum().backward();
        accumulated.accumulate(model, GradientsParams::from_grads(grads, model));
        accumulated.grads()
    }
}

/// `(start, len)` of consecutive chunks of at most `chunk` columns covering `0..n`.
fn chunks(n: usize, chunk: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).step_by(chunk).map(move |c0| (c0, chunk.min(n - c0)))
}

/// Log-probs of `targets` and entropies under `softmax(head(h) / temperature)`, `[B, len]` each.
fn head_scores(
    model: &CausalLm,
    h: Tensor<3>,
    targets: Tensor<3, Int>,
    temperature: f32,
) -> (Tensor<2>, Tensor<2>) {
    let logits = model.logits(h);
    let logits = if temperature == 1.0 {
        logits
    } else {
        logits.div_scalar(temperature)
    };
    let logp_all = log_softmax(logits, 2);
    let entropy = (logp_all.clone().exp() * logp_all.clone())
        .sum_dim(2)
        .neg()
        .squeeze_dim::<2>(2);
    let logp = logp_all.gather(2, targets).squeeze_dim::<2>(2);
    (logp, entropy)
}
