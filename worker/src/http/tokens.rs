//! `POST /tokens` (an operator mints a user token) and `POST /tokens/revoke` (a token, or every
//! user token of a `userId`), each written to the audit log.

use super::{error::HttpError, extract::ApiJson};
use crate::{audit, auth::Principal, ops, state::AppState};
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
    let subject = format!("user:{}", baton_core::escape::bounded(&request.user_id));
    let minted = ops::mint_user_token(&state, &principal, request).await;
    audit::token(&principal, "token_mint", &subject, &minted);
    Ok(Json(minted?))
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
        Revoke::Token(request) => {
            let revoked = ops::revoke_token(&state, &principal, request).await;
            let subject = revoked
                .as_ref()
                .map_or_else(|_| String::new(), |(_, holder)| holder.clone());
            audit::token(&principal, "token_revoke", &subject, &revoked);
            Ok(Json(Revoked::Token(revoked?.0)))
        }
        Revoke::User(request) => {
            let subject = format!("user:{}", baton_core::escape::bounded(&request.user_id));
            let revoked = ops::revoke_user_tokens(&state, &principal, request).await;
            audit::token(&principal, "token_revoke_user", &subject, &revoked);
            Ok(Json(Revoked::User(revoked?)))
        }
    }
}
