//! Helpers shared by the LoRA and weight-dtype tests: the tiny Qwen2 fixture, a fixed batch of
//! ids, logits as a vector, and adapters with a non-zero `B`.

#![allow(dead_code)] // each test binary uses a different part

use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::tensor::{DType, Device, Distribution, Int, Tensor, TensorData};
use rlvr_models::{CausalLm, load_pretrained};

/// The tiny Qwen2 checkpoint under tests/fixtures.
pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-qwen2")
}

/// The fixture's model on `device`.
pub fn base(device: &Device) -> CausalLm {
    load_pretrained(&fixture(), device).unwrap().0
}

/// Token ids of the fixed `[2, 6]` batch.
pub const IDS: [i64; 12] = [5, 17, 200, 3, 9, 0, 250, 1, 2, 3, 4, 5];

/// The fixed batch on `device`.
pub fn ids(device: &Device) -> Tensor<2, Int> {
    Tensor::from_data(TensorData::new(IDS.to_vec(), [2, 6]), device)
}

/// The model's logits on the fixed batch (always computed in f32).
pub fn logits(model: &CausalLm, device: &Device) -> Vec<f32> {
    let out = model.forward(ids(device));
    assert_eq!(out.dtype(), DType::F32, "forward passes compute in f32");
    out.into_data().try_to_vec::<f32>().unwrap()
}

/// Largest absolute difference of two equal-length vectors.
pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Gives every adapter a random `B` (a fresh one is zero and would hide most mistakes, and zero
/// `A`'s gradient).
pub fn randomize_b(mut model: CausalLm) -> CausalLm {
    let device = model.device();
    for layer in &mut model.model.layers {
        for (_, proj) in layer.projections_mut() {
            if let Some(lora) = &mut proj.lora {
                let shape = lora.lora_b.shape().dims::<2>();
                lora.lora_b = Param::from_tensor(Tensor::random(
                    shape,
                    Distribution::Normal(0.0, 0.05),
                    &device,
                ));
            }
        }
    }
    model
}
