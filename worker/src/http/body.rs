//! The guards every JSON body passes before it is parsed: a JSON content type, a length, a size
//! under the cap, and nesting no deeper than the limit.

use super::error::HttpError;
use crate::ops::{body_too_large, checked_body_size, checked_json_depth};
use axum::{
    body::{Body, Bytes},
    http::{
        HeaderMap,
        header::{CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING},
    },
};
use baton_core::{ApiError, ErrorCode};

/// A JSON route's body: refused (400 `validation_error`) unless its `Content-Type` is JSON, then
/// read under [`bounded_body`]'s guards. Every route that takes a JSON body reads it here, so
/// `/chat` and `/submit-tool-result` refuse `text/plain` as `/start` does.
pub(super) async fn json_body(
    headers: &HeaderMap,
    body: Body,
    cap: usize,
) -> Result<Bytes, HttpError> {
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json_media_type);
    if !json {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "expected a body with Content-Type: application/json",
        )
        .into());
    }
    bounded_body(headers, body, cap).await
}

/// Whether a `Content-Type` is JSON (`application/json`, any case, any parameters).
pub(super) fn is_json_media_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// Reads a request body under the guards every JSON route shares, before any parsing: a chunked
/// body without a length is refused ([`HttpError::LengthRequired`], 411), a declared or actual
/// length over `cap` is refused (413, `cause: request_body`) without reading it, and nesting
/// deeper than the limit is refused (400, `cause: json_depth`).
async fn bounded_body(headers: &HeaderMap, body: Body, cap: usize) -> Result<Bytes, HttpError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    match declared {
        None if headers.contains_key(TRANSFER_ENCODING) => return Err(HttpError::LengthRequired),
        Some(length) => checked_body_size(length, cap)?,
        None => {}
    }
    // A body longer than it declared, or of no declared length, is cut at the cap: one byte
    // over is all the refusal needs to say.
    let bytes = axum::body::to_bytes(body, cap)
        .await
        .map_err(|_| body_too_large(cap + 1, cap))?;
    checked_json_depth(&bytes)?;
    Ok(bytes)
}
