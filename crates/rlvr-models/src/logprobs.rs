//! Teacher-forced per-token log-probabilities and entropies for training (works under autodiff).

use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};

use crate::model::CausalLm;

/// Per-token scores of a batch, both `[B, T]` and already multiplied by the mask.
#[derive(Debug, Clone)]
pub struct TokenScores {
    /// `logp[b, t] = log p(ids[b, t] | ids[b, <t])` for `t >= 1`, 0 at `t = 0`.
    pub logp: Tensor<2>,
    /// Entropy (nats) of the next-token distribution that scored `ids[b, t]`, 0 at `t = 0`.
    pub entropy: Tensor<2>,
}

/// Log-probabilities and entropies of the tokens of right-padded sequences (prompt, response,
/// padding), masked by `mask` (1 on response tokens, 0 elsewhere).
///
/// Positions are `0..T` in every row, so prompts must start at column 0 (right padding).
/// Only columns from the first one the mask selects in any row onwards are scored: the LM head,
/// `log_softmax` and the entropy never see the shared prompt prefix (on SmolLM2 chat prompts that
/// is about half of the `[B, T, V]` work and memory); unscored columns are 0 in the outputs.
/// Memory: the hidden states of the last position are dropped before the LM head, the logits
/// `[B, S, V]` (S scored columns) are consumed by `log_softmax` (no second copy is kept by this function), and
/// the entropy `-Σ p · log p` keeps `p = exp(log p)`, which its backward needs. Under no-grad
/// (`model.valid()`) at most two `[B, S, V]` tensors are alive at once, briefly; under
/// autodiff the graph holds `log p` and `p` (plus what `log_softmax` saves for its backward).
/// Use [`token_logprobs_only`] when the entropy is not needed: it keeps only `log p`.
///
/// # Shapes
/// `input_ids: [B, T]`, `mask: [B, T]` → `logp, entropy: [B, T]`.
///
/// # Panics
/// If `mask` and `input_ids` differ in shape.
pub fn token_logprobs(model: &CausalLm, input_ids: Tensor<2, Int>, mask: Tensor<2>) -> TokenScores {
    token_logprobs_at(model, input_ids, mask, 1.0)
}

/// [`token_logprobs`] of the temperature-scaled policy `softmax(logits / temperature)`: the
/// policy a sampler at that temperature draws from (as verl and TRL train it). At
/// `temperature = 1` it is [`token_logprobs`].
///
/// # Panics
/// If `mask` and `input_ids` differ in shape.
pub fn token_logprobs_at(
    model: &CausalLm,
    input_ids: Tensor<2, Int>,
    mask: Tensor<2>,
    temperature: f32,
) -> TokenScores {
    let Some((logp_all, targets, s)) = scored_log_softmax(model, input_ids, &mask, temperature)
    else {
        return TokenScores {
            logp: mask.clone().zeros_like(),
            entropy: mask.zeros_like(),
        };
    };
    let p = logp_all.clone().exp(); // [B, T-s, V]
    let entropy = (p * logp_all.clone()).sum_dim(2).neg().squeeze_dim::<2>(2); // [B, T-s]
    let logp = logp_all.gather(2, targets).squeeze_dim::<2>(2); // [B, T-s]
    TokenScores {
        logp: pad_front(logp, s) * mask.clone(),
        entropy: pad_front(entropy, s) * mask,
    }
}

/// [`token_logprobs`] without the entropy: only `log p` is kept for the backward pass.
///
/// # Shapes
/// `input_ids: [B, T]`, `mask: [B, T]` → `[B, T]`.
pub fn token_logprobs_only(
    model: &CausalLm,
    input_ids: Tensor<2, Int>,
    mask: Tensor<2>,
) -> Tensor<2> {
    let Some((logp_all, targets, s)) = scored_log_softmax(model, input_ids, &mask, 1.0) else {
        return mask.zeros_like();
    };
    pad_front(logp_all.gather(2, targets).squeeze_dim::<2>(2), s) * mask
}

/// The scored window of a batch: `log_softmax` of the logits that predict columns `s..T`
/// (`[B, T-s, V]`), the targets `ids[:, s..]` (`[B, T-s, 1]`), and `s >= 1`, the first column
/// that `mask` selects in any row; `None` when nothing can be scored (`T < 2` or an all-zero
/// mask). The logits are divided by `temperature` first (1 = the raw policy).
pub fn scored_log_softmax(
    model: &CausalLm,
    input_ids: Tensor<2, Int>,
    mask: &Tensor<2>,
    temperature: f32,
) -> Option<(Tensor<3>, Tensor<3, Int>, usize)> {
    let [b, t] = input_ids.dims();
    assert_eq!(
        mask.dims(),
        [b, t],
        "token_logprobs: mask shape {:?} != input_ids shape {:?}",
        mask.dims(),
        [b, t]
    );
    if t < 2 {
        return None;
    }
    let s = first_scored_column(mask)?.max(1); // column 0 has no prediction
    let targets = input_ids.clone().narrow(1, s, t - s).unsqueeze_dim::<3>(2); // [B, T-s, 1]
    let hidden = model.forward_hidden(input_ids).narrow(1, s - 1, t - s); // [B, T-s, hidden]
    let logits = model.logits(hidden); // [B, T-s, V]
    let logits = if temperature == 1.0 {
        logits
    } else {
        logits.div_scalar(temperature)
    };
    Some((log_softmax(logits, 2), targets, s))
}

/// The first column where some row of `mask` is non-zero; `None` for an all-zero mask.
pub(crate) fn first_scored_column(mask: &Tensor<2>) -> Option<usize> {
    let [_, t] = mask.dims();
    let any = mask.clone().abs().sum_dim(0).into_data(); // [1, T]
    let any: Vec<f32> = any.try_into_vec().expect("a float mask");
    debug_assert_eq!(any.len(), t);
    any.iter().position(|&v| v != 0.0)
}

/// `[B, T-s]` → `[B, T]` with `s` zero columns in front (the unscored prefix).
pub fn pad_front(x: Tensor<2>, s: usize) -> Tensor<2> {
    let [b, _] = x.dims();
    let zeros = Tensor::zeros([b, s], &x.device());
    Tensor::cat(vec![zeros, x], 1)
}
