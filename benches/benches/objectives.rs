//! Loss + backward of every objective on a B = 64, T = 512 batch (flex backend, autodiff).

use std::hint::black_box;

use burn::tensor::{Device, Tensor, TensorData};
use criterion::{Criterion, criterion_group, criterion_main};
use rlvr_objectives::{LossContext, ObjectiveConfig, PolicyBatch, broadcast_advantages};

const B: usize = 64;
const T: usize = 512;

/// Deterministic pseudo-random values in [lo, hi) (a fixed LCG; benchmarks need no statistics).
fn values(seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed;
    (0..B * T)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

fn bench_objectives(c: &mut Criterion) {
    let device = Device::flex().autodiff();
    let logp = TensorData::new(values(1, -3.0, -0.1), [B, T]);
    let delta = values(2, -0.4, 0.4);
    let old: Vec<f32> = logp
        .clone()
        .try_to_vec::<f32>()
        .unwrap()
        .iter()
        .zip(&delta)
        .map(|(l, d)| l - d)
        .collect();
    let refp: Vec<f32> = values(3, -3.0, -0.1);
    let lengths: Vec<usize> = (0..B).map(|i| T / 2 + (i * 37) % (T / 2)).collect();
    let mask: Vec<f32> = (0..B * T)
        .map(|k| if k % T < lengths[k / T] { 1.0 } else { 0.0 })
        .collect();
    let adv: Vec<f32> = (0..B)
        .map(|i| if i % 3 == 0 { 1.0 } else { -0.5 })
        .collect();
    let t = |v: &[f32]| Tensor::<2>::from_data(TensorData::new(v.to_vec(), [B, T]), &device);
    let (old, refp, mask) = (t(&old), t(&refp), t(&mask));
    let adv = broadcast_advantages(&adv, T, &device);

    let mut group = c.benchmark_group("objective_loss_backward_64x512");
    for kind in ObjectiveConfig::KINDS {
        let objective = ObjectiveConfig::from_kind(kind).unwrap();
        group.bench_function(kind, |bench| {
            bench.iter(|| {
                let leaf = Tensor::<2>::from_data(logp.clone(), &device).require_grad();
                let batch = PolicyBatch::new(
                    leaf.clone(),
                    old.clone(),
                    Some(refp.clone()),
                    None,
                    adv.clone(),
                    mask.clone(),
                    None,
                )
                .unwrap();
                let out = objective.loss(&batch, &LossContext::new(0, 0)).unwrap();
                let grads = out.loss.backward();
                black_box(leaf.grad(&grads).unwrap().into_data())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_objectives);
criterion_main!(benches);
