//! A remote child's turn-end callback, on the consumer's side: the producer POSTs a signed
//! [`CallbackBody`] to `/remote-callbacks/{callerSessionId}` each time a turn of the child
//! ends. The signature is checked against the per-call token the caller keeps for the child
//! (HMAC-SHA256 of the body, as the producer signs it); a wrong one, or a turn older than the
//! last accepted one (a replay), is refused as `unauthorized` with nothing written. The last
//! accepted turn sent again (a producer that lost our answer) is taken again: its follow is
//! started if it is still needed, which the first delivery may have failed to do. An accepted end of a child its
//! caller waits on holding nothing (the child ran past its follower's window) starts the child's
//! follow, which reads it on from the cursor and answers and resumes the caller (or records the
//! calls it waits on a person for).

use super::follow::ChildFollow;
use crate::state::AppState;
use baton_core::{
    ApiError, ErrorCode, ids,
    remote::{CallbackBody, Status as RemoteStatus},
    store::{CallbackAccepted, RemoteWait, SessionAddress, Status},
};
use ring::hmac;

/// Takes one callback: `signature` is the request's `x-baton-signature`, `body` its bytes.
pub async fn take_remote_callback(
    state: &AppState,
    caller_session_id: &str,
    signature: Option<&str>,
    body: &[u8],
) -> Result<(), ApiError> {
    let refused = || {
        ApiError::new(
            ErrorCode::Unauthorized,
            "the callback is not signed for a turn this service awaits",
        )
    };
    if !ids::is_valid_session_id(caller_session_id) {
        return Err(refused());
    }
    let address = SessionAddress {
        root_session_id: ids::root_of(caller_session_id).to_owned(),
        session_id: caller_session_id.to_owned(),
    };
    let callback: CallbackBody = serde_json::from_slice(body).map_err(|_| refused())?;
    let child = &callback.session_id;
    let token = state
        .store
        .remote_callback(&address, child)
        .await?
        .ok_or_else(refused)?;
    if !signed_with(&token, body, signature.unwrap_or_default()) {
        return Err(refused());
    }
    match state
        .store
        .accept_remote_callback(&address, child, &token, callback.sequence)
        .await?
    {
        CallbackAccepted::Accepted | CallbackAccepted::Repeated => {}
        CallbackAccepted::Replayed | CallbackAccepted::Unknown => return Err(refused()),
    }
    if callback.status != RemoteStatus::Running {
        follow_waiting_child(state, &address, child, callback.sequence).await?;
    }
    Ok(())
}

/// Whether `signature` is `sha256=<hex>` of the body's HMAC-SHA256 under `token` (compared in
/// constant time).
fn signed_with(token: &str, body: &[u8], signature: &str) -> bool {
    let Some(hex) = signature.strip_prefix("sha256=") else {
        return false;
    };
    if hex.len() != 64 || !hex.is_ascii() {
        return false;
    }
    let tag: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).ok())
        .collect();
    let Some(tag) = tag else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes());
    hmac::verify(&key, body, &tag).is_ok()
}

/// Starts the follow of `child` when its caller waits on it holding nothing: suspended, the
/// call pending and unanswered, and either no call of the child relayed, or relayed calls of a
/// pause the child has moved on from (the turn that ended, `sequence`, is past the pause the
/// caller recorded: the child's calls were answered on its producer, not through this root, so
/// the follow reads its next pause or its end, and the answered calls leave the root's inbox).
/// Otherwise there is nothing to do: a follower reads the child, the call is answered, or the
/// root's resume goes on with a paused child.
pub(super) async fn follow_waiting_child(
    state: &AppState,
    address: &SessionAddress,
    child: &str,
    sequence: u64,
) -> Result<(), ApiError> {
    let Some(caller) = state.store.session(address).await? else {
        return Ok(());
    };
    if caller.status != Status::SuspendedClientTool {
        return Ok(());
    }
    let answers = state.store.answers(address).await?;
    let groups = state.store.relayed_groups(address).await?;
    let mut call = None;
    for candidate in state.store.pending_calls(address).await? {
        if candidate.kind.is_sub_agent()
            && state
                .store
                .remote_child_id(address, &candidate.tool_call_id)
                .await?
                == child
        {
            call = Some(candidate);
            break;
        }
    }
    let Some(call) = call else {
        return Ok(());
    };
    let group = groups
        .iter()
        .find(|group| group.via_call_id == call.tool_call_id);
    // Relayed calls none of which this root answered, and a turn past their pause: they were
    // answered on the producer (with an answer of ours the root's resume follows the child).
    let answered_elsewhere = match group {
        Some(group) => {
            group.calls.iter().all(|(_, answered)| !answered)
                && sequence > state.store.remote_cursor(address, child).await?
        }
        None => false,
    };
    if answers.contains_key(&call.tool_call_id) || (group.is_some() && !answered_elsewhere) {
        return Ok(());
    }
    // The follow's id is the one the root's resume gives it (its first relayed call's), so a
    // follow already running is not started twice.
    let follow = ChildFollow {
        address,
        caller: &caller,
        call: &call,
        first_relayed: group
            .and_then(|group| group.calls.first())
            .map(|(first, _)| first.call.tool_call_id.as_str()),
        resume_child: false,
    };
    let workflow_id = follow.start(super::targets(state)).await?;
    tracing::info!(%child, %workflow_id, "a remote child's callback starts its follow");
    // The sweep need not poll the child any more (a member left behind finds nothing to do).
    let wait = RemoteWait {
        address: address.clone(),
        run_id: caller.run_id,
        tool_call_id: call.tool_call_id,
        due_at: 0,
    };
    state.store.unindex_remote_wait(&wait).await?;
    Ok(())
}
