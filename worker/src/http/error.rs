//! The one error response of the HTTP API: an [`ApiError`] as its status and JSON body.

use axum::{
    Json,
    http::{
        HeaderValue, StatusCode,
        header::{RETRY_AFTER, WWW_AUTHENTICATE},
    },
    response::{IntoResponse, Response},
};
use baton_core::{ApiError, ErrorCode, Refusal, escape::bounded};

/// The challenge of every 401 (RFC 6750): the API takes bearer credentials.
const BEARER_CHALLENGE: &str = "Bearer realm=\"baton\"";

/// Why an HTTP request was refused. Every variant answers an [`ApiError`] body.
#[derive(Debug)]
pub enum HttpError {
    /// Answered with the status its code has in the one table (`ErrorCode::presentation`).
    Api(ApiError),
    /// A chunked body without a `Content-Length`: a `validation_error` (`cause:
    /// length_required`), the one with a status of its own, 411.
    LengthRequired,
}

impl From<ApiError> for HttpError {
    fn from(error: ApiError) -> Self {
        Self::Api(error)
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let (status, error) = match self {
            Self::Api(error) => (
                StatusCode::from_u16(error.code.presentation().http_status)
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                error,
            ),
            Self::LengthRequired => (
                StatusCode::LENGTH_REQUIRED,
                ApiError::new(
                    ErrorCode::ValidationError,
                    "the request needs a Content-Length header",
                )
                .with(Refusal::LengthRequired),
            ),
        };
        if status.is_server_error() {
            tracing::error!(code = %error.code, error = %bounded(&error.error), "request failed");
        } else {
            tracing::debug!(code = %error.code, error = %bounded(&error.error), "request refused");
        }
        let retry_after = match error.refusal() {
            Some(Refusal::RetryAfter { retry_after }) => Some(retry_after),
            _ => None,
        };
        let unauthorized = error.code == ErrorCode::Unauthorized;
        let mut response = (status, Json(error)).into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(RETRY_AFTER, seconds.into());
        }
        if unauthorized {
            response
                .headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static(BEARER_CHALLENGE));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_length_is_411_with_the_validation_body() {
        let response = HttpError::LengthRequired.into_response();
        assert_eq!(response.status(), StatusCode::LENGTH_REQUIRED);
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let body: ApiError = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body.code, ErrorCode::ValidationError);
        assert_eq!(body.details["cause"], "length_required");
        assert_eq!(body.error, "the request needs a Content-Length header");
    }

    #[tokio::test]
    async fn a_rate_limit_carries_retry_after() {
        let refused = ApiError::new(ErrorCode::RateLimited, "slow down")
            .with(Refusal::RetryAfter { retry_after: 7 });
        let response = HttpError::from(refused).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[RETRY_AFTER], "7");
    }
}
