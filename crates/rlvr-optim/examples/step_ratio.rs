//! Interleaved timing of Muon, Pion and AdamW steps on one weight matrix.
//!
//! The three steps alternate within each round, and the Pion/Muon ratio is the median of the
//! per-round ratios, so load changes on a shared machine affect both sides of the ratio alike
//! (criterion runs each benchmark in its own time window).
//! Run: `cargo run --release -p rlvr-optim --example step_ratio`
use std::time::Instant;

use burn::optim::Optimizer;
use burn::tensor::{Device, Distribution, Tensor};
use rlvr_optim::{AdamwConfig, MuonConfig, PionConfig};

fn main() {
    let device = Device::flex();
    device.seed(0);
    let muon = MuonConfig::default().build(None).unwrap();
    let pion = PionConfig::default().build(None).unwrap();
    let adamw = AdamwConfig::default().build().unwrap();
    for (dims, rounds) in [([256, 256], 30), ([1024, 1024], 7), ([2048, 512], 9)] {
        let w = Tensor::<2>::random(dims, Distribution::Normal(0.0, 1.0), &device);
        let g = Tensor::<2>::random(dims, Distribution::Normal(0.0, 1.0), &device);
        let (_, sm) = muon.step(1e-3, w.clone(), g.clone(), None);
        let (_, sp) = pion.step(1e-3, w.clone(), g.clone(), None);
        let (_, sa) = adamw.step(1e-3, w.clone(), g.clone(), None);
        let (mut tm, mut tp, mut ta, mut ratio) = (vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            let t = Instant::now();
            let out = muon.step(1e-3, w.clone(), g.clone(), sm.clone());
            drop(out);
            let m = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let out = pion.step(1e-3, w.clone(), g.clone(), sp.clone());
            drop(out);
            let p = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let out = adamw.step(1e-3, w.clone(), g.clone(), sa.clone());
            drop(out);
            let a = t.elapsed().as_secs_f64();
            tm.push(m);
            tp.push(p);
            ta.push(a);
            ratio.push(p / m);
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v[v.len() / 2]
        };
        let (m, p, a, r) = (med(&mut tm), med(&mut tp), med(&mut ta), med(&mut ratio));
        println!(
            "{dims:?}: adamw {:.3} ms  muon {:.2} ms  pion {:.2} ms  median(pion/muon per round) {r:.3}  muon/adamw {:.1}",
            a * 1e3,
            m * 1e3,
            p * 1e3,
            m / a
        );
    }
}
