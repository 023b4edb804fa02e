//! The Newton–Schulz iteration shared by Muon and Pion: a schedule of odd quintic polynomials
//! applied to the singular values of a Frobenius-normalised matrix, whole or one block per head.
//!
//! # Formula
//!
//! For `X` with `rows ≤ cols` (a tall matrix is transposed first and back at the end):
//!
//! ```text
//! X ← X / max(‖X‖_F, ε)
//! for (a, b, c) in schedule:   A ← X·Xᵀ ;  X ← a·X + (b·A + c·A·A)·X
//! ```
//!
//! Each step maps every singular value `σ` of `X` to `p(σ) = a·σ + b·σ³ + c·σ⁵` and keeps the
//! singular vectors, so the whole iteration maps `σ` to the composition of the schedule's
//! polynomials ([`NewtonSchulz::map_singular_value`]).
//! Muon uses one quintic five times ([`Quintic::MUON`]); Pion uses `k_p` promotion steps then
//! `k − k_p` suppression steps ([`Quintic::PION_PROMOTION`], [`Quintic::PION_SUPPRESSION`]).
//! Both optimizers call the same [`NewtonSchulz::orthogonalize`].

use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Entries of the iterate below this magnitude are set to zero after every contracting step
/// (`|a| < 1`, e.g. Pion's suppression).
///
/// Such steps send small singular values to 0 cubically (`f_s(σ) ≈ 2.5σ³`), so within five steps
/// the iterate of a flat-spectrum matrix reaches 1e-30 and its products become subnormal floats,
/// which x86 CPUs multiply 10–100× slower: Pion measured 12× Muon's step time before this flush.
/// The iterate is Frobenius-normalised (entries ≈ 1/√n), so 1e-8 is far below any entry that
/// survives the filter, and `(1e-8)⁴` is still a normal `f32`.
pub const FLUSH_TO_ZERO: f32 = 1e-8;

/// One Newton–Schulz step `X ← a·X + (b·A + c·A²)·X` with `A = X·Xᵀ`, i.e. the odd quintic
/// `p(σ) = a·σ + b·σ³ + c·σ⁵` applied to each singular value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quintic {
    /// Coefficient of `σ`.
    pub a: f32,
    /// Coefficient of `σ³`.
    pub b: f32,
    /// Coefficient of `σ⁵`.
    pub c: f32,
}

impl Quintic {
    /// Muon's quintic (Keller Jordan, `muon.py`): `(3.4445, −4.7750, 2.0315)`, chosen to maximise the
    /// slope at 0; five steps send singular values into about `[0.68, 1.13]`.
    pub const MUON: Quintic = Quintic {
        a: 3.4445,
        b: -4.7750,
        c: 2.0315,
    };
    /// Pion's promotion polynomial `f_p(σ) = 1.875σ − 1.25σ³ + 0.375σ⁵` (arXiv 2605.19282):
    /// raises small singular values towards 1.
    pub const PION_PROMOTION: Quintic = Quintic {
        a: 1.875,
        b: -1.25,
        c: 0.375,
    };
    /// Pion's suppression polynomial `f_s(σ) = 2.5σ³ − 1.5σ⁵` (arXiv 2605.19282): unstable fixed
    /// point at `√(2/3) ≈ 0.8165`; larger σ go to 1, smaller σ go to 0 (a spectral high-pass).
    pub const PION_SUPPRESSION: Quintic = Quintic {
        a: 0.0,
        b: 2.5,
        c: -1.5,
    };

    /// `p(σ) = a·σ + b·σ³ + c·σ⁵`, evaluated in `f64`.
    pub fn eval(&self, sigma: f64) -> f64 {
        let s2 = sigma * sigma;
        sigma * (f64::from(self.a) + s2 * (f64::from(self.b) + s2 * f64::from(self.c)))
    }
}

/// Which axis of a stored 2-D weight holds the attention heads, for the per-head mode.
///
/// burn's `Linear` stores its weight as `[d_input, d_output]`, so the heads of `q/k/v_proj` lie
/// along the columns ([`HeadAxis::Cols`]) and those of `o_proj` along the rows
/// ([`HeadAxis::Rows`]); in PyTorch layout it is the other way round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadAxis {
    /// Heads are consecutive blocks of rows (dim 0).
    Rows,
    /// Heads are consecutive blocks of columns (dim 1).
    Cols,
}

