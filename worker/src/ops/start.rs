//! Starting a session: the session-id policy, the checks on the request, the first run in Redis
//! and its workflow.

use super::{
    checked_address,
    temporal::{start_run_workflow, workflow_exists},
};
use crate::{audit, auth::Principal, state::AppState};
use baton_activities::io::RunInput;
use baton_core::{
    ApiError, ErrorCode, Message, Refusal,
    api::{StartRequest, StartResponse},
    escape::bounded,
    ids,
    message::UserExtras,
    store::{NewSession, SessionAddress, SessionOwner},
};

/// Largest user message `/start` accepts, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// `/start` (both transports): the principal may start the agent type (its `userId` fixed by a
/// user token), a client-chosen session id only where the server allows it, then the session (a
/// token of the principal's start bucket spent just before it is written), and with built-in
/// auth the new session's token; audited.
pub async fn checked_start(
    state: &AppState,
    principal: &Principal,
    mut request: StartRequest,
) -> Result<StartResponse, ApiError> {
    let started = async {
        request.user_id = principal.may_start(&request.agent, request.user_id.take())?;
        if request.session_id.is_some() && !state.options.allow_client_session_ids {
            return Err(ApiError::new(
                ErrorCode::ValidationError,
                "sessionId is chosen by the server; this server does not take one from clients",
            ));
        }
        let subject = principal.subject();
        let mut started =
            start_spending(state, request, UserExtras::default(), None, Some(&subject)).await?;
        started.token = state.options.auth.token_for(&started.session_id);
        Ok(started)
    }
    .await;
    audit::started(principal, &started);
    started
}

/// A chat's first message (the chat route): the principal may start the agent type, then the
/// session under the chat's id with what the client sent beside the text (a token of the
/// principal's start bucket spent just before it is written); audited.
pub async fn chat_start(
    state: &AppState,
    principal: &Principal,
    mut request: StartRequest,
    extras: UserExtras,
) -> Result<StartResponse, ApiError> {
    let started = async {
        request.user_id = principal.may_start(&request.agent, request.user_id.take())?;
        let subject = principal.subject();
        start_spending(state, request, extras, None, Some(&subject)).await
    }
    .await;
    audit::started(principal, &started);
    started
}

/// Starts a session a service owns (the producer mount's start; a service's starts spend no
/// per-subject bucket: its callers' roots spend theirs).
pub(crate) async fn start_session_owned(
    state: &AppState,
    request: StartRequest,
    owner: &SessionOwner,
) -> Result<StartResponse, ApiError> {
    start_spending(state, request, UserExtras::default(), Some(owner), None).await
}

