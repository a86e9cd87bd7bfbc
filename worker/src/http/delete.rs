//! `POST /delete`: deletes a session tree from its root (see `ops::delete`).

use super::{error::HttpError, extract::ApiJson};
use crate::{auth::Principal, ops, state::AppState};
use axum::{Extension, Json, extract::State};
use baton_core::api::{DeleteResponse, SessionRequest};

/// `POST /delete` `{sessionId}`: the root's tree is deleted once no run works on it (one
/// waiting on a person is interrupted first); `409 state_already_running` while one does.
pub(super) async fn delete(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<SessionRequest>,
) -> Result<Json<DeleteResponse>, HttpError> {
    Ok(Json(
        ops::delete(&state, &principal, &request.session_id).await?,
    ))
}
