//! The extractors of the HTTP API: a JSON body and a query string whose rejections are typed
//! `validation_error` answers rather than axum's plain-text ones, with the parser's reason only
//! in verbose answers.

use super::{body::json_body, error::HttpError};
use crate::{ops::refused_with_reason, state::AppState};
use axum::{
    extract::{FromRequest, FromRequestParts, Query, Request},
    http::request::Parts,
};
use baton_core::ErrorCode;
use serde::{Deserialize, de::DeserializeOwned};

/// A JSON body whose rejection (bad JSON, wrong content type, unknown field) is a typed
/// `validation_error`.
pub(super) struct ApiJson<T>(pub(super) T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = HttpError;

    /// The body guards of [`json_body`] (the same cap as submits), then the JSON.
    async fn from_request(request: Request, state: &AppState) -> Result<Self, HttpError> {
        let (parts, body) = request.into_parts();
        let cap = state.options.submit_limits.request_body_cap();
        let bytes = json_body(&parts.headers, body, cap).await?;
        let value = serde_json::from_slice(&bytes).map_err(|error| {
            refused_with_reason(
                ErrorCode::ValidationError,
                "the body is not a valid request for this route",
                error,
                state.options.verbose_errors,
            )
        })?;
        Ok(Self(value))
    }
}

/// A query string whose rejection is a typed `validation_error`.
pub(super) struct ApiQuery<T>(pub(super) T);

impl<T: DeserializeOwned> FromRequestParts<AppState> for ApiQuery<T> {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, HttpError> {
        let Query(value) =
            Query::<T>::from_request_parts(parts, state)
                .await
                .map_err(|rejection| {
                    refused_with_reason(
                        ErrorCode::ValidationError,
                        "the query string is not valid for this route (it takes sessionId)",
                        rejection.body_text(),
                        state.options.verbose_errors,
                    )
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
