//! `POST /tokens` (an operator mints a user token) and `POST /tokens/revoke` (a token, or every
//! user token of a `userId`); the operations write the audit log.

use super::{error::HttpError, extract::ApiJson};
use crate::{auth::Principal, ops, state::AppState};
use axum::{Extension, Json, extract::State};
use baton_core::tokens::{
    RevokeRequest, RevokeResponse, RevokeUserRequest, RevokeUserResponse, TokenRequest,
    TokenResponse,
};
use serde::{Deserialize, Serialize};

/// `POST /tokens`: a user token for an app's end user.
pub(super) async fn mint(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<TokenRequest>,
) -> Result<Json<TokenResponse>, HttpError> {
    Ok(Json(
        ops::mint_user_token(&state, &principal, request).await?,
    ))
}

/// The bodies `POST /tokens/revoke` takes: `{"token"}` or `{"userId"}`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Revoke {
    Token(RevokeRequest),
    User(RevokeUserRequest),
}

/// Its answers, one per body.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Revoked {
    Token(RevokeResponse),
    User(RevokeUserResponse),
}

/// `POST /tokens/revoke`: a session or user token refused from now on, or (operators) every
/// user token of a `userId` issued so far.
pub(super) async fn revoke(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<Revoke>,
) -> Result<Json<Revoked>, HttpError> {
    match request {
        Revoke::Token(request) => Ok(Json(Revoked::Token(
            ops::revoke_token(&state, &principal, request).await?,
        ))),
        Revoke::User(request) => Ok(Json(Revoked::User(
            ops::revoke_user_tokens(&state, &principal, request).await?,
        ))),
    }
}
