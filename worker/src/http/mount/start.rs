//! `POST {base}/{agentType}/start`: a session of the caller's choosing (`sessionId` in the body),
//! for service principals (service keys, or operator keys); `ALREADY_RUNNING` with the session's `streamId` when
//! it exists, so a consumer attaches instead of starting a second run.

use super::{MountState, error::MountError, guard::json_body};
use crate::{auth::Principal, ops};
use axum::{
    Extension, Json,
    body::Body,
    extract::{Path, State},
    http::HeaderMap,
};
use baton_core::remote::{StartRequest, StartResponse};

pub(super) async fn start(
    State(state): State<MountState>,
    Extension(principal): Extension<Principal>,
    Path(agent_type): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<StartResponse>, MountError> {
    state.served(&agent_type)?;
    let request: StartRequest = json_body(&state, &headers, body).await?;
    Ok(Json(
        ops::start_or_attach(&state.app, &principal, &agent_type, &request).await?,
    ))
}
