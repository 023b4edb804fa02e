//! HTTP errors in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered to a client.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// OpenAI `type`: `invalid_request_error`, `not_found_error`, `server_error`.
    pub kind: &'static str,
    /// Machine-readable `code` (`invalid_json`, `invalid_value`, `context_length_exceeded`, ...).
    pub code: &'static str,
    /// The offending request field, if any.
    pub param: Option<String>,
    /// What went wrong, for a person.
    pub message: String,
}

impl ApiError {
    /// 400 `invalid_request_error` about `param`.
    pub fn invalid(param: &str, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            code,
            param: Some(param.to_owned()),
            message: message.into(),
        }
    }

    /// A request-level error with a given status and no field.
    pub fn request(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind: if status == StatusCode::NOT_FOUND {
                "not_found_error"
            } else {
                "invalid_request_error"
            },
            code,
            param: None,
            message: message.into(),
        }
    }

    /// 5xx `server_error`.
    pub fn server(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind: "server_error",
            code,
            param: None,
            message: message.into(),
        }
    }

    /// 503: the engine thread is gone.
    pub fn engine_stopped() -> Self {
        Self::server(
            StatusCode::SERVICE_UNAVAILABLE,
            "engine_stopped",
            "the inference engine has stopped",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }});
        (self.status, Json(body)).into_response()
    }
}
