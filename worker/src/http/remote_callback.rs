//! `POST /remote-callbacks/{callerSessionId}`: where remote children's producers POST their
//! signed turn-end callbacks (see `crate::remote::take_remote_callback`). Outside the API's
//! authentication: the signature, under a token only the caller and the producer know, is the
//! credential. An A2A task's push notification comes to `/remote-callbacks/{callerSessionId}/a2a`,
//! its token the credential.

use super::error::HttpError;
use crate::state::AppState;
use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
};
use baton_core::remote::CALLBACK_SIGNATURE_HEADER;

pub(super) async fn callback(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, HttpError> {
    let signature = headers
        .get(CALLBACK_SIGNATURE_HEADER)
        .and_then(|value| value.to_str().ok());
    crate::remote::take_remote_callback(&state, &session_id, signature, &body).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /remote-callbacks/{callerSessionId}/a2a`: an A2A task's push notification (see
/// `crate::remote::take_a2a_push`); its token is the credential.
pub(super) async fn a2a_push(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, HttpError> {
    let token = headers
        .get(crate::remote::A2A_PUSH_TOKEN_HEADER)
        .and_then(|value| value.to_str().ok());
    crate::remote::take_a2a_push(&state, &session_id, token, &body).await?;
    Ok(StatusCode::NO_CONTENT)
}
