//! The submit rate limit: a token bucket per session in Redis, shared by every server.

use super::store_error;
use crate::state::AppState;
use baton_core::{ApiError, ErrorCode, store::SessionAddress};

/// Takes one submit from the session's rate limit, or refuses (429 `rate_limited` with
/// `retryAfter`, in whole seconds, at least one).
pub(super) async fn take_submit_token(state: &AppState, session_id: &str) -> Result<(), ApiError> {
    let Some(per_minute) = state.options.submits_per_minute else {
        return Ok(());
    };
    let address = SessionAddress::root(session_id);
    let wait = state
        .store
        .take_submit_token(&address, per_minute)
        .await
        .map_err(store_error)?;
    match wait {
        None => Ok(()),
        Some(wait) => {
            let retry_after = wait.as_secs_f64().ceil().max(1.0) as u64;
            Err(ApiError::new(
                ErrorCode::RateLimited,
                format!("more than {per_minute} submits a minute on this session"),
            )
            .with("retryAfter", retry_after))
        }
    }
}
