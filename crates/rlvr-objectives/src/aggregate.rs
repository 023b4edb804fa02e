//! `Aggregation`: how per-token losses reduce to the scalar loss (spec §1.5, verl `agg_loss`).

use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Loss reduction shared by every objective (spec §1.5).
///
/// With ℓ the per-token loss, m the mask, n_i = Σ_t m_{i,t} and B' the number of sequences with
/// n_i > 0:
///
/// | variant | formula | used by |
/// |---|---|---|
/// | `token_mean` | Σ m ℓ / Σ m | DAPO (arXiv 2503.14476) |
/// | `seq_mean_token_mean` | (1/B') Σ_i (1/n_i) Σ_t m ℓ | GRPO (arXiv 2402.03300), GSPO |
/// | `seq_mean_token_sum` | (1/B') Σ_i Σ_t m ℓ | — |
/// | `seq_mean_token_sum_norm` | Σ m ℓ / (B' · L), L = `norm_len` | Dr. GRPO (arXiv 2503.20783) |
///
/// `seq_mean_token_sum_norm` divides by a constant L (the maximum generation length), never by
/// the padded length, so its scale does not depend on the batch (spec §1.5 caveat 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// Mean over all valid tokens of the mini-batch.
    TokenMean,
    /// Mean over sequences of the per-sequence token mean.
    SeqMeanTokenMean,
    /// Mean over sequences of the per-sequence token sum.
    SeqMeanTokenSum,
    /// Token sum divided by (sequences × a constant length `norm_len`).
    SeqMeanTokenSumNorm,
}

/// Reduces per-token values `[B, T]` to a one-element tensor (spec §1.5). `norm_len` is the
/// constant L of [`Aggregation::SeqMeanTokenSumNorm`] and is ignored by the other modes.
/// Denominators are clamped to at least 1, so an all-masked batch gives 0, never NaN.
pub fn aggregate(
    values: Tensor<2>,
    mask: &Tensor<2>,
    mode: Aggregation,
    norm_len: usize,
) -> Tensor<1> {
    aggregate_over(values, mask, mode, norm_len, None)
}

/// The denominators of a whole optimizer mini-batch, for losses computed on a part of it
/// (a micro-batch of gradient accumulation).
///
/// Every [`Aggregation`] is a sum over sequences divided by a count of the whole mini-batch
/// (its valid tokens, or its sequences with at least one valid token); the per-sequence token
/// count of `seq_mean_token_mean` is local to its row. So when each micro-batch divides by the
/// mini-batch's counts, the micro-batch losses sum to the mini-batch loss exactly, and so do
/// their gradients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchTotals {
    /// Σ m over the whole mini-batch.
    pub tokens: f32,
    /// Number of sequences of the whole mini-batch with at least one valid token.
    pub sequences: f32,
    /// Σ c m over the whole mini-batch, for per-token loss coefficients c (DelTA's
    /// self-normalized `token_mean`, [`aggregate_weighted`]); equals `tokens` without them.
    pub coef_tokens: f32,
}

impl BatchTotals {
    /// The counts of `mask` `[B, T]`.
    pub fn of(mask: &Tensor<2>) -> Self {
        Self::of_weighted(mask, None)
    }

    /// The counts of `mask` `[B, T]` with per-token loss coefficients `coef` `[B, T]` (DelTA;
    /// `None` = every coefficient 1, which is [`BatchTotals::of`]).
    pub fn of_weighted(mask: &Tensor<2>, coef: Option<&Tensor<2>>) -> Self {
        let tokens_per_seq = mask.clone().sum_dim(1);
        let tokens = mask.clone().sum().into_scalar::<f32>();
        Self {
            tokens,
            sequences: tokens_per_seq
                .greater_elem(0.0)
                .float()
                .sum()
                .into_scalar::<f32>(),
            coef_tokens: match coef {
                Some(c) => (mask.clone() * c.clone()).sum().into_scalar::<f32>(),
                None => tokens,
            },
        }
    }

