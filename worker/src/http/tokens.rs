//! `POST /tokens` (an operator mints a user token) and `POST /tokens/revoke`, each written to
//! the audit log.

use super::{error::HttpError, extract::ApiJson};
use crate::{audit, auth::Principal, ops, state::AppState};
use axum::{Extension, Json, extract::State};
use baton_core::tokens::{RevokeRequest, RevokeResponse, TokenRequest, TokenResponse};

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

/// `POST /tokens/revoke`: a session or user token refused from now on.
pub(super) async fn revoke(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<RevokeRequest>,
) -> Result<Json<RevokeResponse>, HttpError> {
    let revoked = ops::revoke_token(&state, &principal, request).await;
    let subject = revoked
        .as_ref()
        .map_or_else(|_| String::new(), |(_, holder)| holder.clone());
    audit::token(&principal, "token_revoke", &subject, &revoked);
    Ok(Json(revoked?.0))
}
