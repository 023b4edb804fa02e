//! The Newton–Schulz mechanism: Muon's singular-value band, Pion's scalar composition and
//! high-pass thresholds, per-head blocks, and the zero matrix.

mod common;

use burn::tensor::{Device, Distribution, Tensor};
use common::{matrix, max_abs_diff, singular_values, symmetric_eigenvalues, values};
use rlvr_optim::{HeadAxis, HeadSplit, NewtonSchulz, Quintic};

fn device() -> Device {
    let device = Device::flex();
    device.seed(7);
    device
}

#[test]
fn jacobi_eigensolver_on_hand_example() {
    // [[2, 1, 0], [1, 2, 0], [0, 0, 5]] has eigenvalues 5, 3, 1 (hand derivation: the 2×2 block
    // [[2,1],[1,2]] has eigenvectors (1,1), (1,−1) with eigenvalues 3, 1).
    let eig = symmetric_eigenvalues(vec![2., 1., 0., 1., 2., 0., 0., 0., 5.], 3);
    for (got, want) in eig.iter().zip([5.0, 3.0, 1.0]) {
        assert!((got - want).abs() < 1e-12, "{eig:?}");
    }
}

#[test]
fn muon_maps_random_64x32_into_the_quintic_band() {
    let device = device();
    let g = Tensor::<2>::random([64, 32], Distribution::Normal(0.0, 1.0), &device);
    let g_values = values(g.clone());
    let frobenius = g_values
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    let ns = NewtonSchulz::muon(Quintic::MUON, 5, 1e-7);
    let out = values(ns.orthogonalize(g));

    // Singular values by Jacobi (independent of burn).
    let sigma_out = singular_values(&out, 64, 32);
    // Five quintic steps map σ ∈ [0.01, 1] into [0.682, 1.203] (dense scan of the scalar map in
    // NumPy); Keller Jordan quotes "roughly [0.68, 1.13]" for typical inputs.
    for s in &sigma_out {
        assert!(
            (0.68..=1.21).contains(s),
            "σ = {s} outside the band: {sigma_out:?}"
        );
    }
    // Stronger: each output σ is the scalar map of an input σ (the iteration keeps singular
    // vectors). The map is not monotone, so compare sorted multisets.
    let mut expected: Vec<f64> = singular_values(&g_values, 64, 32)
        .into_iter()
        .map(|s| ns.map_singular_value(s / frobenius))
        .collect();
    expected.sort_by(|a, b| b.partial_cmp(a).unwrap());
    for (got, want) in sigma_out.iter().zip(&expected) {
        assert!((got - want).abs() < 1e-4, "σ {got} vs scalar map {want}");
    }
}

/// Diagonal entries whose normalised values straddle the cut-offs.
const DIAG: [f32; 5] = [0.95, 0.25, 0.15, 0.1, 0.05];

fn diagonal(rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    let mut v = vec![0.0; rows * cols];
    for (i, d) in DIAG.iter().enumerate().take(rows.min(cols)) {
        v[i * cols + i] = *d;
    }
    matrix(v, [rows, cols], device)
}

