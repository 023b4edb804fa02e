//! The compute device of a run, chosen by cargo feature: libtorch (`tch`) or CUDA (`cuda`) when
//! built with them, else burn's pure-Rust CPU backend, flex. Training runs on it with autodiff.

use burn::tensor::Device;

/// The autodiff device for training: CUDA device 0 with `--features cuda`, libtorch's CPU with
/// `--features tch`, else flex (CPU, all cores through rayon; `RAYON_NUM_THREADS` limits them).
pub fn default_device() -> Device {
    #[cfg(feature = "cuda")]
    let device = Device::cuda(0);
    #[cfg(all(feature = "tch", not(feature = "cuda")))]
    #[allow(deprecated)] // burn-tch is deprecated upstream; still the libtorch backend of 0.22
    let device = Device::libtorch();
    #[cfg(not(any(feature = "cuda", feature = "tch")))]
    let device = Device::flex();
    device.autodiff()
}

/// [`default_device`] for the RL update, with burn's balanced gradient checkpointing when
/// `gradient_checkpointing` is on (`train.gradient_checkpointing`): memory-bound activations
/// (element-wise ops) are recomputed in the backward pass instead of kept, compute-bound ones
/// (matrix products) stay cached. The gradients are the same; peak memory and step time change.
pub fn training_device(gradient_checkpointing: bool) -> Device {
    let device = default_device();
    if gradient_checkpointing {
        device.gradient_checkpointing()
    } else {
        device
    }
}
