//! RELEX (offline): rank-r extrapolation of one parameter tensor's checkpoint trajectory.
//!
//! # Paper
//! "RELEX: rank-1 extrapolation of RLVR checkpoints",
//! [arXiv 2605.21468](https://arxiv.org/abs/2605.21468); code weizhepei/RELEX
//! (`scripts/svd_extrapolation.py`). Specification: `methods-core.md` §8.
//!
//! # Formula (exact, from the code)
//! Per tensor: deltas Δ_s = θ_s − θ_0 stacked as rows of M (T × d). Gram G = M Mᵀ,
//! eigendecomposed (descending); σ_k = √max(λ_k, 0); V_r = Mᵀ U_r / σ (components with
//! σ_k ≤ 1e-6 σ_1 are zeroed); explained variance Σ_{k≤r} λ_k / Σ λ_k. Coefficients C = U_r σ.
//! A line per component by OLS over τ = 0..W−1 on the last W rows; prediction at τ* =
//! (W − 1) + (target_step − last_step): θ̂ = θ_0 + Σ_k ĉ_k v_k. The caller loops over tensors.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, ensure};

/// Relative cut-off below which a component is dropped (σ_k ≤ 1e-6 σ_1, as the code).
const SIGMA_REL_CUTOFF: f64 = 1e-6;
/// Jacobi sweeps stop when the off-diagonal mass falls below this fraction of the trace.
const JACOBI_TOL: f64 = 1e-15;
/// The most Jacobi sweeps (T ≤ a few hundred converges in ~10).
const JACOBI_MAX_SWEEPS: usize = 100;

/// RELEX knobs (spec §8 defaults: rank 1, linear fit, full window).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelexConfig {
    /// r, the number of components (default 1).
    pub rank: usize,
    /// W, the trailing checkpoints the lines are fitted on (default 0 = all).
    pub window: usize,
}

impl Default for RelexConfig {
    fn default() -> Self {
        Self { rank: 1, window: 0 }
    }
}

/// A fitted trajectory of one tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct RelexFit {
    /// v_k, each of length d (zero for dropped components).
    pub components: Vec<Vec<f64>>,
    /// σ_k of the kept components.
    pub singular_values: Vec<f64>,
    /// Σ_{k≤r} λ_k / Σ λ_k (1 for a tensor that never moves).
    pub explained_variance: f64,
    /// OLS slope per component.
    pub slopes: Vec<f64>,
    /// OLS intercept per component.
    pub intercepts: Vec<f64>,
    /// W actually used.
    pub window: usize,
}

impl RelexFit {
    /// θ̂ at `target_step`, given the last history step (in the same units; multiply by the
    /// checkpoint cadence, the code's `step_scale`, before calling).
    pub fn predict(&self, base: &[f32], last_step: f64, target_step: f64) -> Vec<f32> {
        let tau = (self.window as f64 - 1.0) + (target_step - last_step);
        let mut out: Vec<f64> = base.iter().map(|&x| f64::from(x)).collect();
        for ((v, s), b) in self
            .components
            .iter()
            .zip(&self.slopes)
            .zip(&self.intercepts)
        {
            let c = s * tau + b;
            for (o, vi) in out.iter_mut().zip(v) {
                *o += c * vi;
            }
        }
        out.into_iter().map(|x| x as f32).collect()
    }
}

