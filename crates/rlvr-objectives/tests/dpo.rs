//! DPO against `scripts/reference_dpo.py` (PyTorch autograd, float64): loss, gradients with
//! respect to the policy's sequence log-probs, and metrics, to 1e-5 (relative for the loss).

mod common;

use common::floats;

use burn::tensor::{Device, Tensor};
use rlvr_objectives::{DpoConfig, Error, dpo_loss, sequence_logp, tensor_from_rows};
use serde_json::Value;

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-5 * b.abs().max(1.0),
        "{what}: {a} vs reference {b}"
    );
}

#[test]
fn loss_gradients_and_metrics_match_the_reference() {
    let cases: Vec<Value> = serde_json::from_str(include_str!("fixtures/dpo_golden.json")).unwrap();
    let device = Device::flex().autodiff();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let pc = Tensor::<1>::from_floats(floats(&case["policy_chosen"]).as_slice(), &device)
            .require_grad();
        let pr = Tensor::<1>::from_floats(floats(&case["policy_rejected"]).as_slice(), &device)
            .require_grad();
        let cfg = DpoConfig {
            beta: case["beta"].as_f64().unwrap(),
        };
        let out = dpo_loss(
            pc.clone(),
            pr.clone(),
            &floats(&case["ref_chosen"]),
            &floats(&case["ref_rejected"]),
            &cfg,
        )
        .unwrap();
        close(
            f64::from(out.loss.clone().into_scalar::<f32>()),
            case["loss"].as_f64().unwrap(),
            name,
        );
        let grads = out.loss.backward();
        for (t, key) in [(&pc, "grad_chosen"), (&pr, "grad_rejected")] {
            let g = t
                .grad(&grads)
                .unwrap()
                .into_data()
                .try_to_vec::<f32>()
                .unwrap();
            for (a, b) in g.iter().zip(floats(&case[key])) {
                close(f64::from(*a), f64::from(b), key);
            }
        }
        for key in [
            "margin",
            "accuracy",
            "ref_margin",
            "ref_margin_std",
            "ref_prefers_chosen",
        ] {
            close(
                out.metrics[&format!("dpo/{key}")],
                case[key].as_f64().unwrap(),
                key,
            );
        }
    }
}

/// Hand derivation: rows (−1, −2, masked −9) and (−0.5, −0.25, −0.25) sum to −3 and −1.
#[test]
fn sequence_logp_sums_the_masked_tokens() {
    let device = Device::flex();
    let logp = tensor_from_rows(&[-1.0, -2.0, -9.0, -0.5, -0.25, -0.25], [2, 3], &device);
    let mask = tensor_from_rows(&[1.0, 1.0, 0.0, 1.0, 1.0, 1.0], [2, 3], &device);
    let s = sequence_logp(logp, mask)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
    assert_eq!(s, vec![-3.0, -1.0]);
}

#[test]
fn mismatched_or_bad_inputs_are_typed_errors() {
    let device = Device::flex();
    let t = |v: &[f32]| Tensor::<1>::from_floats(v, &device);
    let cfg = DpoConfig::default();
    assert!(matches!(
        dpo_loss(t(&[-1.0, -2.0]), t(&[-1.0]), &[0.0, 0.0], &[0.0, 0.0], &cfg),
        Err(Error::LengthMismatch {
            name: "policy_rejected",
            ..
        })
    ));
    assert!(matches!(
        dpo_loss(t(&[-1.0]), t(&[-1.0]), &[f32::NAN], &[0.0], &cfg),
        Err(Error::NonFinite {
            field: "ref_chosen",
            ..
        })
    ));
    assert!(matches!(
        dpo_loss(
            t(&[-1.0]),
            t(&[-1.0]),
            &[0.0],
            &[0.0],
            &DpoConfig { beta: 0.0 }
        ),
        Err(Error::InvalidConfig {
            field: "dpo.beta",
            ..
        })
    ));
}
