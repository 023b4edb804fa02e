//! Two Muon and Pion steps against an independent NumPy float64 implementation of the reference
//! algorithms (`scripts/golden_steps.py`, output `tests/fixtures/golden_steps.json`). The script
//! works in PyTorch layout `[out, in]`; the fixture is transposed to burn's `[in, out]`, so these
//! tests also pin the layout conventions of the shape scaling and the per-head split.
//! Three AdamW steps against `torch.optim.AdamW` (`scripts/golden_adamw.py`) check that
//! [`AdamwConfig`]'s knobs mean what torch means.

mod common;

use burn::optim::Optimizer;
use burn::tensor::{Device, Tensor};
use common::{matrix, max_abs_diff, values};
use rlvr_optim::{AdamwConfig, HeadAxis, HeadSplit, MuonConfig, PionConfig, UpdateScale};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    kind: String,
    dims: [usize; 2],
    momentum: f64,
    nesterov: bool,
    lr: f64,
    weight_decay: f64,
    scale: String,
    factor: Option<f64>,
    promotion_steps: Option<usize>,
    per_head: Option<PerHead>,
    w0: Vec<f32>,
    grads: Vec<Vec<f32>>,
    expected: Vec<f32>,
}

#[derive(Deserialize)]
struct PerHead {
    heads: usize,
    /// PyTorch's `head_split_dim`: 0 for q/k/v (`[H·d_h, d_in]`), 1 for o_proj.
    split_dim: usize,
}

/// Tolerance: f32 iteration against the float64 reference, weights of magnitude ≈ 0.1–0.3.
const TOLERANCE: f32 = 2e-5;

fn run<O: Optimizer>(optim: &O, case: &Case, device: &Device) -> Vec<f32> {
    let mut w: Tensor<2> = matrix(case.w0.clone(), case.dims, device);
    let mut state = None;
    for g in &case.grads {
        let (next, s) = optim.step(case.lr, w, matrix(g.clone(), case.dims, device), state);
        w = next;
        state = s;
    }
    values(w)
}

#[test]
fn muon_and_pion_steps_match_the_numpy_reference() {
    let text = include_str!("fixtures/golden_steps.json");
    let fixture: Fixture = serde_json::from_str(text).unwrap();
    let device = Device::flex();
    assert_eq!(fixture.cases.len(), 5);
    for case in &fixture.cases {
        let scale = match case.scale.as_str() {
            "aspect_ratio" => UpdateScale::AspectRatio,
            _ => UpdateScale::MaxDim {
                factor: case.factor.unwrap(),
            },
        };
        // PyTorch splits q/k/v on dim 0 = output features; in burn's [in, out] that is dim 1.
        let heads = case.per_head.as_ref().map(|p| HeadSplit {
            heads: p.heads,
            axis: if p.split_dim == 0 {
                HeadAxis::Cols
            } else {
                HeadAxis::Rows
            },
        });
        let got = match case.kind.as_str() {
            "muon" => {
                let config = MuonConfig {
                    momentum: case.momentum,
                    nesterov: case.nesterov,
                    weight_decay: case.weight_decay,
                    scale,
                    ..MuonConfig::default()
                };
                run(&config.build(heads).unwrap(), case, &device)
            }
            _ => {
                let config = PionConfig {
                    momentum: case.momentum,
                    nesterov: case.nesterov,
                    weight_decay: case.weight_decay,
                    promotion_steps: case.promotion_steps.unwrap(),
                    scale,
                    ..PionConfig::default()
                };
                run(&config.build(heads).unwrap(), case, &device)
            }
        };
        let diff = max_abs_diff(&got, &case.expected);
        let moved = max_abs_diff(&case.w0, &case.expected);
        assert!(moved > 1e-3, "{}: the reference barely moves", case.name);
        assert!(diff < TOLERANCE, "{}: max |Δ| = {diff}", case.name);
    }
}

#[derive(Deserialize)]
struct AdamwFixture {
    lr: f64,
    beta1: f32,
    beta2: f32,
    epsilon: f32,
    weight_decay: f32,
    dims: [usize; 2],
    w0: Vec<f32>,
    grads: Vec<Vec<f32>>,
    expected: Vec<f32>,
}

#[test]
fn adamw_steps_match_torch() {
    let f: AdamwFixture = serde_json::from_str(include_str!("fixtures/golden_adamw.json")).unwrap();
    let adamw = AdamwConfig {
        beta1: f.beta1,
        beta2: f.beta2,
        epsilon: f.epsilon,
        weight_decay: f.weight_decay,
    }
    .build()
    .unwrap();
    let device = Device::flex();
    let mut w: Tensor<2> = matrix(f.w0.clone(), f.dims, &device);
    let mut state = None;
    for g in &f.grads {
        let (next, s) = adamw.step(f.lr, w, matrix(g.clone(), f.dims, &device), state);
        w = next;
        state = s;
    }
    let got = values(w);
    let diff = max_abs_diff(&got, &f.expected);
    assert!(
        max_abs_diff(&f.w0, &f.expected) > 1e-2,
        "the reference barely moves"
    );
    assert!(diff < 1e-5, "max |Δ| = {diff}");
}