/// Fits RELEX on `checkpoints` (θ_1..θ_T, flattened like `base` = θ_0).
pub fn relex_fit(base: &[f32], checkpoints: &[Vec<f32>], cfg: &RelexConfig) -> Result<RelexFit> {
    let t = checkpoints.len();
    ensure(
        t >= 2,
        "checkpoints",
        t,
        "need at least 2 checkpoints for a slope",
    )?;
    ensure(cfg.rank >= 1, "relex.rank", cfg.rank, "must be >= 1")?;
    let window = if cfg.window == 0 {
        t
    } else {
        cfg.window.min(t)
    };
    ensure(
        window >= 2,
        "relex.window",
        cfg.window,
        "must be 0 (all) or >= 2",
    )?;
    let d = base.len();
    let mut m = Vec::with_capacity(t);
    for (s, th) in checkpoints.iter().enumerate() {
        if th.len() != d {
            return Err(Error::LengthMismatch {
                name: "checkpoints",
                expected: d,
                got: th.len(),
            });
        }
        if let Some(i) = th.iter().position(|x| !x.is_finite()) {
            return Err(Error::BadInput {
                field: "checkpoints",
                index: s,
                reason: format!("value {i} is {}", th[i]),
            });
        }
        m.push(
            th.iter()
                .zip(base)
                .map(|(&a, &b)| f64::from(a) - f64::from(b))
                .collect::<Vec<f64>>(),
        );
    }
    let mut gram = vec![vec![0.0; t]; t];
    for i in 0..t {
        for j in 0..=i {
            let x: f64 = m[i].iter().zip(&m[j]).map(|(a, b)| a * b).sum();
            gram[i][j] = x;
            gram[j][i] = x;
        }
    }
    let (vals, vecs) = symmetric_eigen(gram);
    let total: f64 = vals.iter().map(|v| v.max(0.0)).sum();
    let r = cfg.rank.min(t);
    let sigma1 = vals[0].max(0.0).sqrt();
    let explained = if total > 0.0 {
        vals[..r].iter().map(|v| v.max(0.0)).sum::<f64>() / total
    } else {
        1.0
    };
    let mut fit = RelexFit {
        components: Vec::new(),
        singular_values: Vec::new(),
        explained_variance: explained,
        slopes: Vec::new(),
        intercepts: Vec::new(),
        window,
    };
    let taus: Vec<f64> = (0..window).map(|x| x as f64).collect();
    let tau_mean = taus.iter().sum::<f64>() / window as f64;
    let sxx: f64 = taus.iter().map(|x| (x - tau_mean).powi(2)).sum();
    for k in 0..r {
        let sigma = vals[k].max(0.0).sqrt();
        if sigma <= SIGMA_REL_CUTOFF * sigma1 || sigma == 0.0 {
            break;
        }
        let u: Vec<f64> = (0..t).map(|i| vecs[i][k]).collect();
        let v: Vec<f64> = (0..d)
            .map(|j| (0..t).map(|i| m[i][j] * u[i]).sum::<f64>() / sigma)
            .collect();
        let c: Vec<f64> = u[t - window..].iter().map(|x| x * sigma).collect();
        let c_mean = c.iter().sum::<f64>() / window as f64;
        let slope = taus
            .iter()
            .zip(&c)
            .map(|(x, y)| (x - tau_mean) * (y - c_mean))
            .sum::<f64>()
            / sxx;
        fit.intercepts.push(c_mean - slope * tau_mean);
        fit.slopes.push(slope);
        fit.singular_values.push(sigma);
        fit.components.push(v);
    }
    Ok(fit)
}

/// Eigenvalues (descending) and eigenvectors (columns) of a symmetric matrix, by cyclic Jacobi.
fn symmetric_eigen(mut a: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = a.len();
    let mut v: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    let scale: f64 = (0..n)
        .map(|i| a[i][i].abs())
        .sum::<f64>()
        .max(f64::MIN_POSITIVE);
    for _ in 0..JACOBI_MAX_SWEEPS {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off.sqrt() <= JACOBI_TOL * scale {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if a[p][q] == 0.0 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in a.iter_mut() {
                    let (akp, akq) = (row[p], row[q]);
                    row[p] = c * akp - s * akq;
                    row[q] = s * akp + c * akq;
                }
                let (row_p, row_q) = (a[p].clone(), a[q].clone());
                for (k, (apk, aqk)) in row_p.into_iter().zip(row_q).enumerate() {
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vp, vq) = (row[p], row[q]);
                    row[p] = c * vp - s * vq;
                    row[q] = s * vp + c * vq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| a[j][j].total_cmp(&a[i][i]));
    let vals = order.iter().map(|&i| a[i][i]).collect();
    let vecs = (0..n)
        .map(|r| order.iter().map(|&i| v[r][i]).collect())
        .collect();
    (vals, vecs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec §8 toy example (d = 2): Δ = (1, 2), (2, 4.1), (3, 5.9) → σ_1 = 8.344, explained
    /// 0.99994, slope 2.1914, intercept 2.2808; target step 10 from last step 3 (W = 3):
    /// τ* = 9, ĉ = 22.003, Δ̂ = (9.87, 19.67).
    #[test]
    fn spec_toy_example() {
        let base = [0.0f32, 0.0];
        let ck = vec![vec![1.0, 2.0], vec![2.0, 4.1], vec![3.0, 5.9]];
        let fit = relex_fit(&base, &ck, &RelexConfig::default()).unwrap();
        assert!((fit.singular_values[0] - 8.344).abs() < 1e-3, "{fit:?}");
        assert!((fit.explained_variance - 0.99994).abs() < 1e-5);
        // Sign of v is arbitrary; |slope| and |intercept| are not.
        assert!((fit.slopes[0].abs() - 2.1914).abs() < 1e-3);
        assert!((fit.intercepts[0].abs() - 2.2808).abs() < 1e-3);
        let p = fit.predict(&base, 3.0, 10.0);
        assert!(
            (p[0] - 9.87).abs() < 1e-2 && (p[1] - 19.67).abs() < 1e-2,
            "{p:?}"
        );
    }

    #[test]
    fn frozen_tensor_and_bad_input() {
        let fit = relex_fit(
            &[1.0, 2.0],
            &vec![vec![1.0, 2.0]; 3],
            &RelexConfig::default(),
        )
        .unwrap();
        assert!(fit.components.is_empty());
        assert_eq!(fit.predict(&[1.0, 2.0], 3.0, 50.0), [1.0, 2.0]);
        assert!(relex_fit(&[0.0], &[vec![1.0]], &RelexConfig::default()).is_err());
        let err = relex_fit(
            &[0.0],
            &[vec![1.0], vec![1.0, 2.0]],
            &RelexConfig::default(),
        );
        assert!(matches!(err, Err(Error::LengthMismatch { .. })));
    }
}
