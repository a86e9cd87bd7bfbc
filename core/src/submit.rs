//! Submitting a client's answer to a pending tool call: checked in Rust (shape, size, output
//! schema), then stored by one Lua script. Submitting is a durable write and nothing else; a
//! resume continues the run.

use crate::{
    AgentRegistry, ApiError, ErrorCode,
    message::ToolOutcome,
    observe::{self, CallIds, ClientCallEvent},
    store::{
        self, Answer, PendingKind, SessionAddress, Store, StoredAnswer, SubmitOutcome, now_ms,
    },
};

pub use baton_wire::submit::{
    CLIENT_TOOL_ERROR, INVALID_ARGUMENTS_MESSAGE, INVALID_RESULT_MESSAGE, INVALID_SUBMIT_MESSAGE,
    SubmitAnswer, SubmitRequest, SubmitStatus,
};

/// Size limits of submits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubmitLimits {
    /// Largest answer: the byte length of the result's JSON.
    pub max_result_bytes: usize,
}

impl Default for SubmitLimits {
    fn default() -> Self {
        Self {
            max_result_bytes: 1 << 20,
        }
    }
}

impl SubmitLimits {
    /// The request-body guard, derived from the result limit (never a second limit).
    pub fn request_body_cap(&self) -> usize {
        self.max_result_bytes.saturating_mul(4)
    }
}

/// Stores a client's answer. The call is found through the root session's ownership map; a
/// result is checked against the owning tool's output schema (errors skip it). Nothing is written
/// on any refusal.
/// The submit is logged as a client-call event: `client_call.submitted` when the answer was
/// stored, `client_call.refused` with the error code (or `run_stopped`) as the reason otherwise.
pub async fn submit_tool_result(
    store: &Store,
    registry: &AgentRegistry,
    limits: SubmitLimits,
    request: SubmitRequest,
    verbose: bool,
) -> Result<SubmitAnswer, ApiError> {
    let session_id = request.session_id().to_owned();
    let tool_call_id = request.tool_call_id().to_owned();
    let mut seen = SeenCall::default();
    let answer = store_submitted(store, registry, limits, request, verbose, &mut seen).await;
    let ids = CallIds {
        session_id: seen.owner_id.as_deref().unwrap_or(&session_id),
        root_session_id: &session_id,
        run_id: &seen.run_id,
        tool_call_id: &tool_call_id,
        tool: &seen.tool,
    };
    match &answer {
        Ok(answer) if answer.status == SubmitStatus::Accepted => {
            observe::client_call(ClientCallEvent::Submitted, ids, None, None);
        }
        Ok(_) => {}
        Err(error) => {
            let reason = error
                .details
                .get("reason")
                .and_then(|reason| reason.as_str())
                .unwrap_or(error.code.as_str());
            observe::client_call(ClientCallEvent::Refused, ids, Some(reason), None);
        }
    }
    answer
}

/// What a submit learnt of the call it answers, for its log event (empty until read).
#[derive(Debug, Default)]
struct SeenCall {
    owner_id: Option<String>,
    tool: String,
    run_id: String,
}

async fn store_submitted(
    store: &Store,
    registry: &AgentRegistry,
    limits: SubmitLimits,
    request: SubmitRequest,
    verbose: bool,
    seen: &mut SeenCall,
) -> Result<SubmitAnswer, ApiError> {
    let session_id = request.session_id().to_owned();
    let tool_call_id = request.tool_call_id().to_owned();
    let payload = match &request {
        SubmitRequest::ClientToolResult(submit) => match &submit.outcome {
            ToolOutcome::Result(result) => Some(result),
            ToolOutcome::Error(_) => None,
        },
        SubmitRequest::ApprovalResponse(submit) => submit.decision.arguments.as_ref(),
    };
    if let Some(payload) = payload {
        let size = serde_json::to_vec(payload).map_or(usize::MAX, |bytes| bytes.len());
        if size > limits.max_result_bytes {
            return Err(payload_too_large(
                "tool_result",
                limits.max_result_bytes,
                size,
            ));
        }
    }
    let owner_id = store
        .call_owner(&session_id, &tool_call_id)
        .await
        .map_err(store_unavailable)?
        .unwrap_or_else(|| session_id.clone());
    seen.owner_id = Some(owner_id.clone());
    let owner = SessionAddress {
        root_session_id: session_id.clone(),
        session_id: owner_id,
    };
    check_against_pending(store, registry, &owner, &request, verbose, seen).await?;
    let approval_id = match &request {
        SubmitRequest::ApprovalResponse(submit) => Some(submit.approval_id.clone()),
        SubmitRequest::ClientToolResult(_) => None,
    };
    let answer = StoredAnswer {
        answer: match request {
            SubmitRequest::ClientToolResult(submit) => Answer::Outcome {
                outcome: submit.outcome,
            },
            SubmitRequest::ApprovalResponse(submit) => Answer::Approval(submit.decision),
        },
        submitted_at: now_ms(),
    };
    let stored = store
        .submit_answer(&owner, &tool_call_id, approval_id.as_deref(), &answer)
        .await
        .map_err(store_unavailable)?;
    match stored {
        SubmitOutcome::Accepted(continuation) => Ok(SubmitAnswer {
            status: SubmitStatus::Accepted,
            continuation,
        }),
        SubmitOutcome::AlreadyCompleted(continuation) => Ok(SubmitAnswer {
            status: SubmitStatus::AlreadyCompleted,
            continuation,
        }),
        SubmitOutcome::UnknownToolCall => Err(ApiError::new(
            ErrorCode::UnknownToolCall,
            format!("no pending tool call {tool_call_id} in session {session_id}"),
        )
        .with("status", "unknown_tool_call")),
        SubmitOutcome::RunStopped => Err(ApiError::new(
            ErrorCode::UnknownToolCall,
            format!(
                "tool call {tool_call_id} belongs to a stopped run; send a new message to go on"
            ),
        )
        .with("status", "unknown_tool_call")
        .with("reason", "run_stopped")),
        SubmitOutcome::UnknownApproval => Err(ApiError::new(
            ErrorCode::UnknownToolCall,
            format!(
                "no pending approval {}",
                approval_id.as_deref().unwrap_or_default()
            ),
        )
        .with("status", "unknown_tool_call")),
        SubmitOutcome::RunSuperseded => Err(ApiError::new(
            ErrorCode::StateRunSuperseded,
            "the call's run was superseded by another run; nothing was stored",
        )),
    }
}

