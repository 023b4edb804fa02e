//! A non-finite loss never reaches the weights: the update is skipped and counted, and every
//! parameter keeps its exact value.

mod common;

use burn::module::Module;
use rlvr_models::{hf_tensors, token_logprobs};
use rlvr_train::step::update::{Update, guarded_update};

#[test]
fn nan_loss_skips_the_update_and_leaves_weights_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let config = common::tiny_config(&tmp.path().join("run"), &[]);
    let (mut tr, _) = common::trainer(&config);
    let device = tr.device.clone();

    let ids = burn::tensor::Tensor::<2, burn::tensor::Int>::from_data([[5i64, 6, 7, 8]], &device);
    let mask = burn::tensor::Tensor::<2>::from_data([[0.0f32, 1.0, 1.0, 1.0]], &device);
    let before = hf_tensors(&tr.model().valid());

    let finite = token_logprobs(tr.model(), ids.clone(), mask.clone())
        .logp
        .sum();
    assert!(matches!(
        guarded_update(&mut tr, 1e-2, finite, 1.0),
        Update::Applied { .. }
    ));
    let after_finite = hf_tensors(&tr.model().valid());
    assert_ne!(
        before, after_finite,
        "a finite update must change the weights"
    );

    let nan = token_logprobs(tr.model(), ids, mask).logp.sum() * f32::NAN;
    let outcome = guarded_update(&mut tr, 1e-2, nan, 1.0);
    assert!(
        matches!(outcome, Update::Skipped { loss, .. } if loss.is_nan()),
        "{outcome:?}"
    );
    assert_eq!(tr.state.skipped_updates, 1);
    assert_eq!(
        hf_tensors(&tr.model().valid()),
        after_finite,
        "a NaN loss changed the weights"
    );
}
