//! Route a submit (a hook of `ops::submit`): an answer to a call a paused remote child waits
//! on, listed by its caller's root under a relayed id (`subagent::relayed_call_id`, see
//! `baton_core::store::RelayedCall`), is relayed to the child's producer with the producer's
//! ids before anything is written here. The producer's refusal is answered with its code and
//! typed details, its ids renamed to the ones the root lists; only an answer the producer took
//! is stored, so the root's `/pending` drops it. An A2A child's answer goes as a message on its
//! task (`a2a_relay.rs`).

use crate::state::AppState;
use baton_core::{
    ApiError, ErrorCode, Refusal, ids,
    store::{Continuation, PendingKind, RelayedAnswer, RelayedCall, SessionAddress, Status},
    subagent::{self, SubAgent, Transport},
    submit::{self, SubmitAnswer, SubmitRequest, SubmitStatus},
};
use baton_remote::{CallError, Producer};

/// The answer to a relayed call, relayed and stored; `None` when the submit names no relayed
/// call (it is the API's own submit then).
pub(crate) async fn route_submit(
    state: &AppState,
    request: &SubmitRequest,
) -> Result<Option<SubmitAnswer>, ApiError> {
    let id = request.tool_call_id();
    if !subagent::is_relayed_call_id(id) || !ids::is_valid_session_id(request.session_id()) {
        return Ok(None);
    }
    let root = SessionAddress::root(ids::root_of(request.session_id()));
    let Some((owner, relayed)) = state.store.relayed_call(&root, id).await? else {
        return Ok(None);
    };
    // The root's submit token first, as for a local answer: past its limit nothing is relayed.
    submit::take_submit_token(&state.store, &root, state.options.submits_per_minute).await?;
    let not_awaited = || {
        ApiError::new(
            ErrorCode::UnknownToolCall,
            format!("no pending tool call {id} in session {}", root.session_id),
        )
        .with(Refusal::NoPendingCall)
    };
    let owner_state = state
        .store
        .session(&owner)
        .await?
        .filter(|session| session.status == Status::SuspendedClientTool)
        .ok_or_else(not_awaited)?;
    let group = state
        .store
        .relayed_groups(&owner)
        .await?
        .into_iter()
        .find(|group| group.via_call_id == relayed.via_call_id)
        .ok_or_else(not_awaited)?;
    let answered = group
        .calls
        .iter()
        .any(|(call, answered)| call.call.tool_call_id == id && *answered);
    let via = state
        .store
        .pending_calls(&owner)
        .await?
        .into_iter()
        .find(|call| call.tool_call_id == relayed.via_call_id)
        .ok_or_else(not_awaited)?;
    let forwarded = producer_request(request, &relayed)?;
    if answered {
        return Ok(Some(SubmitAnswer {
            status: SubmitStatus::AlreadyCompleted,
            continuation: continuation(state, &root, 0).await?,
        }));
    }
    let agent = state.registry.get(&owner_state.agent_type).ok_or_else(|| {
        ApiError::new(
            ErrorCode::UnknownAgentType,
            format!("this server has no agent type {:?}", owner_state.agent_type),
        )
    })?;
    let status = match agent
        .sub_agent(&via.tool_name)
        .map(SubAgent::declared_transport)
    {
        Some(Transport::Remote(remote)) => {
            match Producer::new(&state.http, remote).submit(&forwarded).await {
                Ok(accepted) => accepted.status,
                Err(CallError::Refused(body)) => {
                    return Err(named_as_relayed(body.into_api_error(), &relayed));
                }
                Err(CallError::Unavailable(reason)) => {
                    return Err(ApiError::new(
                        ErrorCode::RemoteUnavailable,
                        format!(
                            "the answer could not be relayed to the remote sub-agent: {reason}"
                        ),
                    ));
                }
            }
        }
        Some(Transport::A2a(a2a)) => {
            super::a2a_relay::relay_answer(state, a2a, request, &forwarded, &relayed).await?
        }
        Some(Transport::Local) | None => return Err(not_awaited()),
    };
    let answer = serde_json::to_string(request)
        .map_err(|error| ApiError::new(ErrorCode::Internal, error.to_string()))?;
    let stored = state
        .store
        .store_relayed_answer(
            &owner,
            &owner_state.run_id,
            &relayed.via_call_id,
            id,
            &answer,
        )
        .await?;
    let continuation = match stored {
        RelayedAnswer::Accepted { open } | RelayedAnswer::AlreadyCompleted { open } => {
            continuation(state, &root, open).await?
        }
        // The producer took it, but the caller moved on meanwhile (a stop, another resume).
        RelayedAnswer::UnknownCall | RelayedAnswer::NotAwaited => Continuation::Consumed,
    };
    tracing::info!(
        session_id = %owner.session_id,
        tool_call_id = %id,
        child = %relayed.child_session_id,
        "an answer is relayed to a remote sub-agent"
    );
    Ok(Some(SubmitAnswer {
        status,
        continuation,
    }))
}

