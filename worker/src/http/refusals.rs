//! The one error body everywhere, made structural: the router's outermost layer turns every
//! refusal that is not already a JSON body (axum's empty 404 for an unknown path and 405 for a
//! wrong method, an extractor's plain-text rejection in any route, merged or added later) into
//! the [`ApiError`] body its status stands for. What axum said goes in `details` only with
//! `--verbose-errors`.

use super::{body::is_json_media_type, error::HttpError};
use crate::state::AppState;
use axum::{
    extract::{Request, State},
    http::{
        StatusCode,
        header::{ALLOW, CONTENT_TYPE},
    },
    middleware::Next,
    response::{IntoResponse, Response},
};
use baton_core::{ApiError, ErrorCode, Refusal, escape::bounded};

/// How much of a plain-text refusal is read for its verbose `details`.
const MAX_PLAIN_REFUSAL_BYTES: usize = 4096;

/// The layer's function: a refusal with a JSON body (every [`HttpError`], and a route's own
/// envelope) passes as it is; any other is answered as the typed error of its status.
pub(super) async fn typed_refusals(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&response) {
        return response;
    }
    let allow = response.headers().get(ALLOW).cloned();
    let said = axum::body::to_bytes(response.into_body(), MAX_PLAIN_REFUSAL_BYTES)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .unwrap_or_default();
    let mut error = refusal_of(status);
    if state.options.verbose_errors && !said.is_empty() {
        error = error.with(Refusal::Detail {
            details: bounded(&said).to_string(),
        });
    }
    let mut typed = HttpError::from(error).into_response();
    if let Some(allow) = allow {
        typed.headers_mut().insert(ALLOW, allow);
    }
    typed
}

/// The typed error a bare status stands for.
fn refusal_of(status: StatusCode) -> ApiError {
    let (code, message) = match status {
        StatusCode::NOT_FOUND => (ErrorCode::RouteNotFound, "no such route"),
        StatusCode::METHOD_NOT_ALLOWED => (
            ErrorCode::MethodNotAllowed,
            "this route does not take that method",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (
            ErrorCode::ValidationPayloadTooLarge,
            "the request body is too large",
        ),
        StatusCode::UNAUTHORIZED => (ErrorCode::Unauthorized, "missing bearer credentials"),
        StatusCode::FORBIDDEN => (ErrorCode::Forbidden, "not allowed"),
        StatusCode::TOO_MANY_REQUESTS => (ErrorCode::RateLimited, "too many requests"),
        status if status.is_server_error() => (ErrorCode::Internal, "internal error"),
        _ => (ErrorCode::ValidationError, "the request is malformed"),
    };
    ApiError::new(code, message)
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(is_json_media_type)
}
