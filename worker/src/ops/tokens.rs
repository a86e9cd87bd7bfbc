//! Minting user tokens (an operator, for an app's end user) and revoking session and user
//! tokens, one by one or every user token of a user. The request is checked whole before the
//! token is signed or anything written.

use crate::{
    auth::{Auth, BuiltinAuth, Principal, UserClaims},
    state::AppState,
};
use baton_core::{
    ApiError, ErrorCode, SessionMeta,
    tokens::{
        DEFAULT_USER_TOKEN_TTL_SECS, MAX_USER_TOKEN_AGENTS, MAX_USER_TOKEN_TTL_SECS,
        MIN_USER_TOKEN_TTL_SECS, RevokeRequest, RevokeResponse, RevokeUserRequest,
        RevokeUserResponse, TokenRequest, TokenResponse,
    },
};

/// `POST /tokens`: a user token for `request.user_id`, good for the agent types it names. Only
/// built-in auth signs tokens (others answer `feature_unavailable`).
pub async fn mint_user_token(
    state: &AppState,
    principal: &Principal,
    request: TokenRequest,
) -> Result<TokenResponse, ApiError> {
    let subject = format!("user:{}", baton_core::escape::bounded(&request.user_id));
    let minted = mint(state, principal, request).await;
    crate::audit::token(principal, "token_mint", &subject, &minted);
    minted
}

async fn mint(
    state: &AppState,
    principal: &Principal,
    request: TokenRequest,
) -> Result<TokenResponse, ApiError> {
    principal.must_be_operator()?;
    let builtin = builtin(state)?;
    let ttl = checked_request(state, &request)?;
    let claims = UserClaims {
        sub: request.user_id,
        agents: request.agents,
        exp: crate::auth::now_secs() + ttl,
    };
    Ok(TokenResponse {
        token: builtin.issue_user(&claims),
        user_id: claims.sub,
        agents: claims.agents,
        expires_at: claims.exp,
    })
}

/// The demo page's token (`batond dev`'s demo mode): a user token of `user_id` good for every
/// agent type served, minted and audited in the demo mode's name; none unless built-in auth
/// signs tokens (an open server's page sends none).
pub fn mint_demo_token(state: &AppState, user_id: &str) -> Option<String> {
    let Auth::Builtin(builtin) = &state.options.auth else {
        return None;
    };
    let claims = UserClaims {
        sub: user_id.to_owned(),
        agents: state.registry.agent_types().map(str::to_owned).collect(),
        exp: crate::auth::now_secs() + DEFAULT_USER_TOKEN_TTL_SECS,
    };
    let demo = Principal::Operator {
        name: "demo-mode".to_owned(),
    };
    let subject = format!("user:{}", baton_core::escape::bounded(user_id));
    crate::audit::token(&demo, "token_mint", &subject, &Ok::<_, ApiError>(()));
    Some(builtin.issue_user(&claims))
}

/// `POST /tokens/revoke`: an operator revokes any token of this server's; a token's holder its
/// own (a sign-out). Revoking an expired token answers as a revocation and writes nothing.
pub async fn revoke_token(
    state: &AppState,
    principal: &Principal,
    request: RevokeRequest,
) -> Result<RevokeResponse, ApiError> {
    let revoked = revoke_one(state, principal, request).await;
    let subject = revoked
        .as_ref()
        .map_or_else(|_| String::new(), |(_, holder)| holder.clone());
    crate::audit::token(principal, "token_revoke", &subject, &revoked);
    revoked.map(|(revoked, _)| revoked)
}

/// The revocation, and whom the revoked token was for (`user:<id>`, `session:<root>`).
async fn revoke_one(
    state: &AppState,
    principal: &Principal,
    request: RevokeRequest,
) -> Result<(RevokeResponse, String), ApiError> {
    let builtin = builtin(state)?;
    let (kind, token, holder) = builtin.revocable(&request.token)?;
    let own = match principal {
        Principal::Operator { .. } => true,
        Principal::Session { token: mine, .. } | Principal::User { token: mine, .. } => {
            mine.id == token.id
        }
        Principal::Service { .. } => false,
    };
    if !own {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "a token may revoke only itself; an operator key revokes any",
        ));
    }
    let revoked = crate::auth::revoke(&state.store, kind, &token).await?;
    Ok((revoked, holder))
}

