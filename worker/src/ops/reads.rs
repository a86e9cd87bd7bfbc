//! The reads: a session's state (with `isExecuting` from Temporal), its snapshot and its usage.

use super::{checked_address, no_session, temporal::is_executing};
use crate::state::AppState;
use baton_core::{
    ApiError,
    api::{SnapshotResponse, UsageResponse},
    store::SessionState,
};

/// The state of a session the request names: `validation_error` for a malformed id,
/// `session_not_found` for an unknown one.
pub async fn existing_session(
    state: &AppState,
    session_id: &str,
) -> Result<SessionState, ApiError> {
    state
        .store
        .session(&checked_address(session_id)?)
        .await?
        .ok_or_else(|| no_session(session_id))
}

/// The session's state, with `isExecuting` from Temporal's view of its run.
pub async fn session_status(state: &AppState, session_id: &str) -> Result<SessionState, ApiError> {
    let mut session = existing_session(state, session_id).await?;
    session.is_executing = Some(is_executing(state, &session).await?);
    let address = checked_address(session_id)?;
    session.pending = state
        .store
        .person_calls(&address, address.is_root())
        .await?
        .into_iter()
        .map(|call| {
            super::search::pending_detail(&state.registry, &address.root_session_id, call, None)
        })
        .collect::<Result<_, _>>()?;
    Ok(session)
}

/// The session's log pinned to a stream position (see [`SnapshotResponse`]).
pub async fn session_snapshot(
    state: &AppState,
    session_id: &str,
) -> Result<SnapshotResponse, ApiError> {
    let address = checked_address(session_id)?;
    let snapshot = state.store.snapshot(&address).await?;
    snapshot.ok_or_else(|| no_session(session_id))
}

/// What the session has spent so far.
pub async fn session_usage(state: &AppState, session_id: &str) -> Result<UsageResponse, ApiError> {
    let address = checked_address(session_id)?;
    let rollup = state
        .store
        .usage_rollup(&address)
        .await?
        .ok_or_else(|| no_session(session_id))?;
    Ok(UsageResponse {
        session_id: session_id.to_owned(),
        rollup,
    })
}
