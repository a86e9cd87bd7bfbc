//! The extractors of the HTTP API: a JSON body and a query string whose rejections are typed
//! `validation_error` answers rather than axum's plain-text ones.

use super::{body::bounded_body, error::HttpError};
use crate::state::AppState;
use axum::{
    body::Body,
    extract::{FromRequest, FromRequestParts, Query, Request},
    http::{HeaderMap, header::CONTENT_TYPE, request::Parts},
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
        let cap = state.options.submit_limits.request_body_cap();
        Ok(Self(json_body(&parts.headers, body, cap).await?))
    }
}

/// A JSON body (`Content-Type: application/json`) under the guards of [`bounded_body`], decoded
/// into `T`: every refusal a typed `validation_error` (or 411/413 from the guards). The JSON
/// routes and the producer mount read their bodies with it.
pub(crate) async fn json_body<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
    cap: usize,
) -> Result<T, HttpError> {
    let json = headers
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
    let bytes = bounded_body(headers, body, cap).await?;
    serde_json::from_slice(&bytes).map_err(|error| {
        ApiError::new(
            ErrorCode::ValidationError,
            format!("the body is not the expected JSON: {error}"),
        )
        .into()
    })
}

/// A query string whose rejection is a typed `validation_error`.
pub(super) struct ApiQuery<T>(pub(super) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, HttpError> {
        Ok(Self(query(parts)?))
    }
}

/// The request's query string decoded into `T`, or a typed `validation_error`: the JSON
/// routes' and the producer mount's.
pub(crate) fn query<T: DeserializeOwned>(parts: &Parts) -> Result<T, ApiError> {
    let Query(value) = Query::<T>::try_from_uri(&parts.uri)
        .map_err(|rejection| ApiError::new(ErrorCode::ValidationError, rejection.body_text()))?;
    Ok(value)
}

/// The query of the routes that read one session (`/status`, `/sse`, `/snapshot`, `/usage`,
/// and the mount's).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionQuery {
    pub(crate) session_id: String,
    /// Exclusive: the stream starts after this sequence (`/sse` only).
    #[serde(default)]
    pub(crate) from_sequence: u64,
}
