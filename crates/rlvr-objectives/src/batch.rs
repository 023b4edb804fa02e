//! `PolicyBatch`: the per-token `[B, T]` tensors every objective reads, shape-checked once.

use burn::tensor::{Device, Tensor, TensorData};

use crate::error::{Error, Result};

/// Per-token tensors of one optimizer mini-batch, all `[B, T]` f32 on one burn device.
///
/// `B` is the number of sequences (prompts × group size) and `T` the padded length. Position
/// `[b, t]` of every tensor refers to the same token; `mask` is 1 exactly on the response tokens
/// that take part in the loss (padding and prompt are 0). Objectives never see token ids, text or
/// models.
#[derive(Debug, Clone)]
pub struct PolicyBatch {
    /// Log-probabilities of the sampled tokens under the current policy ℓ^θ (carries gradient).
    pub logp: Tensor<2>,
    /// Log-probabilities under the policy that generated the batch ℓ^old (no gradient).
    pub old_logp: Tensor<2>,
    /// Log-probabilities under the frozen reference ℓ^ref (no gradient); needed by KL terms and OWPO.
    pub ref_logp: Option<Tensor<2>>,
    /// Log-probabilities reported by the sampler, when it differs from the trainer's `old_logp`
    /// (needed by truncated importance sampling).
    pub sampler_logp: Option<Tensor<2>>,
    /// Advantages already broadcast to every token of their sequence ([`broadcast_advantages`]).
    pub advantages: Tensor<2>,
    /// 1 on the response tokens, 0 elsewhere.
    pub mask: Tensor<2>,
    /// Per-token entropy of the current policy (for the entropy metric and bonus).
    pub entropy: Option<Tensor<2>>,
    /// Per-token loss coefficients c of the policy-gradient term (DelTA, arXiv 2605.21467:
    /// L = −(1/Σ c m) Σ c m · surrogate), no gradient; `None` = the plain aggregation. Set with
    /// [`PolicyBatch::with_token_coef`].
    pub token_coef: Option<Tensor<2>>,
}

impl PolicyBatch {
    /// Builds a batch, checking that every tensor has the shape of `logp`.
    ///
    /// Old, reference and sampler log-probs, advantages and mask are detached here, so they
    /// never carry gradient whatever the caller passed.
    pub fn new(
        logp: Tensor<2>,
        old_logp: Tensor<2>,
        ref_logp: Option<Tensor<2>>,
        sampler_logp: Option<Tensor<2>>,
        advantages: Tensor<2>,
        mask: Tensor<2>,
        entropy: Option<Tensor<2>>,
    ) -> Result<Self> {
        let expected = logp.dims().to_vec();
        let check = |name: &'static str, t: &Tensor<2>| -> Result<()> {
            let got = t.dims().to_vec();
            if got == expected {
                Ok(())
            } else {
                Err(Error::ShapeMismatch {
                    name,
                    expected: expected.clone(),
                    got,
                })
            }
        };
        check("old_logp", &old_logp)?;
        check("advantages", &advantages)?;
        check("mask", &mask)?;
        for (name, t) in [
            ("ref_logp", &ref_logp),
            ("sampler_logp", &sampler_logp),
            ("entropy", &entropy),
        ] {
            if let Some(t) = t {
                check(name, t)?;
            }
        }
        Ok(Self {
            logp,
            old_logp: old_logp.detach(),
            ref_logp: ref_logp.map(Tensor::detach),
            sampler_logp: sampler_logp.map(Tensor::detach),
            advantages: advantages.detach(),
            mask: mask.detach(),
            entropy,
            token_coef: None,
        })
    }

    /// Adds per-token loss coefficients `coef` `[B, T]` (detached here): the policy-gradient
    /// term becomes the self-normalized Σ c m ℓ / Σ c m (`token_mean`) or its per-sequence form
    /// (`seq_mean_token_mean`), see [`crate::aggregate_weighted`]; c ≡ 1 is the plain loss.
    pub fn with_token_coef(mut self, coef: Tensor<2>) -> Result<Self> {
        let expected = self.logp.dims().to_vec();
        let got = coef.dims().to_vec();
        if got != expected {
            return Err(Error::ShapeMismatch {
                name: "token_coef",
                expected,
                got,
            });
        }
        self.token_coef = Some(coef.detach());
        Ok(self)
    }

    /// `[B, T]`: number of sequences and padded length.
    pub fn dims(&self) -> [usize; 2] {
        self.logp.dims()
    }

    /// The device the batch lives on.
    pub fn device(&self) -> Device {
        self.logp.device()
    }
}

/// Broadcasts one advantage per sequence to a `[B, T]` tensor (the value on every position;
/// the mask decides which positions count).
pub fn broadcast_advantages(values: &[f32], seq_len: usize, device: &Device) -> Tensor<2> {
    let b = values.len();
    let column = Tensor::<2>::from_data(TensorData::new(values.to_vec(), [b, 1]), device);
    column.repeat_dim(1, seq_len)
}

/// A `[B, T]` tensor from a row-major host slice (test and fixture helper).
pub fn tensor_from_rows(values: &[f32], dims: [usize; 2], device: &Device) -> Tensor<2> {
    Tensor::<2>::from_data(TensorData::new(values.to_vec(), dims), device)
}
