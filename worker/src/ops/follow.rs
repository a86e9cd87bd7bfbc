//! Following a session's stream (SSE, gRPC `Subscribe`, the chat's answer, the mount's `sse`):
//! the follower is authorized, admitted under the follower caps and opened to end on its
//! credential's revocation here, so no adapter composes those itself.

use super::{authorize, existing_session};
use crate::{
    auth::Principal,
    state::AppState,
    stream::{Credential, Follow, FollowerPermit},
};
use baton_core::{ApiError, store::SessionState};

/// `follow`: the caller may act on the session (checked before anything tells whether it
/// exists), then its place under the follower caps (`rate_limited` past them), then the session
/// (`session_not_found`), followed after sequence `after`.
pub async fn follow(
    state: &AppState,
    principal: &Principal,
    credential: &Credential,
    session_id: &str,
    after: u64,
) -> Result<Follow, ApiError> {
    authorize(state, principal, "follow", session_id).await?;
    let permit = admit_follower(state, session_id, credential)?;
    let session = existing_session(state, session_id).await?;
    open_follow(state, principal, session, after, permit).await
}

/// A follower's place under the caps, for a request that must take it before it writes anything
/// (the chat's turn, the mount's stream); `rate_limited` past them.
pub fn admit_follower(
    state: &AppState,
    session_id: &str,
    credential: &Credential,
) -> Result<FollowerPermit, ApiError> {
    state
        .streams
        .followers
        .admit(state.options.follower_caps, session_id, credential)
}

/// Follows `session`, which the caller has authorized and read, with its admitted `permit`: the
/// stream ends with `unauthorized` soon after `principal`'s token is revoked.
pub async fn open_follow(
    state: &AppState,
    principal: &Principal,
    session: SessionState,
    after: u64,
    permit: FollowerPermit,
) -> Result<Follow, ApiError> {
    Ok(Follow::open(
        state.store.clone(),
        state.streams.clone(),
        session,
        after,
        permit,
    )
    .await?
    .ends_on_revocation(principal))
}
