//! An A2A task's push notification, on the consumer's side: an agent that offers push
//! notifications is asked, with the call's message, to POST the task to
//! `/remote-callbacks/{callerSessionId}/a2a` with a per-call token
//! (`X-A2A-Notification-Token`) that only the caller and the agent know. A push whose token is
//! not the one the caller keeps for the task's context is refused as `unauthorized`, nothing
//! written. A push of a task that has stopped working (it asks, or it ended) starts the follow of
//! a call whose caller waits on it holding nothing (past its follower's window), as a Baton
//! child's callback does; any other push changes nothing (a follower, or the remote-wait sweep,
//! reads the task).

use super::callback::follow_waiting_child;
use crate::state::AppState;
use baton_core::{ApiError, ErrorCode, a2a::Task, ids, store::SessionAddress};

/// The header the agent sends the push's token in.
pub const A2A_PUSH_TOKEN_HEADER: &str = baton_core::a2a::PUSH_TOKEN_HEADER;

/// Takes one push: `token` is the request's [`A2A_PUSH_TOKEN_HEADER`], `body` its bytes.
pub async fn take_a2a_push(
    state: &AppState,
    caller_session_id: &str,
    token: Option<&str>,
    body: &[u8],
) -> Result<(), ApiError> {
    let refused = || {
        ApiError::new(
            ErrorCode::Unauthorized,
            "the push is not for a task this service awaits",
        )
    };
    if !ids::is_valid_session_id(caller_session_id) {
        return Err(refused());
    }
    let address = SessionAddress {
        root_session_id: ids::root_of(caller_session_id).to_owned(),
        session_id: caller_session_id.to_owned(),
    };
    let task: Task = serde_json::from_slice(body).map_err(|_| refused())?;
    let child = &task.context_id;
    let kept = state
        .store
        .remote_callback(&address, child)
        .await?
        .ok_or_else(refused)?;
    if !same(kept.as_bytes(), token.unwrap_or_default().as_bytes()) {
        return Err(refused());
    }
    if task.status.state.ends_a_stream() {
        follow_waiting_child(state, &address, child, 0).await?;
    }
    Ok(())
}

/// Whether two tokens are equal, in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_compared_whole() {
        assert!(super::same(b"abc", b"abc"));
        assert!(!super::same(b"abc", b"abd"));
        assert!(!super::same(b"abc", b"ab"));
        assert!(!super::same(b"", b"a"));
    }
}