/// Checks an answer against the call it answers: the right kind for the call, the approval id,
/// a result against the client tool's output schema, edited arguments against the tool's input
/// schema. A call that is not pending is left to the script, which answers it.
async fn check_against_pending(
    store: &Store,
    registry: &AgentRegistry,
    owner: &SessionAddress,
    request: &SubmitRequest,
    verbose: bool,
    seen: &mut SeenCall,
) -> Result<(), ApiError> {
    let tool_call_id = request.tool_call_id();
    let Some(call) = store
        .pending_call(owner, tool_call_id)
        .await
        .map_err(store_unavailable)?
    else {
        return Ok(());
    };
    seen.tool = call.tool_name.clone();
    let Some(state) = store.session(owner).await.map_err(store_unavailable)? else {
        return Ok(());
    };
    seen.run_id = state.run_id.clone();
    let agent = registry.get(&state.agent_type);
    let with_details = |error: ApiError, detail: String| {
        if verbose {
            error.with("details", detail)
        } else {
            error
        }
    };
    match (request, call.kind) {
        (_, PendingKind::SubAgent) => {
            return Err(ApiError::new(
                ErrorCode::UnknownToolCall,
                format!("tool call {tool_call_id} awaits a sub-agent, not a client"),
            )
            .with("status", "unknown_tool_call"));
        }
        (SubmitRequest::ClientToolResult(submit), PendingKind::Client) => {
            let tool = agent.and_then(|agent| agent.client_tool(&call.tool_name));
            if let (ToolOutcome::Result(result), Some(tool)) = (&submit.outcome, tool) {
                tool.check_output(result).map_err(|detail| {
                    let error = ApiError::new(ErrorCode::InvalidResult, INVALID_RESULT_MESSAGE)
                        .with("toolName", call.tool_name.clone())
                        .with("toolCallId", tool_call_id);
                    with_details(error, detail)
                })?;
            }
        }
        // The approval id is compared by the script that stores the answer.
        (SubmitRequest::ApprovalResponse(submit), PendingKind::Approval) => {
            let tool = agent.and_then(|agent| agent.tool(&call.tool_name));
            if let (Some(arguments), Some(tool)) = (&submit.decision.arguments, tool) {
                tool.check_input(arguments).map_err(|error| {
                    with_details(
                        ApiError::new(ErrorCode::ValidationError, INVALID_ARGUMENTS_MESSAGE)
                            .with("toolName", call.tool_name.clone())
                            .with("toolCallId", tool_call_id),
                        error.message,
                    )
                })?;
            }
        }
        (_, kind) => {
            let expected = match kind {
                PendingKind::Client => "client-tool-result",
                PendingKind::Approval | PendingKind::SubAgent => "approval-response",
            };
            return Err(ApiError::new(
                ErrorCode::ValidationError,
                format!("tool call {tool_call_id} awaits a {expected}"),
            ));
        }
    }
    Ok(())
}

/// The typed refusal of an answer or body over the limit.
pub fn payload_too_large(cause: &str, limit: usize, size: usize) -> ApiError {
    ApiError::new(
        ErrorCode::ValidationPayloadTooLarge,
        format!(
            "the {} is {size} bytes; the limit is {limit}",
            cause.replace('_', " ")
        ),
    )
    .with("cause", cause)
    .with("limitBytes", limit)
    .with("sizeBytes", size)
}

fn store_unavailable(error: store::Error) -> ApiError {
    tracing::error!(%error, "submit: store failed");
    ApiError::new(ErrorCode::StoreUnavailable, "the store is unavailable")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        let too_large = payload_too_large("tool_result", 10, 12);
        assert_eq!(too_large.code.presentation().http_status, 413);
        assert_eq!(too_large.details["cause"], "tool_result");
        assert_eq!(SubmitLimits::default().request_body_cap(), 4 << 20);
    }
}
