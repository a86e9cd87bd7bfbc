//! Why a store operation failed, and the one conversion of that failure into the error a client
//! sees: internals (Redis's message, the corrupt key) are logged here and never shown.

use crate::{ApiError, ErrorCode};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("redis: {0}")]
    Redis(redis::RedisError),
    #[error("session {0} already exists")]
    SessionExists(String),
    #[error("session {0} not found")]
    SessionNotFound(String),
    /// The run is not the session's current run, or it has ended.
    #[error("run {run_id} may not write: {reason}")]
    RunRefused { run_id: String, reason: String },
    /// Stored data does not have the shape Baton writes; a bug or a foreign writer.
    #[error("corrupt data at {key}: {reason}")]
    Corrupt { key: String, reason: String },
}

/// Redis trouble, unless one of Baton's scripts failed in its own code (an `ERR` whose detail
/// starts `user_script:<line>:`): a script only fails so on a row it cannot read (`cjson.decode`
/// of a row Baton did not write), which a repeat reads again, so that is corrupt data, not worth
/// retrying. An error of a command the script called (`OOM`, `BUSY`, …) keeps its own code and
/// stays Redis trouble.
impl From<redis::RedisError> for Error {
    fn from(error: redis::RedisError) -> Self {
        let in_script = error.kind() == redis::ErrorKind::ResponseError
            && error
                .detail()
                .is_some_and(|detail| detail.starts_with("user_script:"));
        if in_script {
            return Error::Corrupt {
                key: "a script's row".to_owned(),
                reason: error.to_string(),
            };
        }
        Error::Redis(error)
    }
}

/// A store failure as the client sees it: Redis down is `store_unavailable` (retryable), a row
/// Baton cannot read is `framework_internal_error` (not retryable: a repeat reads the same row).
impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        match error {
            Error::Redis(ref e) => {
                tracing::error!(%e, "redis failed");
                ApiError::new(ErrorCode::StoreUnavailable, "the store is unavailable")
            }
            Error::SessionExists(id) => ApiError::new(
                ErrorCode::SessionAlreadyExists,
                format!("session {id} already exists"),
            ),
            Error::SessionNotFound(id) => {
                ApiError::new(ErrorCode::SessionNotFound, format!("no session {id}"))
            }
            Error::RunRefused { reason, .. } => ApiError::new(ErrorCode::RunNotActive, reason),
            Error::Corrupt { .. } => {
                tracing::error!(%error, "corrupt store data");
                ApiError::new(
                    ErrorCode::FrameworkInternalError,
                    "a stored row could not be read",
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_that_failed_on_a_row_is_corrupt_data_and_redis_trouble_is_not() {
        let script = redis::RedisError::from((
            redis::ErrorKind::ResponseError,
            "An error was signalled by the server",
            "user_script:102: Expected value but found invalid token at character 1".to_owned(),
        ));
        assert!(matches!(Error::from(script), Error::Corrupt { .. }));
        let down = redis::RedisError::from((redis::ErrorKind::IoError, "connection reset"));
        assert!(matches!(Error::from(down), Error::Redis(_)));
        let full = redis::RedisError::from((
            redis::ErrorKind::ExtensionError,
            "OOM",
            "command not allowed when used memory > 'maxmemory'. script: f0, on @user_script:12."
                .to_owned(),
        ));
        assert!(matches!(Error::from(full), Error::Redis(_)));
    }

    #[test]
    fn each_store_error_is_its_code_and_shows_no_internals() {
        let redis = redis::RedisError::from((redis::ErrorKind::IoError, "secret host down"));
        let cases = [
            (
                Error::Redis(redis),
                ErrorCode::StoreUnavailable,
                "the store is unavailable",
            ),
            (
                Error::SessionExists("s1".into()),
                ErrorCode::SessionAlreadyExists,
                "session s1 already exists",
            ),
            (
                Error::SessionNotFound("s1".into()),
                ErrorCode::SessionNotFound,
                "no session s1",
            ),
            (
                Error::RunRefused {
                    run_id: "r1".into(),
                    reason: "run_superseded".into(),
                },
                ErrorCode::RunNotActive,
                "run_superseded",
            ),
            (
                Error::Corrupt {
                    key: "baton:{s1}:s1:pending".into(),
                    reason: "not json".into(),
                },
                ErrorCode::FrameworkInternalError,
                "a stored row could not be read",
            ),
        ];
        for (error, code, message) in cases {
            let api = ApiError::from(error);
            assert_eq!((api.code, api.error.as_str()), (code, message));
            assert_eq!(api.retryable, code.presentation().retryable, "{code}");
            assert!(api.details.is_empty(), "{code}");
        }
        assert!(ErrorCode::StoreUnavailable.presentation().retryable);
        assert!(!ErrorCode::FrameworkInternalError.presentation().retryable);
    }
}
