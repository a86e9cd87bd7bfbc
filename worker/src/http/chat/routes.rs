//! The handlers of the chat routes: each authenticates (the layer did), decodes, calls its
//! operation in `crate::ai_sdk` and answers.

use super::{
    super::body::json_body,
    stream::{STOP_ON_ABORT_HEADER, respond},
};
use crate::{
    ai_sdk::{self, ChatBody, ChatSnapshot, MAX_CHAT_REQUEST_BYTES},
    auth::Principal,
    http::HttpError,
    ops::refused_with_reason,
    state::AppState,
    stream::Credential,
};
use axum::{
    Extension, Json,
    body::Body,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use baton_core::{
    ApiError, ErrorCode,
    api::{DeleteResponse, StopResponse},
    escape::bounded,
};

/// `POST /chat`: the body of `useChat`'s transport, answered as a UI message stream (or a typed
/// error).
pub(super) async fn post(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Extension(credential): Extension<Credential>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, HttpError> {
    let bytes = json_body(&headers, body, MAX_CHAT_REQUEST_BYTES).await?;
    let body: ChatBody = serde_json::from_slice(&bytes).map_err(|error| {
        refused_with_reason(
            ErrorCode::ValidationError,
            "the body is not a useChat request",
            error,
            state.options.verbose_errors,
        )
    })?;
    let chat_id = body.id.clone();
    // The answer is a stream: admitted under the follower caps before anything is written.
    let permit = crate::ops::admit_follower(&state, &chat_id, &credential)
        .inspect_err(|error| log_refusal(&chat_id, error))?;
    let reply = ai_sdk::chat_post(&state, &principal, body)
        .await
        .inspect_err(|error| log_refusal(&chat_id, error))?;
    let stop_on_abort = headers
        .get(STOP_ON_ABORT_HEADER)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"true"));
    Ok(respond(state, reply, permit, &principal, stop_on_abort).await?)
}

/// `GET /chat/{id}/stream`: the running turn, or 204 when no run works.
pub(super) async fn reattach(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Extension(credential): Extension<Credential>,
    Path(chat_id): Path<String>,
) -> Result<Response, HttpError> {
    let permit = crate::ops::admit_follower(&state, &chat_id, &credential)?;
    match ai_sdk::chat_reattach(&state, &principal, &chat_id).await? {
        None => Ok(StatusCode::NO_CONTENT.into_response()),
        Some(reply) => Ok(respond(state, reply, permit, &principal, false).await?),
    }
}

/// `GET /chat/{id}/snapshot`: the session's UI messages.
pub(super) async fn snapshot(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(chat_id): Path<String>,
) -> Result<Json<ChatSnapshot>, HttpError> {
    Ok(Json(
        ai_sdk::chat_snapshot(&state, &principal, &chat_id).await?,
    ))
}

/// `POST /chat/{id}/stop`: the chat's `stop()` interrupts its run (the same authorization as
/// the chat's other routes; a token holder's own stop revokes nothing). 409 `run_not_active`
/// when no run works.
pub(super) async fn stop(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(chat_id): Path<String>,
) -> Result<Json<StopResponse>, HttpError> {
    Ok(Json(ai_sdk::chat_stop(&state, &principal, &chat_id).await?))
}

/// `DELETE /chat/{id}`: deletes the chat (its session tree; see `ops::delete`).
pub(super) async fn delete(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(chat_id): Path<String>,
) -> Result<Json<DeleteResponse>, HttpError> {
    Ok(Json(
        crate::ops::delete(&state, &principal, &chat_id).await?,
    ))
}

/// One line per refused chat request, with its cause (a lost race is a warning). The chat id
/// and the message are the request's, so they are logged bounded.
fn log_refusal(chat_id: &str, error: &ApiError) {
    let chat_id = bounded(chat_id);
    let message = bounded(&error.error);
    let refusal = error.refusal();
    let cause = refusal
        .as_ref()
        .and_then(|refusal| refusal.cause())
        .unwrap_or(error.code.as_str());
    if error.code.presentation().http_status >= 500 {
        tracing::error!(%chat_id, code = %error.code, cause, error = %message, "chat request failed");
    } else {
        tracing::warn!(%chat_id, code = %error.code, cause, error = %message, "chat request refused");
    }
}
