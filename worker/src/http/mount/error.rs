//! The mount's one error response: the protocol's envelope `{code, error}` (with the code's own
//! fields), made from an [`ApiError`] by [`ErrorBody::from`], the one place Baton's not-found
//! family becomes `NOT_FOUND`. Its status is the code's row in the one table.

use crate::http::HttpError;
use axum::{
    Json,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use baton_core::{ApiError, ErrorCode, remote::ErrorBody};

/// A refused mount request.
#[derive(Debug)]
pub(crate) struct MountError {
    status: StatusCode,
    body: ErrorBody,
}

impl From<ApiError> for MountError {
    fn from(error: ApiError) -> Self {
        let body = ErrorBody::from(error);
        let status = StatusCode::from_u16(body.code.presentation().http_status)
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Self { status, body }
    }
}

impl From<HttpError> for MountError {
    fn from(error: HttpError) -> Self {
        match error {
            HttpError::Api(error) => error.into(),
            HttpError::LengthRequired => Self {
                status: StatusCode::LENGTH_REQUIRED,
                ..ApiError::new(
                    ErrorCode::ValidationError,
                    "the request needs a Content-Length header",
                )
                .into()
            },
        }
    }
}

impl MountError {
    /// The envelope, as an SSE `error` event carries it.
    pub(super) fn body(&self) -> &ErrorBody {
        &self.body
    }
}

impl IntoResponse for MountError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = %self.body.code, error = %self.body.error, "mount request failed");
        } else {
            tracing::debug!(code = %self.body.code, error = %self.body.error, "mount request refused");
        }
        (self.status, Json(self.body)).into_response()
    }
}

/// `NOT_FOUND` naming what the mount does not have.
pub(super) fn not_found(what: String) -> MountError {
    ApiError::new(ErrorCode::NotFound, what).into()
}
