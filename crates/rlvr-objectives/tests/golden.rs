//! Golden values: loss and gradient w.r.t. `logp` for every objective on one fixed batch, against
//! `scripts/reference.py` (PyTorch float64, written from the spec formulas), to 1e-5.

mod common;

use burn::tensor::Device;
use common::{fixture, fixture_batch, floats, grad_of};
use rlvr_objectives::{LossContext, ObjectiveConfig, compute_advantages, nsr_loss_with_draws};

const TOL: f32 = 1e-5;

#[test]
fn every_case_matches_the_reference() {
    let fx = fixture();
    let device = Device::flex().autodiff();
    let rewards = floats(&fx["rewards"]);
    let g = fx["group_size"].as_u64().unwrap() as usize;
    let u = floats(&fx["inputs"]["u"]);
    let cases = fx["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    let mut kinds = std::collections::BTreeSet::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let config: ObjectiveConfig = serde_json::from_value(case["config"].clone()).unwrap();
        kinds.insert(config.name());
        let adv = compute_advantages(&config.advantage_config(), &rewards, g).unwrap();
        for (got, want) in adv.values.iter().zip(floats(&case["advantages"])) {
            assert!(
                (got - want).abs() < TOL,
                "{name}: advantage {got} != {want}"
            );
        }
        let (batch, logp) = fixture_batch(&fx, &adv.values, &device);
        let ctx = LossContext::new(0, 0);
        let out = match &config {
            ObjectiveConfig::Nsr(c) => nsr_loss_with_draws(&batch, c, &ctx, &u).unwrap(),
            _ => config.loss(&batch, &ctx).unwrap(),
        };
        let loss = out.loss.clone().into_scalar::<f32>();
        let want = case["loss"].as_f64().unwrap() as f32;
        assert!((loss - want).abs() < TOL, "{name}: loss {loss} != {want}");
        let grad = grad_of(&out.loss, &logp);
        for (i, (got, want)) in grad.iter().zip(floats(&case["grad"])).enumerate() {
            assert!(
                (got - want).abs() < TOL,
                "{name}: grad[{i}] {got} != {want}"
            );
        }
    }
    assert_eq!(
        kinds.len(),
        9,
        "every registry entry has a golden case: {kinds:?}"
    );
}