/// Starts a session: checks the request, writes the session and its first run to Redis (with
/// the server's stream retention), then starts the run's workflow; a refused request writes
/// nothing. Owned by `owner` (when given), spending a token of `subject`'s start bucket (when
/// given) after every check and before the first write: a refused request spends nothing, a
/// refused spend writes nothing.
async fn start_spending(
    state: &AppState,
    request: StartRequest,
    extras: UserExtras,
    owner: Option<&SessionOwner>,
    subject: Option<&str>,
) -> Result<StartResponse, ApiError> {
    let agent = state.registry.get(&request.agent).ok_or_else(|| {
        // The name and the server's list only in verbose answers: a caller is not told which
        // agents exist, nor sees its own 10,000 characters again.
        let refused = ApiError::new(ErrorCode::UnknownAgentType, "unknown agent type");
        if !state.options.verbose_errors {
            return refused;
        }
        let known: Vec<&str> = state.registry.agent_types().collect();
        refused.with(Refusal::Detail {
            details: format!(
                "this server has: {}; not \"{}\"",
                known.join(", "),
                bounded(&request.agent)
            ),
        })
    })?;
    let meta = request.meta();
    meta.check()?;
    let user_message = checked_message_beside(request.message, &extras)?;
    let custom_state = seeded_state(agent, request.state.as_ref())?;

    let chosen = request.session_id.is_some();
    let session_id = match request.session_id {
        Some(chosen) => {
            if checked_address(&chosen)?.session_id != ids::root_of(&chosen) {
                return Err(ApiError::new(
                    ErrorCode::ValidationError,
                    "a chosen sessionId may not have the form of a sub-agent's (<root>.<hex>)",
                ));
            }
            chosen
        }
        None => ids::new_session_id(),
    };
    let run_id = ids::new_run_id();
    let stream_id = ids::new_session_id();
    let address = SessionAddress::root(&session_id);
    let workflow_id = ids::first_run_workflow_id(agent.name(), &session_id);
    if chosen && workflow_exists(state, &workflow_id).await? {
        // An earlier session of this id (its Redis state gone or under another prefix): its
        // workflow id is taken, so refuse before writing anything.
        return Err(ApiError::new(
            ErrorCode::SessionAlreadyExists,
            format!("session {session_id} was used before (its workflow {workflow_id} exists)"),
        ));
    }
    if let Some(subject) = subject {
        super::limits::spend_start(state, subject).await?;
    }
    let mut messages = first_log(agent, &user_message);
    if let Some(first) = messages.last_mut() {
        *first = Message::user_with(user_message, extras);
    }
    // The one place the server's stream retention reaches Redis: the session records it.
    state
        .store
        .create_session_with(
            NewSession {
                address: &address,
                agent_type: agent.name(),
                run_id: &run_id,
                stream_id: &stream_id,
                workflow_id: &workflow_id,
                messages: &messages,
                max_chunks: state.options.stream_max_chunks,
            },
            custom_state.as_ref(),
            &meta,
            owner,
        )
        .await?;

    let input = RunInput::first(
        address,
        agent.name(),
        &run_id,
        &stream_id,
        agent.max_steps(),
        state.policy.clone(),
    );
    start_run_workflow(state, &workflow_id, input).await?;
    tracing::info!(%session_id, agent = agent.name(), %workflow_id, "session started");
    Ok(StartResponse {
        session_id,
        run_id,
        workflow_id,
        stream_id,
        token: None,
    })
}

/// The log a session of `agent` starts with: its system prompt (if any), then the user's
/// message.
pub fn first_log(agent: &baton_core::Agent, user_message: &str) -> Vec<Message> {
    let mut messages = Vec::with_capacity(2);
    if !agent.system_prompt().is_empty() {
        messages.push(Message::system(agent.system_prompt()));
    }
    messages.push(Message::user(user_message));
    messages
}

/// The custom state a session of `agent` starts with: its defaults overridden by the request's
/// fields, checked against its schema; `None` for an agent without state (which refuses one).
fn seeded_state(
    agent: &baton_core::Agent,
    initial: Option<&serde_json::Value>,
) -> Result<Option<serde_json::Value>, ApiError> {
    let Some(schema) = agent.state_schema() else {
        return match initial {
            None => Ok(None),
            Some(_) => Err(ApiError::new(
                ErrorCode::InvalidState,
                format!("agent {:?} declares no custom state", agent.name()),
            )),
        };
    };
    schema
        .seed(initial)
        .map(Some)
        .map_err(|e| ApiError::new(ErrorCode::InvalidState, format!("state: {e}")))
}

/// A user message as `/start` and `/resume` accept it: not blank (unless it carries files, as
/// a chat message may), at most [`MAX_MESSAGE_BYTES`].
pub(super) fn checked_message_beside(
    message: String,
    extras: &UserExtras,
) -> Result<String, ApiError> {
    if message.trim().is_empty() && extras.files.is_empty() {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "message must not be empty",
        ));
    }
    if message.len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!(
                "message is {} bytes; the limit is {MAX_MESSAGE_BYTES}",
                message.len()
            ),
        ));
    }
    Ok(message)
}
