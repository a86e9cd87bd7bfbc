//! Per-subject rate limits: every subject (`Principal::subject`: a user token's user, a session
//! token's tree, an operator key's name) spends a token of its start bucket for each start and
//! of its submit bucket for each answer, whatever the route (`docs/hardening.md`). Past either,
//! 429 `rate_limited` with `retryAfter`, and the operation writes nothing.

use crate::state::{AppState, BucketLimit};
use baton_core::{ApiError, ErrorCode, Refusal, store::SubjectBucket};

/// Spends one of `subject`'s start tokens, or refuses the start.
pub(crate) async fn spend_start(state: &AppState, subject: &str) -> Result<(), ApiError> {
    let limit = state.options.subject_limits.starts;
    spend(state, SubjectBucket::Starts, subject, limit, "starts").await
}

/// Spends one of `subject`'s submit tokens, or refuses the answer.
pub(crate) async fn spend_submit(state: &AppState, subject: &str) -> Result<(), ApiError> {
    let limit = state.options.subject_limits.submits;
    spend(state, SubjectBucket::Submits, subject, limit, "answers").await
}

async fn spend(
    state: &AppState,
    bucket: SubjectBucket,
    subject: &str,
    limit: BucketLimit,
    what: &str,
) -> Result<(), ApiError> {
    if limit.burst == 0 {
        return Ok(());
    }
    let taken = state
        .store
        .take_subject_token(bucket, subject, limit.burst, limit.per_minute)
        .await?;
    let Some(wait) = taken else {
        return Ok(());
    };
    let retry_after = wait.as_secs_f64().ceil().max(1.0) as u64;
    Err(ApiError::new(
        ErrorCode::RateLimited,
        format!(
            "more than {} {what} at once, or {} a minute, by this caller",
            limit.burst, limit.per_minute
        ),
    )
    .with(Refusal::RetryAfter { retry_after }))
}
