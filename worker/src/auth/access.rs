//! Authentication with revocation: the request's principal (a service key first, then the
//! server's [`Auth`]), whether it reaches the request's [`Surface`], then, for a token, whether
//! it was revoked (two Redis reads, sent together: a token's own mark and its tree's for a
//! session token, or its user's for a user token). Every transport authenticates through
//! [`authenticate`], so a revoked token is refused on every route the moment the revocation is
//! written.

use super::{Auth, BuiltinAuth, Principal, ServiceKeys, Surface, TokenRef, bearer, unauthorized};
use axum::http::HeaderMap;
use baton_core::{
    ApiError, Store,
    tokens::{RevokeResponse, TokenKind},
};

/// The principal of a request on `surface`, or 401 `unauthorized` (no or a bad credential, an
/// expired or a revoked token, the mount without a service key) or 403 `forbidden` (a service
/// key off the mount, a user token on it).
pub async fn authenticate(
    auth: &Auth,
    services: &ServiceKeys,
    store: &Store,
    headers: &HeaderMap,
    surface: Surface,
) -> Result<Principal, ApiError> {
    let service = bearer(headers)
        .ok()
        .and_then(|credential| services.principal(credential));
    let principal = match service {
        Some(service) => service,
        None => auth.authenticate(headers).await?,
    };
    principal.may_reach(surface, matches!(auth, Auth::AllowUnauthenticated))?;
    if is_revoked(store, &principal).await? {
        return Err(unauthorized("this token was revoked"));
    }
    Ok(principal)
}

async fn is_revoked(store: &Store, principal: &Principal) -> Result<bool, ApiError> {
    Ok(match principal {
        Principal::Operator { .. } | Principal::Service { .. } => false,
        Principal::User { user_id, token, .. } => {
            let (revoked, user_until) = store.user_token_revocation(&token.id, user_id).await?;
            revoked || user_until.is_some_and(|until| token.issued_at_ms <= until)
        }
        Principal::Session {
            root_session_id,
            token,
        } => {
            let (revoked, tree_until) = store.revocation(&token.id, Some(root_session_id)).await?;
            revoked || tree_until.is_some_and(|until| token.expires_at <= until)
        }
    })
}

/// Revokes every session token issued so far for the tree `root_session_id` (an operator's
/// stop or abort of the root does this): those expire at most the token lifetime from now.
pub async fn revoke_session_tokens(
    auth: &Auth,
    store: &Store,
    root_session_id: &str,
) -> Result<(), ApiError> {
    let Auth::Builtin(builtin) = auth else {
        return Ok(());
    };
    let until = super::now_secs() + builtin.session_token_ttl().as_secs();
    Ok(store.revoke_session_tokens(root_session_id, until).await?)
}

impl BuiltinAuth {
    /// What a genuine token (expired or not) is, for its revocation: its kind, its reference and
    /// its holder's audit name; a typed 401 for text that is no token of this server's.
    pub(crate) fn revocable(&self, token: &str) -> Result<(TokenKind, TokenRef, String), ApiError> {
        if token.starts_with(super::user_token::PREFIX) {
            let (claims, token) = self.genuine_user_token(token)?;
            let holder = format!("user:{}", baton_core::escape::bounded(&claims.sub));
            return Ok((TokenKind::User, token, holder));
        }
        let (root_session_id, token) = self.genuine_session_token(token)?;
        Ok((
            TokenKind::Session,
            token,
            format!("session:{root_session_id}"),
        ))
    }
}

/// Marks a token revoked until it expires.
pub(crate) async fn revoke(
    store: &Store,
    kind: TokenKind,
    token: &TokenRef,
) -> Result<RevokeResponse, ApiError> {
    store.revoke_token(&token.id, token.expires_at).await?;
    Ok(RevokeResponse {
        kind,
        expires_at: token.expires_at,
    })
}

impl Principal {
    /// The refusal of a credential revoked since it was authenticated (a stream open before
    /// the revocation re-checks its credential with this), or `Ok` while it holds. An operator
    /// key is never revoked and costs no read.
    pub async fn check_not_revoked(&self, store: &Store) -> Result<(), ApiError> {
        if is_revoked(store, self).await? {
            return Err(unauthorized("this token was revoked"));
        }
        Ok(())
    }
}