/// The per-head block split of a 2-D matrix: `heads` equal, consecutive blocks along `axis`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HeadSplit {
    /// Number of heads (blocks); must divide the length of `axis`.
    pub heads: usize,
    /// The axis that is cut into blocks.
    pub axis: HeadAxis,
}

impl HeadSplit {
    /// The `[rows, cols]` of one block of a `[rows, cols]` matrix, or `None` when `heads` is zero
    /// or does not divide the axis (the caller then falls back to the whole matrix).
    pub fn block_dims(&self, dims: [usize; 2]) -> Option<[usize; 2]> {
        let [rows, cols] = dims;
        let len = match self.axis {
            HeadAxis::Rows => rows,
            HeadAxis::Cols => cols,
        };
        if self.heads == 0 || len % self.heads != 0 {
            return None;
        }
        Some(match self.axis {
            HeadAxis::Rows => [rows / self.heads, cols],
            HeadAxis::Cols => [rows, cols / self.heads],
        })
    }
}

/// The Newton–Schulz mechanism: a per-iteration schedule of [`Quintic`]s and the normalisation
/// epsilon. Muon and Pion differ only in the schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct NewtonSchulz {
    schedule: Vec<Quintic>,
    epsilon: f32,
}

impl NewtonSchulz {
    /// An iteration running `schedule` in order, normalising by `max(‖X‖_F, epsilon)`.
    pub fn new(schedule: Vec<Quintic>, epsilon: f32) -> Self {
        Self { schedule, epsilon }
    }

    /// Muon's iteration: `steps` repetitions of `coefficients` (usually [`Quintic::MUON`]).
    pub fn muon(coefficients: Quintic, steps: usize, epsilon: f32) -> Self {
        Self::new(vec![coefficients; steps], epsilon)
    }

    /// Pion's iteration: `promotion_steps` steps of [`Quintic::PION_PROMOTION`], then
    /// `steps − promotion_steps` of [`Quintic::PION_SUPPRESSION`] (arXiv 2605.19282, §3).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `pion.promotion_steps` when it exceeds `steps`.
    pub fn pion(steps: usize, promotion_steps: usize, epsilon: f32) -> Result<Self> {
        if promotion_steps > steps {
            return Err(Error::config(
                "pion.promotion_steps",
                promotion_steps,
                "must be at most pion.ns_steps",
            ));
        }
        let mut schedule = vec![Quintic::PION_PROMOTION; promotion_steps];
        schedule.extend(std::iter::repeat_n(
            Quintic::PION_SUPPRESSION,
            steps - promotion_steps,
        ));
        Ok(Self::new(schedule, epsilon))
    }

    /// The coefficient schedule, one entry per iteration.
    pub fn schedule(&self) -> &[Quintic] {
        &self.schedule
    }

    /// The scalar map the iteration applies to one singular value of the *normalised* matrix:
    /// the composition of the schedule's polynomials, evaluated in `f64`.
    pub fn map_singular_value(&self, sigma: f64) -> f64 {
        self.schedule.iter().fold(sigma, |s, q| q.eval(s))
    }

