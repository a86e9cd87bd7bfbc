//! `GET {base}/{agentType}/status`, `…/snapshot` and `…/usage`: the API's reads of a session of
//! the route's agent type, in the protocol's shapes and at the mount's fidelity.

use super::{MountState, error::MountError, guard::MountQuery};
use crate::{auth::Principal, http::SessionQuery, ops};
use axum::{
    Extension, Json,
    extract::{Path, State},
};
use baton_core::{
    ApiError, ErrorCode,
    remote::{SnapshotResponse, Status, StatusResponse, UsageResponse},
    store::Status as Baton,
};

/// `status`: the protocol's status word, `isExecuting` from Temporal's view of the run, and
/// `awaitingClientTool` while the session waits for people (Baton suspends a session only for
/// client calls and approvals, its own or those of a child below it).
pub(super) async fn status(
    State(state): State<MountState>,
    Extension(principal): Extension<Principal>,
    Path(agent_type): Path<String>,
    MountQuery(query): MountQuery<SessionQuery>,
) -> Result<Json<StatusResponse>, MountError> {
    state
        .session(&principal, &agent_type, &query.session_id)
        .await?;
    let session = ops::session_status(&state.app, &principal, &query.session_id).await?;
    Ok(Json(StatusResponse {
        is_executing: session.is_executing.unwrap_or(false),
        awaiting_client_tool: session.status == Baton::SuspendedClientTool,
        status: Status::of(session.status),
        session_id: session.session_id,
        agent_type: session.agent_type,
        stream_id: session.stream_id,
        step_count: session.step_count,
        output: session.output,
        error: session.error,
        pending_calls: session.pending,
    }))
}

/// `snapshot`: the session's own state (as the mount shows it) pinned to its newest checkpoint,
/// or `streamSequence: -1` when ended or without one.
pub(super) async fn snapshot(
    State(state): State<MountState>,
    Extension(principal): Extension<Principal>,
    Path(agent_type): Path<String>,
    MountQuery(query): MountQuery<SessionQuery>,
) -> Result<Json<SnapshotResponse>, MountError> {
    state
        .session(&principal, &agent_type, &query.session_id)
        .await?;
    let snapshot = ops::session_snapshot(&state.app, &principal, &query.session_id).await?;
    Ok(Json(SnapshotResponse {
        session_id: snapshot.session_id,
        stream_id: snapshot.stream_id,
        state: state.mount.shown_state(snapshot.state),
        stream_sequence: snapshot.stream_sequence,
        oldest_retained_sequence: snapshot.oldest_retained_sequence,
        step_count: snapshot.step_count,
        checkpoint_id: snapshot.checkpoint_id,
    }))
}

/// `usage`: the session's rollup with its whole subtree (as the mount shows it), or
/// `FEATURE_UNAVAILABLE` on a mount without usage.
pub(super) async fn usage(
    State(state): State<MountState>,
    Extension(principal): Extension<Principal>,
    Path(agent_type): Path<String>,
    MountQuery(query): MountQuery<SessionQuery>,
) -> Result<Json<UsageResponse>, MountError> {
    state.served(&agent_type)?;
    if !state.mount.serves_usage {
        return Err(ApiError::new(
            ErrorCode::FeatureUnavailable,
            "this mount does not serve usage",
        )
        .into());
    }
    state
        .session(&principal, &agent_type, &query.session_id)
        .await?;
    let usage = ops::session_usage(&state.app, &principal, &query.session_id).await?;
    Ok(Json(UsageResponse {
        session_id: usage.session_id,
        rollup: state.mount.shown_usage(&usage.rollup),
    }))
}
