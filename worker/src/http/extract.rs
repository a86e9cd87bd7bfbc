//! The extractors of the HTTP API: a JSON body and a query string whose rejections are typed
//! `validation_error` answers rather than axum's plain-text ones, with the parser's reason only
//! in verbose answers. The producer mount reads its bodies and queries with the same functions.

use super::{body, error::HttpError};
use crate::{ops::refused_with_reason, state::AppState};
use axum::{
    body::Body,
    extract::{FromRequest, FromRequestParts, Query, Request},
    http::{HeaderMap, request::Parts},
};
use baton_core::{ApiError, ErrorCode};
use serde::{Deserialize, de::DeserializeOwned};

/// A JSON body whose rejection (bad JSON, wrong content type, unknown field) is a typed
/// `validation_error`.
pub(super) struct ApiJson<T>(pub(super) T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = HttpError;

    /// The body guards of [`body::json_body`] (the same cap as submits), then the JSON.
    async fn from_request(request: Request, state: &AppState) -> Result<Self, HttpError> {
        let (parts, body) = request.into_parts();
        let cap = state.options.submit_limits.request_body_cap();
        Ok(Self(
            json_body(&parts.headers, body, cap, state.options.verbose_errors).await?,
        ))
    }
}

/// A JSON body (`Content-Type: application/json`) under the guards of [`body::json_body`],
/// decoded into `T`: every refusal a typed `validation_error` (or 411/413 from the guards), the
/// parser's reason only when `verbose`. The JSON routes and the producer mount read their
/// bodies with it.
pub(crate) async fn json_body<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
    cap: usize,
    verbose: bool,
) -> Result<T, HttpError> {
    let bytes = body::json_body(headers, body, cap).await?;
    serde_json::from_slice(&bytes).map_err(|error| {
        refused_with_reason(
            ErrorCode::ValidationError,
            "the body is not a valid request for this route",
            error,
            verbose,
        )
        .into()
    })
}

/// A query string whose rejection is a typed `validation_error`.
pub(super) struct ApiQuery<T>(pub(super) T);

impl<T: DeserializeOwned> FromRequestParts<AppState> for ApiQuery<T> {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, HttpError> {
        Ok(Self(query(parts, state.options.verbose_errors)?))
    }
}

/// The request's query string decoded into `T`, or a typed `validation_error` (the parser's
/// reason only when `verbose`): the JSON routes' and the producer mount's.
pub(crate) fn query<T: DeserializeOwned>(parts: &Parts, verbose: bool) -> Result<T, ApiError> {
    let Query(value) = Query::<T>::try_from_uri(&parts.uri).map_err(|rejection| {
        refused_with_reason(
            ErrorCode::ValidationError,
            "the query string is not valid for this route (it takes sessionId)",
            rejection.body_text(),
            verbose,
        )
    })?;
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
