//! The reads: a session's state (with `isExecuting` from Temporal), its snapshot and its usage.

use super::{checked_address, no_session, temporal::is_executing};
use crate::{auth::Principal, state::AppState};
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

/// The session `session_id` names, once `principal` may act on it for `action` (checked, and a
/// refusal audited, before anything tells whether it exists); `session_not_found` after that.
pub async fn authorized_session(
    state: &AppState,
    principal: &Principal,
    action: &'static str,
    session_id: &str,
) -> Result<SessionState, ApiError> {
    authorize(state, principal, action, session_id).await?;
    existing_session(state, session_id).await
}

/// `/status`: the session's state, with `isExecuting` from Temporal's view of its run and the
/// calls waiting on a person, once the principal may act on it.
pub async fn session_status(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
) -> Result<SessionState, ApiError> {
    let mut session = authorized_session(state, principal, "status", session_id).await?;
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

/// `/snapshot`: the session's log pinned to a stream position (see [`SnapshotResponse`]), once
/// the principal may act on it.
pub async fn session_snapshot(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
) -> Result<SnapshotResponse, ApiError> {
    authorize(state, principal, "snapshot", session_id).await?;
    let address = checked_address(session_id)?;
    let snapshot = state.store.snapshot(&address).await?;
    snapshot.ok_or_else(|| no_session(session_id))
}

/// `/usage`: what the session has spent so far, once the principal may act on it.
pub async fn session_usage(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
) -> Result<UsageResponse, ApiError> {
    authorize(state, principal, "usage", session_id).await?;
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

/// The authorization of a read, or of what acts on a session through more than one operation (a
/// stream's follow: `/sse`, gRPC `Subscribe`, the mount's `sse`; the chat route): the principal
/// may act on the session it names. Reads are not audited; their refusals are, as `action`,
/// with the rule that refused. The follow itself is `crate::stream`'s.
pub async fn authorize(
    state: &AppState,
    principal: &Principal,
    action: &'static str,
    session_id: &str,
) -> Result<(), ApiError> {
    let allowed = principal.may_act_on(&state.store, session_id).await;
    if allowed.is_err() {
        crate::audit::action(principal, action, session_id, &allowed);
    }
    allowed
}
