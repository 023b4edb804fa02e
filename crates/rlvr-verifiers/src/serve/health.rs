//! `GET /health`: the server is up; which kinds it verifies and how `/run_code` is contained.

use serde_json::json;

use super::{Reply, State};

/// `{"status": "ok", "kinds": [...], "python", "isolation", "max_run_timeout_s",
/// "max_body_bytes"}`.
pub(crate) fn handle(state: &State) -> Reply {
    (
        200,
        json!({
            "status": "ok",
            "kinds": state.kinds.keys().collect::<Vec<_>>(),
            "python": state.sandbox.python().display().to_string(),
            "isolation": state.sandbox.isolation().describe(),
            "max_run_timeout_s": state.max_run.as_secs_f64(),
            "max_body_bytes": state.max_body,
        }),
    )
}