#[test]
fn pion_on_a_diagonal_is_the_scalar_composition() {
    let device = device();
    let norm = DIAG.iter().map(|d| d * d).sum::<f32>().sqrt();
    // Square, wide and tall (tall exercises the transpose).
    for (rows, cols) in [(5, 5), (5, 7), (7, 5)] {
        for kp in 0..=3 {
            let ns = NewtonSchulz::pion(5, kp, 1e-7).unwrap();
            let out = values(ns.orthogonalize(diagonal(rows, cols, &device)));
            for i in 0..rows {
                for j in 0..cols {
                    let want = if i == j {
                        ns.map_singular_value(f64::from(DIAG[i] / norm)) as f32
                    } else {
                        0.0
                    };
                    let got = out[i * cols + j];
                    assert!(
                        (got - want).abs() <= 1e-5,
                        "{rows}x{cols} k_p={kp} [{i},{j}]: {got} vs f_s^k_s(f_p^k_p(σ)) = {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn pion_pure_suppression_is_a_high_pass() {
    // Thresholds (k_p = 0, k = 5): a normalised σ ≥ 0.9 ends within 1e-3 of 1, a σ ≤ 0.5 ends
    // below 1e-3. Hand check: f_s(0.5) = 0.2656, f_s²(0.5) = 0.0449, f_s³ ≈ 2.3e-4.
    let ns = NewtonSchulz::pion(5, 0, 1e-7).unwrap();
    for s in [0.9, 0.95, 0.99, 1.0] {
        assert!((ns.map_singular_value(s) - 1.0).abs() < 1e-3, "σ = {s}");
    }
    for s in [0.5, 0.3, 0.1, 0.01] {
        assert!(ns.map_singular_value(s) < 1e-3, "σ = {s}");
    }
    // Through the matrix path: DIAG normalised is ≈ [0.951, 0.250, 0.150, 0.100, 0.050].
    let device = device();
    let out = values(ns.orthogonalize(diagonal(5, 5, &device)));
    assert!((out[0] - 1.0).abs() < 1e-3, "kept: {}", out[0]);
    for i in 1..5 {
        assert!(
            out[i * 5 + i].abs() < 1e-3,
            "suppressed: {}",
            out[i * 5 + i]
        );
    }
    // With one promotion step (the paper's demo split) σ = 0.5 survives: f_s⁴(f_p(0.5)) ≈ 0.59.
    let demo = NewtonSchulz::pion(5, 1, 1e-7).unwrap();
    assert!((demo.map_singular_value(0.5) - 0.59).abs() < 0.01);
}

fn blockwise(ns: &NewtonSchulz, g: Tensor<2>, split: HeadSplit) -> Tensor<2> {
    let [rows, cols] = g.dims();
    let blocks = (0..split.heads)
        .map(|h| {
            let block = match split.axis {
                HeadAxis::Rows => {
                    let r = rows / split.heads;
                    g.clone().slice([h * r..(h + 1) * r, 0..cols])
                }
                HeadAxis::Cols => {
                    let c = cols / split.heads;
                    g.clone().slice([0..rows, h * c..(h + 1) * c])
                }
            };
            ns.orthogonalize(block)
        })
        .collect();
    let dim = match split.axis {
        HeadAxis::Rows => 0,
        HeadAxis::Cols => 1,
    };
    Tensor::cat(blocks, dim)
}

#[test]
fn per_head_mode_equals_iterating_each_block() {
    let device = device();
    for ns in [
        NewtonSchulz::muon(Quintic::MUON, 5, 1e-7),
        NewtonSchulz::pion(5, 1, 1e-7).unwrap(),
    ] {
        for (dims, axis) in [
            ([16, 24], HeadAxis::Cols), // q_proj [in, heads·d_h]: wide blocks 16×6, transposed
            ([24, 16], HeadAxis::Rows), // o_proj [heads·d_h, out]: blocks 6×16
            ([8, 32], HeadAxis::Cols),  // blocks 8×8
        ] {
            let g = Tensor::<2>::random(dims, Distribution::Normal(0.0, 1.0), &device);
            let split = HeadSplit { heads: 4, axis };
            let batched = values(ns.orthogonalize_heads(g.clone(), split).unwrap());
            let reference = values(blockwise(&ns, g, split));
            let diff = max_abs_diff(&batched, &reference);
            assert!(diff < 1e-5, "{dims:?} {axis:?}: max diff {diff}");
        }
    }
}

#[test]
fn per_head_mode_refuses_non_dividing_heads() {
    let ns = NewtonSchulz::muon(Quintic::MUON, 5, 1e-7);
    let g = Tensor::<2>::zeros([6, 10], &device());
    let split = HeadSplit {
        heads: 4,
        axis: HeadAxis::Cols,
    };
    assert!(ns.orthogonalize_heads(g, split).is_none());
}

#[test]
fn zero_gradient_gives_zero_update_not_nan() {
    let device = device();
    for ns in [
        NewtonSchulz::muon(Quintic::MUON, 5, 1e-7),
        NewtonSchulz::pion(5, 0, 1e-7).unwrap(),
    ] {
        let out = values(ns.orthogonalize(Tensor::<2>::zeros([4, 6], &device)));
        assert!(out.iter().all(|&x| x == 0.0), "{out:?}");
    }
}
