//! The compute device of a run, chosen by cargo feature: libtorch (`tch`) or CUDA (`cuda`) when
//! built with them, else burn's pure-Rust CPU backend, flex. Training runs on it with autodiff.

use burn::tensor::Device;

/// The autodiff device for training: CUDA device 0 with `--features cuda`, libtorch's CPU with
/// `--features tch`, else flex (CPU, all cores through rayon; `RAYON_NUM_THREADS` limits them).
pub fn default_device() -> Device {
    #[cfg(feature = "cuda")]
    let device = Device::cuda(0);
    #[cfg(all(feature = "tch", not(feature = "cuda")))]
    let device = Device::libtorch();
    #[cfg(not(any(feature = "cuda", feature = "tch")))]
    let device = Device::flex();
    device.autodiff()
}
