//! Deleting a session tree (`POST /delete`, gRPC `Delete`, a chat's `DELETE /chat/{id}`): the
//! whole tree from its root, once no run works on it. A tree waiting on a person is interrupted
//! first (so its remote children are told and its deadline workflow is cancelled), its session
//! tokens are revoked (an id taken again later does not let them back in), then one script
//! deletes every key of its sessions and the search index forgets them.

use super::{no_session, reads::existing_session, stop::stop_session};
use crate::{audit, auth::Principal, state::AppState};
use baton_core::{
    ApiError, ErrorCode,
    api::DeleteResponse,
    store::{Deleted, Status, StopKind},
};

/// The principal may act on the session, then [`delete_tree`]; audited as `delete`.
pub async fn delete(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
) -> Result<DeleteResponse, ApiError> {
    let deleted = async {
        principal.may_act_on(&state.store, session_id).await?;
        delete_tree(state, session_id).await
    }
    .await;
    audit::action(principal, "delete", session_id, &deleted);
    deleted
}

/// Deletes the tree whose root is `session_id`: refused `state_already_running` while a run
/// works on a session of it, a validation error for a session below a root (a tree goes as a
/// whole). No policy: its callers authorize.
async fn delete_tree(state: &AppState, session_id: &str) -> Result<DeleteResponse, ApiError> {
    let session = existing_session(state, session_id).await?;
    if session.session_id != session.root_session_id {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!(
                "session {} is a sub-agent's; delete its root session {}",
                session.session_id, session.root_session_id
            ),
        ));
    }
    match session.status {
        Status::Active => return Err(running(session_id)),
        Status::SuspendedClientTool => {
            match stop_session(state, session_id, StopKind::Interrupt).await {
                // A stop that found no run lost a race with another end: the delete decides below.
                Ok(_) => {}
                Err(error) if error.code == ErrorCode::RunNotActive => {}
                Err(error) => return Err(error),
            }
        }
        _ => {}
    }
    crate::auth::revoke_session_tokens(&state.options.auth, &state.store, session_id).await?;
    match state.store.delete_tree(session_id).await? {
        Deleted::Deleted { sessions, keys } => {
            tracing::info!(%session_id, sessions = sessions.len(), keys, "session tree deleted");
            Ok(DeleteResponse {
                session_id: session_id.to_owned(),
                deleted_sessions: u32::try_from(sessions.len()).unwrap_or(u32::MAX),
            })
        }
        Deleted::SessionNotFound => Err(no_session(session_id)),
        Deleted::Running { session_id: busy } if busy == session_id => Err(running(session_id)),
        Deleted::Running { session_id: busy } => Err(ApiError::new(
            ErrorCode::StateAlreadyRunning,
            format!("session {busy} of the tree is running; interrupt the tree first"),
        )),
    }
}

/// The refusal of a running root's delete.
fn running(session_id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::StateAlreadyRunning,
        format!("session {session_id} is running; interrupt it first, then delete it"),
    )
}
