//! Server settings.

use crate::error::{Error, Result};

/// Settings of a [`Server`](crate::Server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The name clients pass as `model` and `GET /v1/models` lists.
    pub served_model_name: String,
    /// Most rows (choices) decoded together; also the largest `n`.
    pub max_batch: usize,
    /// Largest `max_tokens` a request may ask for.
    pub max_tokens_limit: usize,
    /// Largest request body in bytes (larger: 413).
    pub max_body_bytes: usize,
}

impl ServerConfig {
    /// Defaults: batch 32, `max_tokens` ≤ 4096, bodies ≤ 8 MiB.
    pub fn new(served_model_name: impl Into<String>) -> Self {
        Self {
            served_model_name: served_model_name.into(),
            max_batch: 32,
            max_tokens_limit: 4096,
            max_body_bytes: 8 << 20,
        }
    }

    /// Refuses zero limits and an empty model name.
    ///
    /// # Errors
    /// [`Error::Config`] naming the setting.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("max_batch", self.max_batch),
            ("max_tokens_limit", self.max_tokens_limit),
            ("max_body_bytes", self.max_body_bytes),
        ];
        for (field, value) in positive {
            if value == 0 {
                return Err(Error::Config {
                    field,
                    message: "must be at least 1".into(),
                });
            }
        }
        if self.served_model_name.trim().is_empty() {
            return Err(Error::Config {
                field: "served_model_name",
                message: "must not be empty".into(),
            });
        }
        Ok(())
    }
}
