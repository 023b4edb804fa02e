//! criterion benchmarks of rlvr-optim: one optimizer step of AdamW (burn), Muon and Pion on a
//! single weight matrix, and the Newton–Schulz iteration alone, on the flex CPU backend.
//!
//! Run: `cargo bench -p rlvr-benches --bench optim -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use burn::optim::{AdamW, Optimizer};
use burn::tensor::{Device, Distribution, Tensor};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rlvr_optim::{
    AdamwConfig, HeadAxis, HeadSplit, Muon, MuonConfig, NewtonSchulz, Pion, PionConfig, Quintic,
};

/// Weight shapes `[rows, cols]` as burn stores them.
const SHAPES: [[usize; 2]; 3] = [[256, 256], [1024, 1024], [2048, 512]];

fn name(dims: [usize; 2]) -> String {
    format!("{}x{}", dims[0], dims[1])
}

fn random(dims: [usize; 2], device: &Device) -> Tensor<2> {
    Tensor::random(dims, Distribution::Normal(0.0, 1.0), device)
}

/// Benchmarks `optim.step` with a warm state (momentum filled by one previous step).
fn bench_step<O: Optimizer>(c: &mut Criterion, group: &str, optim: &O, shapes: &[[usize; 2]])
where
    O::State<2>: Clone,
{
    let device = Device::flex();
    device.seed(0);
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    for &dims in shapes {
        let w = random(dims, &device);
        let grad = random(dims, &device);
        let (w, state) = optim.step(1e-3, w, grad.clone(), None);
        g.throughput(Throughput::Elements((dims[0] * dims[1]) as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name(dims)), &dims, |b, _| {
            b.iter(|| {
                let (out, s) = optim.step(1e-3, w.clone(), grad.clone(), state.clone());
                black_box((out, s))
            })
        });
    }
    g.finish();
}

fn adamw() -> AdamW {
    AdamwConfig::default().build().unwrap()
}

fn muon() -> Muon {
    MuonConfig::default().build(None).unwrap()
}

fn pion(heads: Option<HeadSplit>) -> Pion {
    PionConfig::default().build(heads).unwrap()
}

fn steps(c: &mut Criterion) {
    bench_step(c, "optim/adamw/step", &adamw(), &SHAPES);
    bench_step(c, "optim/muon/step", &muon(), &SHAPES);
    bench_step(c, "optim/pion/step", &pion(None), &SHAPES);
    // Per-head Pion on a 1024×1024 q_proj ([in, out], 16 heads of 64 columns).
    let heads = HeadSplit {
        heads: 16,
        axis: HeadAxis::Cols,
    };
    bench_step(
        c,
        "optim/pion_per_head16/step",
        &pion(Some(heads)),
        &[[1024, 1024]],
    );
}

fn newton_schulz(c: &mut Criterion) {
    let device = Device::flex();
    device.seed(1);
    let schedules = [
        ("muon", NewtonSchulz::muon(Quintic::MUON, 5, 1e-7)),
        ("pion", NewtonSchulz::pion(5, 0, 1e-7).unwrap()),
    ];
    for (label, ns) in schedules {
        let mut g = c.benchmark_group(format!("optim/newton_schulz/{label}"));
        g.sample_size(10);
        for dims in SHAPES {
            let x = random(dims, &device);
            g.throughput(Throughput::Elements((dims[0] * dims[1]) as u64));
            g.bench_with_input(BenchmarkId::from_parameter(name(dims)), &dims, |b, _| {
                b.iter(|| black_box(ns.orthogonalize(x.clone())))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, steps, newton_schulz);
criterion_main!(benches);
