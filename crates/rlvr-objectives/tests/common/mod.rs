//! Shared helpers of the integration tests: the golden fixture and batch builders.

#![allow(dead_code)]

use burn::tensor::{Device, Tensor};
use rlvr_objectives::{PolicyBatch, broadcast_advantages, tensor_from_rows};
use serde_json::Value;

/// The fixture written by `scripts/reference.py`.
pub fn fixture() -> Value {
    let text = include_str!("../fixtures/objectives_golden.json");
    serde_json::from_str(text).expect("fixture parses")
}

/// A float vector from a JSON array.
pub fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number") as f32)
        .collect()
}

/// Asserts `got` equals `want` elementwise within `tol` (the golden tests' comparison).
pub fn close_within<T: Copy + Into<f64> + std::fmt::Debug>(
    got: &[T],
    want: &[T],
    tol: f64,
    what: &str,
) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (&g, &w) in got.iter().zip(want) {
        assert!(
            (g.into() - w.into()).abs() < tol,
            "{what}: {got:?} vs {want:?}"
        );
    }
}

/// One float vector per element of a JSON array of arrays (per-token values per sequence).
pub fn rows(v: &Value) -> Vec<Vec<f32>> {
    v.as_array().expect("array").iter().map(floats).collect()
}

/// The fixture's input `name` as a `[B, T]` tensor.
pub fn input(fx: &Value, name: &str, device: &Device) -> Tensor<2> {
    let dims = [
        fx["B"].as_u64().unwrap() as usize,
        fx["T"].as_u64().unwrap() as usize,
    ];
    tensor_from_rows(&floats(&fx["inputs"][name]), dims, device)
}

/// An autodiff batch over the fixture's inputs with per-sequence advantages `adv`; returns the
/// batch and the `logp` leaf to read gradients from.
pub fn fixture_batch(fx: &Value, adv: &[f32], device: &Device) -> (PolicyBatch, Tensor<2>) {
    let t = fx["T"].as_u64().unwrap() as usize;
    let logp = input(fx, "logp", device).require_grad();
    let batch = PolicyBatch::new(
        logp.clone(),
        input(fx, "old_logp", device),
        Some(input(fx, "ref_logp", device)),
        Some(input(fx, "sampler_logp", device)),
        broadcast_advantages(adv, t, device),
        input(fx, "mask", device),
        Some(input(fx, "entropy", device)),
    )
    .expect("fixture shapes agree");
    (batch, logp)
}

/// A small batch from host rows: logp (leaf), old logp, per-sequence advantages, mask.
pub fn small_batch(
    logp: &[f32],
    old: &[f32],
    adv: &[f32],
    mask: &[f32],
    dims: [usize; 2],
    device: &Device,
) -> (PolicyBatch, Tensor<2>) {
    let lp = tensor_from_rows(logp, dims, device).require_grad();
    let batch = PolicyBatch::new(
        lp.clone(),
        tensor_from_rows(old, dims, device),
        None,
        None,
        broadcast_advantages(adv, dims[1], device),
        tensor_from_rows(mask, dims, device),
        None,
    )
    .expect("shapes agree");
    (batch, lp)
}

/// Gradient of `loss` w.r.t. `leaf`, on the host.
pub fn grad_of(loss: &Tensor<1>, leaf: &Tensor<2>) -> Vec<f32> {
    let grads = loss.backward();
    leaf.grad(&grads)
        .expect("leaf has a gradient")
        .into_data()
        .try_to_vec::<f32>()
        .unwrap()
}
