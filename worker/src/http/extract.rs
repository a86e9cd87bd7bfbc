//! The extractors of the HTTP API: a JSON body and a query string whose rejections are typed
//! `validation_error` answers rather than axum's plain-text ones.

use super::{body::bounded_body, error::HttpError};
use crate::state::AppState;
use axum::{
    extract::{FromRequest, FromRequestParts, Query, Request},
    http::{header::CONTENT_TYPE, request::Parts},
};
use baton_core::{ApiError, ErrorCode};
use serde::{Deserialize, de::DeserializeOwned};

/// A JSON body whose rejection (bad JSON, wrong content type, unknown field) is a typed
/// `validation_error`.
pub(super) struct ApiJson<T>(pub(super) T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = HttpError;

    /// The body guards of [`bounded_body`] (the same cap as submits), then the JSON.
    async fn from_request(request: Request, state: &AppState) -> Result<Self, HttpError> {
        let (parts, body) = request.into_parts();
        let json = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if !json {
            return Err(ApiError::new(
                ErrorCode::ValidationError,
                "expected a body with Content-Type: application/json",
            )
            .into());
        }
        let cap = state.options.submit_limits.request_body_cap();
        let bytes = bounded_body(&parts.headers, body, cap).await?;
        let value = serde_json::from_slice(&bytes).map_err(|error| {
            ApiError::new(
                ErrorCode::ValidationError,
                format!("the body is not the expected JSON: {error}"),
            )
        })?;
        Ok(Self(value))
    }
}

/// A query string whose rejection is a typed `validation_error`.
pub(super) struct ApiQuery<T>(pub(super) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, HttpError> {
        let Query(value) =
            Query::<T>::from_request_parts(parts, state)
                .await
                .map_err(|rejection| {
                    ApiError::new(ErrorCode::ValidationError, rejection.body_text())
                })?;
        Ok(Self(value))
    }
}

/// The query of the routes that read one session (`/status`, `/sse`, `/snapshot`, `/usage`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionQuery {
    pub(super) session_id: String,
    /// Exclusive: the stream starts after this sequence (`/sse` only).
    #[serde(default)]
    pub(super) from_sequence: u64,
}
