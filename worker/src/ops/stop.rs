//! Stopping a session's current run, by interrupt or abort (one operation, the [`StopKind`]
//! says which).

use super::{
    no_session,
    reads::existing_session,
    temporal::{cancel_run_workflow, resume_parent_of_ended_children},
    tree::stop_descendants,
};
use crate::{audit, auth::Principal, state::AppState};
use baton_core::{
    ApiError, ErrorCode,
    api::StopResponse,
    observe::{self, CallIds, ClientCallEvent},
    store::{SessionAddress, Status, StopKind, Stopped},
};

/// Reports a stopped child's end to its parent when the parent is suspended on it, resuming the
/// parent when that completes its batch (see `start_parent_of_ended_children`).
async fn answer_parent(state: &AppState, child: &SessionAddress) -> Result<(), ApiError> {
    let Some((parent, _call)) = state.store.parent_of(child).await? else {
        return Ok(());
    };
    let resumed = resume_parent_of_ended_children(state, &parent).await?;
    if let Some((run_id, workflow_id)) = resumed {
        tracing::info!(session_id = %parent.session_id, %run_id, %workflow_id,
            "the stopped child's end resumes its parent");
    }
    Ok(())
}

/// `/interrupt`, `/abort` (both transports, the mount, the chat's stop): the principal may act
/// on the session; an operator's stop of a root revokes its tree's session tokens first; then
/// the stop of [`stop_session`]; audited.
pub async fn stop(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
    kind: StopKind,
) -> Result<StopResponse, ApiError> {
    let stopped = async {
        principal.may_act_on(&state.store, session_id).await?;
        if matches!(principal, Principal::Operator { .. }) {
            super::tokens::revoke_tokens_of_stopped(state, principal, session_id).await?;
        }
        stop_session(state, session_id, kind).await
    }
    .await;
    audit::action(principal, kind.as_str(), session_id, &stopped);
    stopped
}

/// A chat's `stop()` (the chat route): the principal may act on the chat, then its interrupt,
/// audited; a token holder's own stop revokes nothing.
pub async fn chat_stop(
    state: &AppState,
    principal: &Principal,
    chat_id: &str,
) -> Result<StopResponse, ApiError> {
    let stopped = async {
        principal.may_act_on(&state.store, chat_id).await?;
        stop_session(state, chat_id, StopKind::Interrupt).await
    }
    .await;
    audit::action(principal, StopKind::Interrupt.as_str(), chat_id, &stopped);
    stopped
}

/// Stops the session's current run: a durable stop record first (one script, which also ends the
/// run in Redis), then Temporal cancellation of its workflow if one is still running. No policy:
/// its callers authorize.
pub(crate) async fn stop_session(
    state: &AppState,
    session_id: &str,
    kind: StopKind,
) -> Result<StopResponse, ApiError> {
    let session = existing_session(state, session_id).await?;
    let address = SessionAddress {
        root_session_id: session.root_session_id.clone(),
        session_id: session.session_id.clone(),
    };
    let (run_id, workflow_id, closed_calls) = match state.store.stop_run(&address, kind).await? {
        Stopped::Stopped {
            run_id,
            workflow_id,
            closed_calls,
        } => (run_id, workflow_id, closed_calls),
        Stopped::SessionNotFound => return Err(no_session(session_id)),
        Stopped::NotRunning { status } => {
            // A root stopped already: its tree's stop is made again (nothing to do once every
            // session below it has ended), so a stop cut short completes on a repeat.
            if session.session_id == session.root_session_id && session.stop.is_some() {
                stop_descendants(state, &session, &session.session_id, kind).await?;
            }
            return Err(ApiError::new(
                ErrorCode::RunNotActive,
                format!("the session is {status}; no run to stop"),
            ));
        }
    };
    // The workflow of the run the stop was made for: another run may have taken the session
    // between this operation's read and the stop.
    if let Some(workflow_id) = &workflow_id {
        cancel_run_workflow(state, workflow_id).await;
    }
    // A stop stops the session's subtree: on the root, the whole tree.
    let root = if session.session_id == session.root_session_id {
        session.clone()
    } else {
        existing_session(state, &session.root_session_id).await?
    };
    stop_descendants(state, &root, &session.session_id, kind).await?;
    // A child's stop is its end for its parent: the sub-agent call is answered
    // `sub_agent_interrupted` (a parent running awaits the child's workflow, whose cancellation
    // gives it the same), and a parent suspended on it goes on when that completes its batch.
    if session.session_id != session.root_session_id {
        answer_parent(state, &address).await?;
    }
    crate::remote::after_stop(state, &address, &session.agent_type, &closed_calls, kind).await;
    tracing::info!(%session_id, %run_id, ?kind, "run stopped");
    for (tool_call_id, tool) in &closed_calls {
        let ids = CallIds {
            session_id: &address.session_id,
            root_session_id: &address.root_session_id,
            run_id: &run_id,
            tool_call_id,
            tool,
        };
        observe::client_call(ClientCallEvent::StopCleared, ids, None, None);
    }
    let status = state
        .store
        .session(&address)
        .await?
        .map_or(Status::Failed, |s| s.status);
    Ok(StopResponse {
        session_id: session.session_id,
        run_id,
        status,
    })
}
