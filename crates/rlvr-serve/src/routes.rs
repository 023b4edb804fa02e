//! The router: every endpoint, the body limit, JSON parsing with OpenAI-shaped errors, and the
//! `x-weights-version` header on every response.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use burn::module::Module;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::api_error::ApiError;
use crate::chat::chat_completions;
use crate::completions::completions;
use crate::openai_types::{ModelCard, ModelList, UpdateWeightsRequest, UpdateWeightsResponse};
use crate::state::AppState;

/// The response header naming the weights version that produced the response.
pub const WEIGHTS_VERSION_HEADER: &str = "x-weights-version";

/// All routes over `state`.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/health", get(health))
        .route("/update_weights_from_disk", post(update_weights))
        .fallback(not_found)
        .layer(axum::middleware::map_response_with_state(
            state.clone(),
            current_version_header,
        ))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// Parses a JSON body; a body over the limit is 413, anything malformed is 400 naming the
/// field path, line and column.
pub(crate) fn parse_json<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = body.map_err(|rejection| {
        let status = rejection.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "body_too_large"
        } else {
            "invalid_body"
        };
        ApiError::request(status, code, rejection.body_text())
    })?;
    let de = &mut serde_json::Deserializer::from_slice(&bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let code = if inner.is_data() {
            "invalid_value"
        } else {
            "invalid_json"
        };
        let message = if path == "." {
            format!("invalid request body: {inner}")
        } else {
            format!("invalid request body at `{path}`: {inner}")
        };
        let mut error = ApiError::request(StatusCode::BAD_REQUEST, code, message);
        error.param = (path != ".").then_some(path);
        error
    })
}

/// Sets `x-weights-version` on `response`.
pub(crate) fn with_version_header(mut response: Response, version: u64) -> Response {
    response
        .headers_mut()
        .insert(WEIGHTS_VERSION_HEADER, HeaderValue::from(version));
    response
}

/// Adds the version being served to responses that do not name theirs.
async fn current_version_header(
    State(state): State<Arc<AppState>>,
    response: Response,
) -> Response {
    if response.headers().contains_key(WEIGHTS_VERSION_HEADER) {
        return response;
    }
    let version = state.engine.stats().weights_version;
    with_version_header(response, version)
}

async fn models(State(state): State<Arc<AppState>>) -> Json<ModelList> {
    Json(ModelList {
        object: "list",
        data: vec![ModelCard {
            id: state.config.served_model_name.clone(),
            object: "model",
            created: state.created,
            owned_by: "rlvr-rs",
            max_model_len: state.max_model_len,
        }],
        weights_version: state.engine.stats().weights_version,
    })
}

async fn health(State(state): State<Arc<AppState>>) -> Json<serde_json::Value> {
    let stats = state.engine.stats();
    Json(json!({
        "status": "ok",
        "weights_version": stats.weights_version,
        "active_rows": stats.active_rows,
        "queued_requests": stats.queued_requests,
        "generated_tokens": stats.generated_tokens,
    }))
}

async fn not_found() -> ApiError {
    ApiError::request(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
}

/// `POST /update_weights_from_disk`: loads the directory on a blocking thread, then swaps it
/// in once the running batch has drained.
async fn update_weights(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match swap(&state, body).await {
        Ok(response) => response,
        Err(e) => {
            tracing::warn!(error = %e.message, "POST /update_weights_from_disk failed");
            let version = state.engine.stats().weights_version;
            let body = json!({
                "success": false,
                "message": e.message,
                "weights_version": version,
                "error": {"message": e.message, "type": e.kind, "param": e.param, "code": e.code},
            });
            with_version_header((e.status, Json(body)).into_response(), version)
        }
    }
}

async fn swap(
    state: &Arc<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: UpdateWeightsRequest = parse_json(body)?;
    let dir = PathBuf::from(&request.model_path);
    tracing::info!(model_path = %dir.display(), "POST /update_weights_from_disk");
    if !dir.is_dir() {
        return Err(ApiError::invalid(
            "model_path",
            "model_path_not_found",
            format!("`model_path` {} is not a directory", dir.display()),
        ));
    }
    let device = state.device.clone();
    let load_dir = dir.clone();
    let loaded = tokio::task::spawn_blocking(move || {
        rlvr_models::load_pretrained(&load_dir, &device).map(|(model, _)| model.valid())
    })
    .await
    .map_err(|e| {
        ApiError::server(
            StatusCode::INTERNAL_SERVER_ERROR,
            "model_load_failed",
            format!("loading {} panicked: {e}", dir.display()),
        )
    })?
    .map_err(|e| {
        ApiError::invalid(
            "model_path",
            "model_load_failed",
            format!("loading {}: {e}", dir.display()),
        )
    })?;
    if loaded.vocab_size() != state.vocab_size {
        return Err(ApiError::invalid(
            "model_path",
            "vocab_mismatch",
            format!(
                "{} has vocab_size {}, the served tokenizer needs {}",
                dir.display(),
                loaded.vocab_size(),
                state.vocab_size
            ),
        ));
    }
    let version = state
        .engine
        .swap_weights(loaded)
        .await
        .map_err(|_| ApiError::engine_stopped())?;
    let response = UpdateWeightsResponse {
        success: true,
        message: format!("loaded {}", dir.display()),
        weights_version: version,
    };
    Ok(with_version_header(Json(response).into_response(), version))
}