    /// The counts of two disjoint parts together.
    pub fn plus(self, other: Self) -> Self {
        Self {
            tokens: self.tokens + other.tokens,
            sequences: self.sequences + other.sequences,
            coef_tokens: self.coef_tokens + other.coef_tokens,
        }
    }
}

/// [`aggregate`] with the denominators of a whole mini-batch when `totals` is given (the
/// micro-batch form; see [`BatchTotals`]), or of `mask` itself when it is `None`.
pub fn aggregate_over(
    values: Tensor<2>,
    mask: &Tensor<2>,
    mode: Aggregation,
    norm_len: usize,
    totals: Option<BatchTotals>,
) -> Tensor<1> {
    let masked = values * mask.clone();
    let tokens_per_seq = mask.clone().sum_dim(1); // [B, 1]
    let live_seqs = || match totals {
        Some(t) => Tensor::<1>::from_floats([t.sequences.max(1.0)], &mask.device()),
        None => tokens_per_seq
            .clone()
            .greater_elem(0.0)
            .float()
            .sum()
            .clamp_min(1.0),
    };
    let tokens = || match totals {
        Some(t) => Tensor::<1>::from_floats([t.tokens.max(1.0)], &mask.device()),
        None => mask.clone().sum().clamp_min(1.0),
    };
    match mode {
        Aggregation::TokenMean => masked.sum() / tokens(),
        Aggregation::SeqMeanTokenMean => {
            let per_seq = masked.sum_dim(1) / tokens_per_seq.clone().clamp_min(1.0); // [B, 1]
            per_seq.sum() / live_seqs()
        }
        Aggregation::SeqMeanTokenSum => masked.sum() / live_seqs(),
        Aggregation::SeqMeanTokenSumNorm => masked.sum() / (live_seqs() * norm_len.max(1) as f32),
    }
}

