//! What every mount route checks before its operation: the caller (the server's auth, as an
//! envelope), the route's agent type (on the mount's allowlist and served here), the session
//! (of that type), and a JSON body under the API's guards.

use super::{
    MountState,
    error::{MountError, not_found},
};
use crate::{auth::Principal, ops};
use axum::{
    body::Body,
    extract::{FromRequestParts, Request, State},
    http::{HeaderMap, request::Parts},
    middleware::Next,
    response::{IntoResponse, Response},
};
use baton_core::store::SessionState;
use serde::de::DeserializeOwned;

/// Puts the request's principal in its extensions, or answers the 401 envelope: every mount
/// route, before anything is read.
pub(super) async fn authenticate(
    State(state): State<MountState>,
    mut request: Request,
    next: Next,
) -> Response {
    match crate::http::authenticated(&state.app, &mut request, crate::auth::Surface::Mount).await {
        Ok(()) => next.run(request).await,
        Err(error) => MountError::from(error).into_response(),
    }
}

impl MountState {
    /// Refuses (`NOT_FOUND`) an agent type off the mount's allowlist or not served here.
    pub(super) fn served(&self, agent_type: &str) -> Result<(), MountError> {
        if self.mount.allows(agent_type) && self.app.registry.get(agent_type).is_some() {
            Ok(())
        } else {
            Err(not_found(format!(
                "no agent type \"{}\" on this mount",
                baton_core::escape::bounded(agent_type)
            )))
        }
    }

    /// The session the request names, once the caller may act on it (`ops::authorize`, before
    /// anything tells whether it exists), if it is of the route's agent type: `NOT_FOUND` for an
    /// unknown session or one of another type (which the route does not reach).
    pub(super) async fn session(
        &self,
        principal: &Principal,
        agent_type: &str,
        session_id: &str,
    ) -> Result<SessionState, MountError> {
        self.served(agent_type)?;
        let session = ops::authorized_session(&self.app, principal, "mount", session_id).await?;
        of_type(session, agent_type)
    }
}

/// The session, if it is of `agent_type`.
pub(super) fn of_type(session: SessionState, agent_type: &str) -> Result<SessionState, MountError> {
    if session.agent_type == agent_type {
        Ok(session)
    } else {
        Err(not_found(format!(
            "no session {} of agent type {agent_type:?}",
            session.session_id
        )))
    }
}

/// A JSON body under the API's guards (length, size cap, depth), decoded strictly.
pub(super) async fn json_body<T: DeserializeOwned>(
    state: &MountState,
    headers: &HeaderMap,
    body: Body,
) -> Result<T, MountError> {
    let options = &state.app.options;
    let cap = options.submit_limits.request_body_cap();
    Ok(crate::http::json_body(headers, body, cap, options.verbose_errors).await?)
}

/// A query string whose rejection is the mount's `validation_error` envelope.
pub(super) struct MountQuery<T>(pub(super) T);

impl<T: DeserializeOwned> FromRequestParts<MountState> for MountQuery<T> {
    type Rejection = MountError;

    async fn from_request_parts(parts: &mut Parts, state: &MountState) -> Result<Self, MountError> {
        let verbose = state.app.options.verbose_errors;
        Ok(Self(crate::http::query(parts, verbose)?))
    }
}