    /// Runs the iteration on the last two dims of `g` (a matrix, or a batch of matrices with
    /// `D > 2`), each matrix normalised by its own Frobenius norm. Tall matrices are transposed
    /// so that the Gram matrix `X·Xᵀ` is the smaller one, and transposed back.
    ///
    /// # Panics
    /// If `D < 2`.
    pub fn orthogonalize<const D: usize>(&self, g: Tensor<D>) -> Tensor<D> {
        assert!(
            D >= 2,
            "Newton–Schulz needs a matrix, got a rank-{D} tensor"
        );
        let dims = g.dims();
        let transpose = dims[D - 2] > dims[D - 1];
        let mut x = if transpose {
            g.swap_dims(D - 2, D - 1)
        } else {
            g
        };

        // Frobenius norm of each matrix, shape [..., 1, 1].
        let norm = x
            .clone()
            .square()
            .sum_dim(D - 1)
            .sum_dim(D - 2)
            .sqrt()
            .clamp_min(self.epsilon);
        x = x.div(norm);

        for q in &self.schedule {
            // A = X·Xᵀ ; B = b·A + c·A² ; X = a·X + B·X.
            let gram = x.clone().matmul(x.clone().swap_dims(D - 2, D - 1));
            let gram_sq = gram.clone().matmul(gram.clone());
            let poly = gram.mul_scalar(q.b).add(gram_sq.mul_scalar(q.c));
            let bx = poly.matmul(x.clone());
            // Pion's suppression step has a = 0: skip the axpy, not the matmuls.
            x = if q.a == 0.0 {
                bx
            } else {
                x.mul_scalar(q.a).add(bx)
            };
            if q.a.abs() < 1.0 {
                // See FLUSH_TO_ZERO: keep the next products out of subnormal range.
                let tiny = x.clone().abs().lower_elem(FLUSH_TO_ZERO);
                x = x.mask_fill(tiny, 0.0);
            }
        }

        if transpose {
            x.swap_dims(D - 2, D - 1)
        } else {
            x
        }
    }

    /// Per-head mode: cuts the `[rows, cols]` matrix `g` into `split.heads` blocks along
    /// `split.axis`, runs [`orthogonalize`](Self::orthogonalize) on every block independently (one
    /// batched call, each block with its own norm and transpose), and reassembles the matrix.
    /// Returns `None` when the heads do not divide the axis.
    ///
    /// The batched blocks cost `heads ×` the FLOPs of one block, which is never more than the
    /// whole-matrix iteration (Pion paper, per-head mode).
    pub fn orthogonalize_heads(&self, g: Tensor<2>, split: HeadSplit) -> Option<Tensor<2>> {
        let [rows, cols] = g.dims();
        let [block_rows, block_cols] = split.block_dims([rows, cols])?;
        let h = split.heads;
        Some(match split.axis {
            HeadAxis::Rows => {
                // [rows, cols] → [h, rows/h, cols]: row r = head·(rows/h) + i.
                let blocks: Tensor<3> = g.reshape([h, block_rows, cols]);
                self.orthogonalize(blocks).reshape([rows, cols])
            }
            HeadAxis::Cols => {
                // [rows, cols] → [rows, h, cols/h] → [h, rows, cols/h].
                let blocks = g.reshape([rows, h, block_cols]).swap_dims(0, 1);
                // [h, rows, cols/h] → [rows, h, cols/h] → [rows, cols].
                self.orthogonalize(blocks)
                    .swap_dims(0, 1)
                    .reshape([rows, cols])
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pion_schedule_puts_promotion_first() {
        let ns = NewtonSchulz::pion(5, 2, 1e-7).unwrap();
        let s = ns.schedule();
        assert_eq!(s.len(), 5);
        assert_eq!(&s[..2], &[Quintic::PION_PROMOTION; 2]);
        assert_eq!(&s[2..], &[Quintic::PION_SUPPRESSION; 3]);
    }

    #[test]
    fn pion_rejects_more_promotion_than_steps() {
        let err = NewtonSchulz::pion(5, 6, 1e-7).unwrap_err().to_string();
        assert!(err.contains("pion.promotion_steps"), "{err}");
    }

    #[test]
    fn suppression_fixed_point_is_sqrt_two_thirds() {
        // f_s(σ) = σ ⇔ 2.5σ² − 1.5σ⁴ = 1 ⇔ σ² ∈ {1, 2/3} (hand derivation).
        let s = (2.0f64 / 3.0).sqrt();
        assert!((Quintic::PION_SUPPRESSION.eval(s) - s).abs() < 1e-6);
        assert!((Quintic::PION_SUPPRESSION.eval(1.0) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn head_split_requires_divisibility() {
        let q = HeadSplit {
            heads: 4,
            axis: HeadAxis::Cols,
        };
        assert_eq!(q.block_dims([32, 64]), Some([32, 16]));
        assert_eq!(q.block_dims([32, 30]), None);
        let o = HeadSplit {
            heads: 4,
            axis: HeadAxis::Rows,
        };
        assert_eq!(o.block_dims([64, 32]), Some([16, 32]));
    }
}
