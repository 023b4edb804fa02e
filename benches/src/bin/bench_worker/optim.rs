//! Optimizer workload: one Muon or Pion step (momentum, Newton–Schulz, weight decay, update) on
//! one weight matrix with warm momentum, as `benches/benches/optim.rs` measures it.

use std::time::Instant;

use anyhow::{Result, bail};
use burn::optim::Optimizer;
use burn::tensor::{Device, Distribution, Tensor};
use rlvr_optim::{MuonConfig, PionConfig};
use serde_json::{Value, json};

use crate::median;

fn timed<O: Optimizer>(
    optim: &O,
    rows: usize,
    cols: usize,
    warmup: usize,
    iters: usize,
) -> Vec<f64> {
    let device = Device::flex();
    device.seed(0);
    let w = Tensor::<2>::random([rows, cols], Distribution::Normal(0.0, 1.0), &device);
    let grad = Tensor::<2>::random([rows, cols], Distribution::Normal(0.0, 1.0), &device);
    let (mut w, mut state) = optim.step(1e-3, w, grad.clone(), None);
    let mut times = Vec::new();
    for i in 0..warmup + iters {
        let start = Instant::now();
        let (out, s) = optim.step(1e-3, w, grad.clone(), state);
        // Read one number back so that the step has certainly run.
        let _: f32 = out.clone().sum().into_scalar();
        let secs = start.elapsed().as_secs_f64();
        (w, state) = (out, s);
        if i >= warmup {
            times.push(secs);
        }
    }
    times
}

/// Times `iters` steps of the default Muon or Pion (whole matrix, no head split).
pub fn step(kind: &str, rows: usize, cols: usize, warmup: usize, iters: usize) -> Result<Value> {
    let times = match kind {
        "muon" => timed(
            &MuonConfig::default().build(None)?,
            rows,
            cols,
            warmup,
            iters,
        ),
        "pion" => timed(
            &PionConfig::default().build(None)?,
            rows,
            cols,
            warmup,
            iters,
        ),
        other => bail!("unknown optimizer `{other}` (muon, pion)"),
    };
    let ms = 1e3 * median(&times);
    Ok(json!({
        "workload": "optim",
        "kind": kind,
        "rows": rows, "cols": cols,
        "value": 1e3 / ms,
        "unit": "steps/s",
        "step_ms": ms,
        "step_s": times,
    }))
}
