//! `POST {base}/{agentType}/submit`, Baton's extension of the protocol: the API's submit (a
//! client tool's result or an approval's decision, the body of `/submit-tool-result`) on a
//! paused session of the route's agent type. A consumer relays here the answer a person gave on
//! its own root to a call its remote child awaits (the call's id is the producer's, from
//! `status`'s `pendingCalls`); the answer, or the refusal in the mount's envelope with the API's
//! code, is the API's, and a refused answer writes nothing.

use super::{MountState, error::MountError, guard::json_body};
use crate::{auth::Principal, ops};
use axum::{
    Extension, Json,
    body::Body,
    extract::{Path, State},
    http::HeaderMap,
};
use baton_core::{
    ApiError, ErrorCode,
    submit::{SubmitAnswer, SubmitRequest},
};
use serde_json::Value;

pub(super) async fn submit(
    State(state): State<MountState>,
    Extension(principal): Extension<Principal>,
    Path(agent_type): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<SubmitAnswer>, MountError> {
    state.served(&agent_type)?;
    let request: Value = json_body(&state, &headers, body).await?;
    let session_id = request
        .get("sessionId")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::new(ErrorCode::ValidationError, "sessionId is required"))?;
    state.session(&principal, &agent_type, session_id).await?;
    // Decoded once, from the JSON the guard read; refused as the API's submit refuses a body.
    let request = SubmitRequest::from_value(request, state.app.options.verbose_errors)?;
    Ok(Json(ops::submit(&state.app, &principal, request).await?))
}
