//! What an activity fails with, and the one conversion of it into the Temporal failure the
//! workflow sees: Redis trouble is retried, a model error is typed by its kind (and retried when
//! the kind says so), everything else is final and typed with its error code.
//!
//! The workflow reads the failure's type as the run's error code (`activity_failure` in
//! `baton-workflows`), so the types and retryability here are part of the run's contract.

use baton_core::{ErrorCode, model, store};
use temporalio_common::ActivityError;
use temporalio_sdk::ApplicationFailure;

/// Why an activity stopped short. Every helper of the activities returns it, so `?` works on
/// store and model calls alike, and [`From<Error> for ActivityError`](ActivityError) decides
/// once what Temporal does with it.
///
/// It deliberately does not implement `std::error::Error`: the SDK turns any such error into an
/// untyped, retryable failure, and that conversion must never be picked by accident.
#[derive(Debug)]
pub(crate) enum Error {
    /// A store call failed.
    Store(store::Error),
    /// The model call failed.
    Model(model::Error),
    /// A final failure typed with its error code.
    Typed { code: ErrorCode, message: String },
    /// The workflow cancelled the activity (an interrupt or an abort).
    Cancelled,
    /// Temporal did not answer a request an activity makes (a deadline workflow's start):
    /// retried like Redis trouble.
    Temporal(String),
}

impl Error {
    /// A final failure whose Temporal type is `code`.
    pub(crate) fn typed(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Typed {
            code,
            message: message.into(),
        }
    }
}

impl From<store::Error> for Error {
    fn from(error: store::Error) -> Self {
        Self::Store(error)
    }
}

impl From<model::Error> for Error {
    fn from(error: model::Error) -> Self {
        Self::Model(error)
    }
}

impl From<Error> for ActivityError {
    fn from(error: Error) -> Self {
        match error {
            Error::Store(error) => store_failure(error),
            Error::Model(error) => model_failure(error),
            Error::Typed { code, message } => typed_failure(code, message),
            Error::Cancelled => ActivityError::cancelled(),
            Error::Temporal(message) => ActivityError::from(Transient(message)),
        }
    }
}

/// A non-retryable failure whose Temporal type is the error code.
fn typed_failure(code: ErrorCode, message: String) -> ActivityError {
    ActivityError::application(
        ApplicationFailure::builder(message)
            .type_name(code.as_str().to_owned())
            .non_retryable(true)
            .build(),
    )
}

/// A failure worth retrying (Redis trouble). It carries no type: once the retries are spent, the
/// workflow falls back to the code of the activity that failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Transient(String);

/// Redis trouble is retried; a refused or corrupt write is not.
fn store_failure(error: store::Error) -> ActivityError {
    match error {
        store::Error::Redis(_) => ActivityError::from(Transient(error.to_string())),
        store::Error::RunRefused { .. } => {
            typed_failure(ErrorCode::RunNotActive, error.to_string())
        }
        store::Error::SessionNotFound(_) => {
            typed_failure(ErrorCode::SessionNotFound, error.to_string())
        }
        store::Error::SessionExists(_) | store::Error::Corrupt { .. } => {
            typed_failure(ErrorCode::Internal, error.to_string())
        }
    }
}

/// A failed model call typed with its error code: retried (after the provider's `retry-after`,
/// when it gave one) if the kind says so, final otherwise.
fn model_failure(error: model::Error) -> ActivityError {
    let retryable = error.retryable();
    ActivityError::application(
        ApplicationFailure::builder(error.to_string())
            .type_name(error.kind.code().as_str().to_owned())
            .non_retryable(!retryable)
            // Temporal does not retry at all after a zero delay; then the policy's backoff
            // decides.
            .maybe_next_retry_delay(error.retry_after.filter(|d| retryable && !d.is_zero()))
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::ErrorKind;
    use std::time::Duration;

    fn application(error: impl Into<Error>) -> ApplicationFailure {
        match ActivityError::from(error.into()) {
            ActivityError::Application(failure) => *failure,
            other => panic!("not an application failure: {other:?}"),
        }
    }

    #[test]
    fn model_errors_become_typed_failures_with_the_providers_delay() {
        let throttled = application(
            model::Error::new(ErrorKind::RateLimited, "slow down")
                .with_retry_after(Some(Duration::from_millis(343))),
        );
        assert_eq!(throttled.type_name(), Some("model_rate_limited"));
        assert!(!throttled.is_non_retryable());
        assert_eq!(
            throttled.next_retry_delay(),
            Some(Duration::from_millis(343))
        );

        let now = application(
            model::Error::new(ErrorKind::Unavailable, "overloaded")
                .with_retry_after(Some(Duration::ZERO)),
        );
        assert_eq!(now.type_name(), Some("model_unavailable"));
        assert_eq!(now.next_retry_delay(), None);

        let refused = application(
            model::Error::new(ErrorKind::Authentication, "bad key")
                .with_retry_after(Some(Duration::from_secs(5))),
        );
        assert_eq!(refused.type_name(), Some("model_auth_failed"));
        assert!(refused.is_non_retryable());
        assert_eq!(refused.next_retry_delay(), None);
        assert_eq!(refused.to_string(), "authentication failed: bad key");
    }

    #[test]
    fn store_errors_are_retried_only_when_redis_failed() {
        // (error, Temporal type, retried, message)
        let cases = [
            (
                store::Error::Redis(std::io::Error::other("connection reset").into()),
                None,
                true,
                "redis: connection reset",
            ),
            (
                store::Error::RunRefused {
                    run_id: "r1".into(),
                    reason: "superseded".into(),
                },
                Some("run_not_active"),
                false,
                "run r1 may not write: superseded",
            ),
            (
                store::Error::SessionNotFound("s1".into()),
                Some("session_not_found"),
                false,
                "session s1 not found",
            ),
            (
                store::Error::SessionExists("s1".into()),
                Some("internal"),
                false,
                "session s1 already exists",
            ),
            (
                store::Error::Corrupt {
                    key: "k".into(),
                    reason: "not JSON".into(),
                },
                Some("internal"),
                false,
                "corrupt data at k: not JSON",
            ),
        ];
        for (error, type_name, retried, message) in cases {
            let failure = application(error);
            assert_eq!(failure.type_name(), type_name, "{message}");
            assert_eq!(failure.is_non_retryable(), !retried, "{message}");
            assert!(failure.to_string().contains(message), "{failure}");
            assert_eq!(failure.next_retry_delay(), None, "{message}");
        }
    }

    #[test]
    fn typed_errors_are_final_and_cancellation_stays_a_cancellation() {
        let failure = application(Error::typed(ErrorCode::UnknownAgentType, "no agent"));
        assert_eq!(failure.type_name(), Some("unknown_agent_type"));
        assert!(failure.is_non_retryable());
        assert_eq!(failure.to_string(), "no agent");
        assert!(matches!(
            ActivityError::from(Error::Cancelled),
            ActivityError::Cancelled { details: None }
        ));
    }
}
