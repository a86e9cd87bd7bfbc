//! `POST {base}/{agentType}/resume`, `…/interrupt` and `…/abort`: the API's resume and stop on a
//! session of the route's agent type, answered in the protocol's status words.

use super::{MountState, error::MountError, guard::json_body};
use crate::{auth::Principal, ops};
use axum::{
    Extension, Json,
    body::Body,
    extract::{Path, State},
    http::HeaderMap,
    routing::{MethodRouter, post},
};
use baton_core::{
    api::{ResumeRequest, SessionRequest},
    remote::{ResumeResponse, Status, StopResponse},
    store::StopKind,
};

/// `resume`: the body of the API's `/resume` (`mode` `continue`, `with_message` or
/// `from_checkpoint`).
pub(super) async fn resume(
    State(state): State<MountState>,
    Extension(principal): Extension<Principal>,
    Path(agent_type): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<ResumeResponse>, MountError> {
    state.served(&agent_type)?;
    let request: ResumeRequest = json_body(&state, &headers, body).await?;
    state
        .session(&principal, &agent_type, &request.session_id)
        .await?;
    let session_id = request.session_id.clone();
    let resumed = ops::resume(&state.app, &principal, request).await?;
    ops::reindex_callback(&state.app, &session_id).await?;
    Ok(Json(ResumeResponse {
        session_id: resumed.session_id,
        run_id: resumed.run_id,
        status: Status::of(resumed.status),
    }))
}

/// `interrupt` and `abort`: one handler, the route says which stop.
pub(super) fn stop(kind: StopKind) -> MethodRouter<MountState> {
    post(
        move |State(state): State<MountState>,
              Extension(principal): Extension<Principal>,
              Path(agent_type): Path<String>,
              headers: HeaderMap,
              body: Body| async move {
            state.served(&agent_type)?;
            let request: SessionRequest = json_body(&state, &headers, body).await?;
            state
                .session(&principal, &agent_type, &request.session_id)
                .await?;
            let stopped = ops::stop(&state.app, &principal, &request.session_id, kind).await?;
            Ok::<_, MountError>(Json(StopResponse {
                session_id: stopped.session_id,
                status: Status::of(stopped.status),
            }))
        },
    )
}