/// `POST /tokens/revoke {"userId"}`: an operator revokes every user token of `userId` issued
/// until now (those minted later hold). The mark is kept as long as the longest a user token
/// lives, when every token it revokes has expired.
pub async fn revoke_user_tokens(
    state: &AppState,
    principal: &Principal,
    request: RevokeUserRequest,
) -> Result<RevokeUserResponse, ApiError> {
    let subject = format!("user:{}", baton_core::escape::bounded(&request.user_id));
    let revoked = revoke_of_user(state, principal, request).await;
    crate::audit::token(principal, "token_revoke_user", &subject, &revoked);
    revoked
}

async fn revoke_of_user(
    state: &AppState,
    principal: &Principal,
    request: RevokeUserRequest,
) -> Result<RevokeUserResponse, ApiError> {
    principal.must_be_operator()?;
    builtin(state)?;
    SessionMeta {
        user_id: Some(request.user_id.clone()),
        ..SessionMeta::default()
    }
    .check()?;
    let issued_until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let keep = std::time::Duration::from_secs(MAX_USER_TOKEN_TTL_SECS);
    state
        .store
        .revoke_user_tokens(&request.user_id, issued_until, keep)
        .await?;
    Ok(RevokeUserResponse {
        user_id: request.user_id,
        issued_until,
    })
}

fn builtin(state: &AppState) -> Result<&BuiltinAuth, ApiError> {
    match &state.options.auth {
        Auth::Builtin(builtin) => Ok(builtin),
        _ => Err(ApiError::new(
            ErrorCode::FeatureUnavailable,
            "this server signs no tokens (it has no built-in auth)",
        )),
    }
}

/// The token's lifetime once the request is within its bounds: a valid `userId`, 1 to
/// [`MAX_USER_TOKEN_AGENTS`] distinct agent types this server serves, a lifetime in range.
fn checked_request(state: &AppState, request: &TokenRequest) -> Result<u64, ApiError> {
    let refuse = |message: String| Err(ApiError::new(ErrorCode::ValidationError, message));
    SessionMeta {
        user_id: Some(request.user_id.clone()),
        ..SessionMeta::default()
    }
    .check()?;
    if request.agents.is_empty() || request.agents.len() > MAX_USER_TOKEN_AGENTS {
        return refuse(format!(
            "agents must name 1 to {MAX_USER_TOKEN_AGENTS} agent types"
        ));
    }
    for (index, agent) in request.agents.iter().enumerate() {
        if state.registry.get(agent).is_none() {
            return refuse(format!(
                "agents[{index}] is not an agent type this server serves"
            ));
        }
        if request.agents[..index].contains(agent) {
            return refuse(format!("agents[{index}] is named twice"));
        }
    }
    let ttl = request.ttl_secs.unwrap_or(DEFAULT_USER_TOKEN_TTL_SECS);
    if !(MIN_USER_TOKEN_TTL_SECS..=MAX_USER_TOKEN_TTL_SECS).contains(&ttl) {
        return refuse(format!(
            "ttlSecs must be {MIN_USER_TOKEN_TTL_SECS} to {MAX_USER_TOKEN_TTL_SECS}"
        ));
    }
    Ok(ttl)
}

/// Before an operator's stop or abort of a root session: revokes the session tokens of its tree
/// issued so far, so their holders cannot start it again (a stop of a sub-agent's session leaves
/// them). Nothing for a session that does not exist (the stop answers that).
pub(crate) async fn revoke_tokens_of_stopped(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
) -> Result<(), ApiError> {
    let address = super::checked_address(session_id)?;
    if !address.is_root() || state.store.session(&address).await?.is_none() {
        return Ok(());
    }
    let revoked =
        crate::auth::revoke_session_tokens(&state.options.auth, &state.store, session_id).await;
    crate::audit::action(principal, "token_revoke", session_id, &revoked);
    revoked
}