/// The self-normalized reduction of per-token values with per-token loss coefficients c ≥ 0
/// (stop-gradient), DelTA (arXiv 2605.21467; `methods-extra.md` §13):
///
/// | variant | formula |
/// |---|---|
/// | `token_mean` | Σ c m ℓ / Σ c m |
/// | `seq_mean_token_mean` | (1/B') Σ_i (Σ_t c m ℓ) / (Σ_t c m) |
///
/// With c ≡ 1 both are [`aggregate_over`]'s. `totals` carries the whole mini-batch's Σ c m and
/// B' for a micro-batch (see [`BatchTotals::of_weighted`]). A row or batch whose Σ c m is 0
/// contributes 0.
///
/// # Errors
/// [`Error::InvalidConfig`] on `aggregation` for the token-sum modes, which have no token count
/// to replace by Σ c m.
pub fn aggregate_weighted(
    values: Tensor<2>,
    mask: &Tensor<2>,
    coef: &Tensor<2>,
    mode: Aggregation,
    totals: Option<BatchTotals>,
) -> Result<Tensor<1>> {
    let weight = mask.clone() * coef.clone().detach();
    let weighted = values * weight.clone();
    // Σ c m ≥ 0, and 0 only where every term of the numerator is 0.
    const TINY: f32 = 1e-30;
    match mode {
        Aggregation::TokenMean => {
            let denom = match totals {
                Some(t) => Tensor::<1>::from_floats([t.coef_tokens.max(TINY)], &mask.device()),
                None => weight.sum().clamp_min(TINY),
            };
            Ok(weighted.sum() / denom)
        }
        Aggregation::SeqMeanTokenMean => {
            let live = match totals {
                Some(t) => Tensor::<1>::from_floats([t.sequences.max(1.0)], &mask.device()),
                None => mask
                    .clone()
                    .sum_dim(1)
                    .greater_elem(0.0)
                    .float()
                    .sum()
                    .clamp_min(1.0),
            };
            let per_seq = weighted.sum_dim(1) / weight.sum_dim(1).clamp_min(TINY);
            Ok(per_seq.sum() / live)
        }
        Aggregation::SeqMeanTokenSum | Aggregation::SeqMeanTokenSumNorm => {
            Err(Error::InvalidConfig {
                field: "aggregation",
                value: format!("{mode:?}"),
                reason: "per-token loss coefficients (DelTA) need a token count to replace by \
                         sum c m: use token_mean or seq_mean_token_mean",
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::Device;

    use super::*;
    use crate::batch::tensor_from_rows;

    /// Spec §1.5 caveat 3: two sequences, losses (1, 2) with n = 2 and (1, 1, 1, 1) with n = 4,
    /// L = 4. Hand-derived: token-mean 7/6, seq-mean-token-sum (3 + 4)/2 = 3.5,
    /// seq-mean-token-mean (1.5 + 1)/2 = 1.25, Dr. GRPO 7/(2·4) = 0.875.
    #[test]
    fn modes_match_their_definitions() {
        let device = Device::flex();
        let values = tensor_from_rows(&[1., 2., 9., 9., 1., 1., 1., 1.], [2, 4], &device);
        let mask = tensor_from_rows(&[1., 1., 0., 0., 1., 1., 1., 1.], [2, 4], &device);
        let check = |mode, want: f32| {
            let got = aggregate(values.clone(), &mask, mode, 4).into_scalar::<f32>();
            assert!((got - want).abs() < 1e-6, "{mode:?}: {got} != {want}");
        };
        check(Aggregation::TokenMean, 7.0 / 6.0);
        check(Aggregation::SeqMeanTokenSum, 3.5);
        check(Aggregation::SeqMeanTokenMean, 1.25);
        check(Aggregation::SeqMeanTokenSumNorm, 0.875);
    }

    /// The same two rows with coefficients (2, 1 | 1, 1, 1, 3): token mean (2 + 2 + 1 + 1 + 1 + 3)
    /// / (3 + 6) = 10/9; seq mean ((2 + 2)/3 + 6/6)/2 = 7/6; c ≡ 1 gives the plain modes.
    #[test]
    fn weighted_modes_divide_by_the_coefficient_sums() {
        let device = Device::flex();
        let values = tensor_from_rows(&[1., 2., 9., 9., 1., 1., 1., 1.], [2, 4], &device);
        let mask = tensor_from_rows(&[1., 1., 0., 0., 1., 1., 1., 1.], [2, 4], &device);
        let coef = tensor_from_rows(&[2., 1., 5., 5., 1., 1., 1., 3.], [2, 4], &device);
        let ones = coef.ones_like();
        let get = |c: &Tensor<2>, mode| {
            aggregate_weighted(values.clone(), &mask, c, mode, None)
                .unwrap()
                .into_scalar::<f32>()
        };
        assert!((get(&coef, Aggregation::TokenMean) - 10.0 / 9.0).abs() < 1e-6);
        assert!((get(&coef, Aggregation::SeqMeanTokenMean) - 7.0 / 6.0).abs() < 1e-6);
        assert_eq!(get(&ones, Aggregation::TokenMean), 7.0 / 6.0);
        assert_eq!(get(&ones, Aggregation::SeqMeanTokenMean), 1.25);
        let err = aggregate_weighted(values, &mask, &coef, Aggregation::SeqMeanTokenSum, None);
        assert!(err.unwrap_err().to_string().contains("aggregation"));
    }

    /// A fully masked row does not count as a sequence, and an all-masked batch gives 0.
    #[test]
    fn empty_rows_are_not_sequences() {
        let device = Device::flex();
        let values = tensor_from_rows(&[2., 4., 7., 7.], [2, 2], &device);
        let mask = tensor_from_rows(&[1., 1., 0., 0.], [2, 2], &device);
        let got =
            aggregate(values.clone(), &mask, Aggregation::SeqMeanTokenMean, 1).into_scalar::<f32>();
        assert!((got - 3.0).abs() < 1e-6, "{got}");
        let none = tensor_from_rows(&[0., 0., 0., 0.], [2, 2], &device);
        for mode in [
            Aggregation::TokenMean,
            Aggregation::SeqMeanTokenMean,
            Aggregation::SeqMeanTokenSum,
            Aggregation::SeqMeanTokenSumNorm,
        ] {
            assert_eq!(
                aggregate(values.clone(), &none, mode, 4).into_scalar::<f32>(),
                0.0
            );
        }
    }
}