/// The submit as the producer takes it: its session, call and approval ids; an answer of the
/// wrong kind, or naming another approval, refused here (nothing is sent).
fn producer_request(
    request: &SubmitRequest,
    relayed: &RelayedCall,
) -> Result<SubmitRequest, ApiError> {
    let id = &relayed.call.tool_call_id;
    match (request, relayed.call.kind) {
        (SubmitRequest::ClientToolResult(submit), PendingKind::Client) => {
            Ok(SubmitRequest::tool_result(
                &relayed.child_session_id,
                &relayed.producer_call_id,
                submit.outcome.clone(),
            ))
        }
        (SubmitRequest::ApprovalResponse(submit), PendingKind::Approval) => {
            if relayed.call.approval_id.as_deref() != Some(submit.approval_id.as_str()) {
                return Err(ApiError::new(
                    ErrorCode::UnknownToolCall,
                    format!("no pending approval {}", submit.approval_id),
                )
                .with(Refusal::NoPendingCall));
            }
            Ok(SubmitRequest::approval(
                &relayed.child_session_id,
                &relayed.producer_call_id,
                relayed.producer_approval_id.as_deref().unwrap_or_default(),
                submit.decision.clone(),
            ))
        }
        (_, kind) => {
            let expected = match kind {
                PendingKind::Client => "client-tool-result",
                _ => "approval-response",
            };
            Err(ApiError::new(
                ErrorCode::ValidationError,
                format!("tool call {id} awaits a {expected}"),
            ))
        }
    }
}

/// What a stored relayed answer means for the tree: the caller resumes once the child's relayed
/// calls (`open` of them left) and every other call of the tree are answered.
async fn continuation(
    state: &AppState,
    root: &SessionAddress,
    open: u64,
) -> Result<Continuation, ApiError> {
    if open > 0 || !state.store.person_calls(root, true).await?.is_empty() {
        return Ok(Continuation::AwaitingBatch);
    }
    Ok(Continuation::CallerResumes)
}

/// The producer's refusal of a relayed answer as the client that sent it reads it: the
/// producer's code, and its typed details with the producer's call id renamed to the relayed
/// call's. The producer's message is not passed on: it names calls and sessions of another
/// service.
pub(super) fn named_as_relayed(theirs: ApiError, relayed: &RelayedCall) -> ApiError {
    let ours = &relayed.call.tool_call_id;
    let mut error = ApiError::new(
        theirs.code,
        format!(
            "the remote sub-agent refused the answer to tool call {ours}: {}",
            theirs.code.as_str()
        ),
    );
    if let Some(refusal) = theirs.refusal() {
        error = error.with(refusal.with_calls_renamed(|id| {
            if id == relayed.producer_call_id {
                ours.clone()
            } else {
                id.to_owned()
            }
        }));
    }
    error.retryable &= theirs.retryable;
    error
}
