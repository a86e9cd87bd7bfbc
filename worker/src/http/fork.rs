//! `POST /fork`: an operator copies a session up to a checkpoint into a new session.

use super::{error::HttpError, extract::ApiJson};
use crate::{audit, auth::Principal, ops, state::AppState};
use axum::{Extension, Json, extract::State};
use baton_core::fork::{ForkRequest, ForkResponse};

/// `POST /fork {sessionId, checkpoint}`, for operators (a fork is a new session).
pub(super) async fn fork(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<ForkRequest>,
) -> Result<Json<ForkResponse>, HttpError> {
    principal.must_be_operator()?;
    let forked = ops::fork_session(&state, &request).await;
    audit::action(&principal, "fork", &request.session_id, &forked);
    if let Ok(fork) = &forked {
        audit::new_session(&principal, &fork.session_id, fork.token.is_some());
    }
    Ok(Json(forked?))
}
