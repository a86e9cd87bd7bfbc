//! `POST /fork`: an operator copies a session up to a checkpoint into a new session.

use super::{error::HttpError, extract::ApiJson};
use crate::{auth::Principal, ops, state::AppState};
use axum::{Extension, Json, extract::State};
use baton_core::fork::{ForkRequest, ForkResponse};

/// `POST /fork {sessionId, checkpoint}`, for operators (a fork is a new session).
pub(super) async fn fork(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<ForkRequest>,
) -> Result<Json<ForkResponse>, HttpError> {
    Ok(Json(ops::fork_session(&state, &principal, &request).await?))
}
