//! The producer mount's start: a session of the caller's choosing, started once. A start for a
//! session that exists, whatever its status, answers `ALREADY_RUNNING` with its `streamId` and
//! starts nothing, so a consumer's retried start attaches to the session its first attempt made.
//! A start's callback is registered on the session either way (a retry that lost the first
//! answer still gets its callback), and the worker's callback sweep delivers it.
//!
//! The session belongs to the calling service and the caller session the start names
//! ([`SessionOwner`], written with the session): only that service (and operators) act on its
//! tree, a producer's user never does, and an attach is taken only from the same service and
//! caller, so a session someone else made under a guessed id is never attached to.

use super::{no_session, start::start_session_owned};
use crate::{audit, auth::Principal, state::AppState};
use baton_core::{
    ApiError, ErrorCode, Refusal,
    api::StartRequest,
    remote,
    store::{SessionAddress, SessionOwner, SessionState},
};

/// The mount's `start` (audited as `start`, an attach as `attach`): starts `agent_type`'s
/// session `request.session_id` owned by the calling service, or refuses `ALREADY_RUNNING` (with
/// the session's `streamId`) when it exists and is that caller's; `NOT_FOUND` when it exists as
/// another agent type's, `session_mismatch` when another caller started it. The request is
/// checked first: a refused start writes nothing. The caller is an authenticated service
/// principal: the public `/start`'s policy on chosen ids does not apply here.
pub async fn start_or_attach(
    state: &AppState,
    principal: &Principal,
    agent_type: &str,
    request: &remote::StartRequest,
) -> Result<remote::StartResponse, ApiError> {
    let started = start_owned(state, principal, agent_type, request).await;
    let action = match &started {
        Err(error) if error.code == ErrorCode::AlreadyRunning => "attach",
        _ => "start",
    };
    audit::action(principal, action, &request.session_id, &started);
    started
}

/// The owner a start through the mount records: the service (an operator key's holder as
/// `operator:<name>`) and the caller's session.
fn owner_of(
    principal: &Principal,
    request: &remote::StartRequest,
) -> Result<SessionOwner, ApiError> {
    principal.may_start_remote()?;
    let service = match principal {
        Principal::Service { name } => name.clone(),
        other => other.name(),
    };
    if let Some(caller) = &request.caller_session_id
        && !baton_core::ids::is_valid_session_id(caller)
    {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "callerSessionId is not a session id",
        ));
    }
    Ok(SessionOwner {
        service,
        caller_session_id: request.caller_session_id.clone(),
    })
}

async fn start_owned(
    state: &AppState,
    principal: &Principal,
    agent_type: &str,
    request: &remote::StartRequest,
) -> Result<remote::StartResponse, ApiError> {
    let owner = owner_of(principal, request)?;
    let message = request.first_message()?;
    if let Some(callback) = &request.callback {
        callback.check()?;
    }
    super::check_callback_host(&state.options.callback_hosts, request.callback.as_ref())?;
    let address = SessionAddress::root(&request.session_id);
    if let Some(existing) = existing(state, &address, &request.session_id).await? {
        return Err(attached(state, &existing, &owner, agent_type, request).await);
    }
    let start = StartRequest {
        session_id: Some(request.session_id.clone()),
        state: request.state.clone(),
        user_id: request.user_id.clone(),
        tags: request.tags.clone(),
        metadata: request.metadata.clone(),
        ..StartRequest::new(agent_type, message)
    };
    match start_session_owned(state, start, &owner).await {
        Ok(started) => {
            register_callback(state, &address, request).await?;
            Ok(remote::StartResponse {
                session_id: started.session_id,
                stream_id: started.stream_id,
                run_id: started.run_id,
            })
        }
        // Another start of the same id won the create script between the read and the write.
        Err(error) if error.code == ErrorCode::SessionAlreadyExists => {
            match existing(state, &address, &request.session_id).await? {
                Some(existing) => {
                    Err(attached(state, &existing, &owner, agent_type, request).await)
                }
                None => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}

/// The refusal of a start whose session exists, its callback registered first when the session
/// is of the route's type and the caller's own.
async fn attached(
    state: &AppState,
    existing: &SessionState,
    owner: &SessionOwner,
    agent_type: &str,
    request: &remote::StartRequest,
) -> ApiError {
    let refusal = attach(existing, agent_type);
    if refusal.code != ErrorCode::AlreadyRunning {
        return refusal;
    }
    if existing.owner.as_ref() != Some(owner) {
        return ApiError::new(
            ErrorCode::SessionMismatch,
            "this session was not started by this caller; a start attaches only to its own",
        );
    }
    let address = SessionAddress::root(&existing.session_id);
    match register_callback(state, &address, request).await {
        Ok(()) => refusal,
        Err(error) => error,
    }
}

/// Registers the start's callback, if it has one.
async fn register_callback(
    state: &AppState,
    address: &SessionAddress,
    request: &remote::StartRequest,
) -> Result<(), ApiError> {
    if let Some(callback) = &request.callback {
        state
            .store
            .register_callback(address, &callback.url, &callback.token)
            .await?;
    }
    Ok(())
}

/// Puts a session whose callback is registered back in the callback index (a mount's resume
/// starts a new turn, whose end is called back too).
pub async fn reindex_callback(state: &AppState, session_id: &str) -> Result<(), ApiError> {
    let address = SessionAddress::root(session_id);
    if state.store.callback(&address).await?.is_some() {
        state.store.index_callback(&address, 0).await?;
    }
    Ok(())
}

/// The session, if the id is well-formed (a root's) and it exists.
async fn existing(
    state: &AppState,
    address: &SessionAddress,
    session_id: &str,
) -> Result<Option<SessionState>, ApiError> {
    if !baton_core::ids::is_valid_name(session_id) {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "sessionId must be 1 to 64 characters of letters, digits, - and _ (no __)",
        ));
    }
    Ok(state.store.session(address).await?)
}

/// The refusal of a start whose session exists: attach by its stream, or `NOT_FOUND` when the
/// route's agent type is not the session's.
fn attach(existing: &SessionState, agent_type: &str) -> ApiError {
    if existing.agent_type != agent_type {
        let mut missing = no_session(&existing.session_id);
        missing.error = format!(
            "no session {} of agent type {agent_type:?}",
            existing.session_id
        );
        return missing;
    }
    ApiError::new(
        ErrorCode::AlreadyRunning,
        format!(
            "session {} exists ({}); attach to its stream",
            existing.session_id,
            <&str>::from(remote::Status::of(existing.status))
        ),
    )
    .with(Refusal::AlreadyRunning {
        stream_id: existing.stream_id.clone(),
    })
}
