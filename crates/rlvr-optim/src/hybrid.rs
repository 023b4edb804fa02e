//! The optimizer the training loop holds: burn's `ModuleOptimizer` with the routed groups, plus
//! the routing report and state save/load (to a file, streamed, or as bytes).

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::Bytes;

use crate::error::{Error, Result};
use crate::param_groups::Route;

/// An initialised optimizer for one module: AdamW alone, or the Muon/Pion hybrid. Built by
/// [`OptimizerConfig::init`](crate::OptimizerConfig::init).
///
/// Per-parameter state is keyed by burn's `ParamId` (as in `ModuleOptimizer`): resume with a
/// module that carries the same parameter ids, e.g. one restored from a burn record.
#[derive(Clone)]
pub struct RlvrOptimizer {
    inner: ModuleOptimizer,
    routes: Vec<Route>,
}

impl RlvrOptimizer {
    pub(crate) fn new(inner: ModuleOptimizer, routes: Vec<Route>) -> Self {
        Self { inner, routes }
    }

    /// One optimizer step on every parameter that has a gradient in `grads`.
    ///
    /// `lr` is the base learning rate: AdamW uses it as is, Muon and Pion use `lr·lr_ratio`.
    pub fn step<M: Module>(&mut self, lr: f64, module: M, grads: GradientsParams) -> M {
        self.inner.step(lr, module, grads)
    }

    /// Where each parameter of the module went, in module order.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The wrapped burn optimizer (for burn APIs such as `save`/`load` to a file).
    pub fn module_optimizer(&self) -> &ModuleOptimizer {
        &self.inner
    }

    /// The optimizer state (momenta, moments, step counts) as burnpack bytes, in burn's buffer
    /// (it derefs to `[u8]`; not copied into a `Vec`: AdamW's state is twice the weights).
    ///
    /// # Errors
    /// [`Error::State`] when burn cannot serialise the record.
    pub fn to_bytes(&self) -> Result<Bytes> {
        self.inner.into_bytes().map_err(|e| Error::State {
            action: "save",
            reason: e.to_string(),
        })
    }

    /// Writes the optimizer state to `path` as a burnpack file (atomically: a scratch file
    /// renamed into place). The tensors are streamed to the file, so unlike
    /// [`to_bytes`](Self::to_bytes) no buffer of the whole container is built: the write holds
    /// one copy of the state (burn's record), not two.
    ///
    /// # Errors
    /// [`Error::State`] when burn cannot serialise the record or write the file.
    pub fn save(&self, path: &std::path::Path) -> Result<()> {
        self.inner.save(path).map_err(|e| Error::State {
            action: "save",
            reason: format!("{}: {e}", path.display()),
        })
    }

    /// Replaces the optimizer state with the one [`save`](Self::save) wrote to `path` (or
    /// [`to_bytes`](Self::to_bytes) returned, written to a file); see
    /// [`load_bytes`](Self::load_bytes).
    ///
    /// # Errors
    /// [`Error::State`] when the file cannot be read or is not a burnpack optimizer record.
    pub fn load(&mut self, path: &std::path::Path) -> Result<()> {
        self.inner = self.inner.clone().load(path).map_err(|e| Error::State {
            action: "load",
            reason: format!("{}: {e}", path.display()),
        })?;
        Ok(())
    }

    /// Replaces the optimizer state with one saved by [`to_bytes`](Self::to_bytes) of an
    /// optimizer built from the same config and module; the next step then equals the step the
    /// saved optimizer would have taken.
    ///
    /// # Errors
    /// [`Error::State`] when the bytes are not a burnpack optimizer record.
    pub fn load_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let bytes = Bytes::from_bytes_vec(bytes.to_vec());
        self.inner = self
            .inner
            .clone()
            .from_bytes(bytes)
            .map_err(|e| Error::State {
                action: "load",
                reason: e.to_string(),
            })?;
        Ok(())
    }
}
