//! People across the boundary, on the consumer's side: the calls a paused remote child waits on
//! are listed by its caller's root under tree-unique ids (see `baton_core::store::RelayedCall`).
//! An answer to one is relayed to the child's producer (`submit`, with the producer's ids) before
//! anything is written here: the producer's refusal is answered as it is, and only an answer the
//! producer took is stored, so the root's `/pending` drops it. A `continue` resume of the root
//! whose relayed calls are all answered starts the follow of each such child
//! (`RemoteFollowWorkflow`), which resumes the child on its producer and, at its end, answers and
//! resumes its caller.

use super::temporal::start_remote_follow;
use crate::state::AppState;
use baton_activities::{
    io::{RemoteFollowInput, StepInput, ToolInput},
    producer::{CallError, Producer},
};
use baton_core::{
    ApiError, ErrorCode, Refusal,
    api::ResumeResponse,
    ids,
    store::{
        Continuation, PendingKind, RelayedAnswer, RelayedCall, SessionAddress, SessionState,
        Status, StopKind, TreeSession,
    },
    submit::{self, SubmitAnswer, SubmitRequest, SubmitStatus},
};

/// The answer to a relayed call, relayed and stored; `None` when the submit names no relayed
/// call (it is the API's own submit then).
pub(super) async fn relayed_submit(
    state: &AppState,
    request: &SubmitRequest,
) -> Result<Option<SubmitAnswer>, ApiError> {
    let id = request.tool_call_id();
    if !id.starts_with("bt_") || !ids::is_valid_session_id(request.session_id()) {
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
    let remote = agent
        .sub_agent(&via.tool_name)
        .and_then(|sub_agent| sub_agent.remote_agent())
        .ok_or_else(not_awaited)?;
    let accepted = match Producer::new(&state.http, remote).submit(&forwarded).await {
        Ok(accepted) => accepted,
        Err(CallError::Refused(body)) => {
            return Err(named_as_relayed(body.into_api_error(), &relayed, &root));
        }
        Err(CallError::Unavailable(reason)) => {
            return Err(ApiError::new(
                ErrorCode::RemoteUnavailable,
                format!("the answer could not be relayed to the remote sub-agent: {reason}"),
            ));
        }
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
        status: accepted.status,
        continuation,
    }))
}

/// After a stop of `address`'s session (of `agent_type`) closed `closed_calls` (id, tool):
/// passes it on to the remote child of each closed remote call, best effort. A child that waits
/// on a person (its calls relayed) or runs past its follower's window has no follower that
/// would.
pub(super) async fn pass_stop_on(
    state: &AppState,
    address: &SessionAddress,
    agent_type: &str,
    closed_calls: &[(String, String)],
    kind: StopKind,
) {
    let Some(agent) = state.registry.get(agent_type) else {
        return;
    };
    let action = match kind {
        StopKind::Interrupt => "interrupt",
        StopKind::Abort => "abort",
    };
    for (tool_call_id, tool) in closed_calls {
        let Some(remote) = agent.sub_agent(tool).and_then(|sub| sub.remote_agent()) else {
            continue;
        };
        let child = match state.store.remote_child_id(address, tool_call_id).await {
            Ok(child) => child,
            Err(error) => {
                tracing::warn!(session_id = %address.session_id, %error,
                    "the remote child's id could not be read; the stop is not passed on");
                continue;
            }
        };
        if let Err(error) = Producer::new(&state.http, remote)
            .stop(&child, action)
            .await
        {
            tracing::warn!(%child, %error, "passing a stop to a remote child failed");
        }
    }
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

/// A `continue` resume of `root`'s tree (as `tree` read it) where a session awaits a remote child
/// that relayed calls: refused while any call of the tree waits on a person
/// (`state_not_resumable`, naming them); else the follow of each such child is started, and its
/// workflow is the answer. `None` when no session of the tree awaits such a child.
pub(super) async fn resume_relaying_children(
    state: &AppState,
    root: &SessionState,
    tree: &[TreeSession],
) -> Result<Option<ResumeResponse>, ApiError> {
    let root_address = SessionAddress::root(&root.session_id);
    let mut follows = Vec::new();
    for member in tree.iter().filter(|member| member.is_suspended()) {
        let (address, Some(session)) = (&member.address, &member.state) else {
            continue;
        };
        for group in &member.relayed {
            let Some(via) = member
                .pending
                .iter()
                .find(|call| call.tool_call_id == group.via_call_id)
            else {
                continue;
            };
            let Some((first, _)) = group.calls.first() else {
                continue;
            };
            if member.answers.contains_key(&group.via_call_id) {
                continue;
            }
            let workflow_id = format!(
                "remote_follow__{}__{}",
                address.session_id, first.call.tool_call_id
            );
            let input = RemoteFollowInput {
                call: ToolInput {
                    step: StepInput {
                        address: address.clone(),
                        agent_type: session.agent_type.clone(),
                        run_id: session.run_id.clone(),
                        stream_id: session.stream_id.clone(),
                        step: via.step,
                        drain_first: false,
                    },
                    tool_call_id: group.via_call_id.clone(),
                },
                policy: state.policy.clone(),
                resume_child: true,
            };
            follows.push((workflow_id, input));
        }
    }
    if follows.is_empty() {
        return Ok(None);
    }
    let open: Vec<String> = state
        .store
        .person_calls(&root_address, true)
        .await?
        .into_iter()
        .map(|person| person.call.tool_call_id)
        .collect();
    if !open.is_empty() {
        return Err(super::tree::calls_awaited(open));
    }
    let mut first_follow = None;
    for (workflow_id, input) in follows {
        start_remote_follow(state, &workflow_id, input).await?;
        tracing::info!(session_id = %root.session_id, %workflow_id, "a remote child's follow started");
        first_follow.get_or_insert(workflow_id);
    }
    Ok(Some(ResumeResponse {
        session_id: root.session_id.clone(),
        run_id: root.run_id.clone(),
        workflow_id: first_follow,
        status: Status::Active,
    }))
}

/// The producer's refusal of a relayed answer as the client that sent it reads it: the code and
/// its details as they are, but every id of the producer's (the call, its approval, the child
/// session) replaced by the one the consumer's tree shows (the relayed call, its approval id,
/// the root), in the details and in the message.
fn named_as_relayed(mut error: ApiError, relayed: &RelayedCall, root: &SessionAddress) -> ApiError {
    let mut names = vec![
        (
            relayed.producer_call_id.clone(),
            relayed.call.tool_call_id.clone(),
        ),
        (relayed.child_session_id.clone(), root.session_id.clone()),
    ];
    if let (Some(theirs), Some(ours)) = (&relayed.producer_approval_id, &relayed.call.approval_id) {
        // The approval id first: it contains the call's id.
        names.insert(0, (theirs.clone(), ours.clone()));
    }
    let rename = |text: &str| {
        names
            .iter()
            .filter(|(theirs, _)| !theirs.is_empty())
            .fold(text.to_owned(), |text, (theirs, ours)| {
                text.replace(theirs, ours)
            })
    };
    fn each_string(value: &mut serde_json::Value, rename: &dyn Fn(&str) -> String) {
        match value {
            serde_json::Value::String(text) => *text = rename(text),
            serde_json::Value::Array(items) => {
                items.iter_mut().for_each(|item| each_string(item, rename));
            }
            serde_json::Value::Object(fields) => {
                fields
                    .values_mut()
                    .for_each(|item| each_string(item, rename));
            }
            _ => {}
        }
    }
    error.error = rename(&error.error);
    error
        .details
        .values_mut()
        .for_each(|value| each_string(value, &rename));
    error
}
