//! The handlers of the JSON routes: each authorizes, calls its operation (`crate::ops`) and
//! answers its JSON. `/sse` is in `sse.rs`, `/metrics` in `metrics.rs`.

use super::{
    body::json_body,
    error::HttpError,
    extract::{ApiJson, ApiQuery, SessionQuery},
};
use crate::{
    audit::{self, audit_name_of},
    auth::Principal,
    ops,
    state::AppState,
};
use axum::{
    Extension, Json,
    body::Body,
    extract::State,
    http::HeaderMap,
    routing::{MethodRouter, post},
};
use baton_core::{
    api::{
        ResumeRequest, ResumeResponse, SessionRequest, SnapshotResponse, StartRequest,
        StartResponse, StopResponse, UsageResponse,
    },
    store::{SessionState, StopKind},
    submit::SubmitAnswer,
};

/// `POST /start` is for operators and user tokens (of their agent types, the session's `userId`
/// their subject); with built-in auth the answer carries the new session's token.
pub(super) async fn start(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(mut request): ApiJson<StartRequest>,
) -> Result<Json<StartResponse>, HttpError> {
    request.user_id = principal.may_start(&request.agent, request.user_id.take())?;
    let started = ops::checked_start(&state, &principal, request).await;
    audit::started(&principal, &started);
    Ok(Json(started?))
}

/// `POST /resume`.
pub(super) async fn resume(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<ResumeRequest>,
) -> Result<Json<ResumeResponse>, HttpError> {
    principal
        .may_act_on(&state.store, &request.session_id)
        .await?;
    let session_id = request.session_id.clone();
    let resume = request.checked()?;
    let action = audit_name_of(&resume);
    let resumed = ops::resume_session(&state, &session_id, resume).await;
    audit::action(&principal, action, &session_id, &resumed);
    Ok(Json(resumed?))
}

/// `POST /interrupt` and `POST /abort`: one handler, the route says which stop.
pub(super) fn stop(kind: StopKind) -> MethodRouter<AppState> {
    post(
        move |State(state): State<AppState>,
              Extension(principal): Extension<Principal>,
              ApiJson(request): ApiJson<SessionRequest>| async move {
            principal
                .may_act_on(&state.store, &request.session_id)
                .await?;
            if matches!(principal, Principal::Operator { .. }) {
                ops::revoke_tokens_of_stopped(&state, &principal, &request.session_id).await?;
            }
            let stopped = ops::stop_session(&state, &request.session_id, kind).await;
            audit::action(&principal, kind.as_str(), &request.session_id, &stopped);
            Ok::<_, HttpError>(Json::<StopResponse>(stopped?))
        },
    )
}

/// `POST /submit-tool-result`: the body is JSON and bounded before it is read (411 without a
/// length when chunked, 413 over the guard), then parsed and stored (see `baton_core::submit`).
pub(super) async fn submit(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<SubmitAnswer>, HttpError> {
    let cap = state.options.submit_limits.request_body_cap();
    let bytes = json_body(&headers, body, cap).await?;
    Ok(Json(ops::checked_submit(&state, &principal, &bytes).await?))
}

/// `GET /status`: the session's state, with `isExecuting`.
pub(super) async fn status(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiQuery(query): ApiQuery<SessionQuery>,
) -> Result<Json<SessionState>, HttpError> {
    principal
        .may_act_on(&state.store, &query.session_id)
        .await?;
    Ok(Json(ops::session_status(&state, &query.session_id).await?))
}

/// `GET /snapshot`: the session's log pinned to a stream position (see [`SnapshotResponse`]).
pub(super) async fn snapshot(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiQuery(query): ApiQuery<SessionQuery>,
) -> Result<Json<SnapshotResponse>, HttpError> {
    principal
        .may_act_on(&state.store, &query.session_id)
        .await?;
    Ok(Json(
        ops::session_snapshot(&state, &query.session_id).await?,
    ))
}

/// `GET /usage`: what the session has spent so far.
pub(super) async fn usage(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiQuery(query): ApiQuery<SessionQuery>,
) -> Result<Json<UsageResponse>, HttpError> {
    principal
        .may_act_on(&state.store, &query.session_id)
        .await?;
    Ok(Json(ops::session_usage(&state, &query.session_id).await?))
}
