//! Submitting a client's answer to a pending tool call: checked in Rust (shape, size, output
//! schema), then stored by one Lua script. Submitting is a durable write and nothing else; a
//! resume continues the run.

use crate::{
    AgentRegistry, ApiError, ErrorCode,
    message::ToolOutcome,
    store::{
        self, Answer, ApprovalDecision, PendingKind, SessionAddress, Store, StoredAnswer,
        SubmitOutcome, now_ms,
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

/// A checked submit.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// Always the root session of the tree.
    pub session_id: String,
    pub tool_call_id: String,
    pub answer: SubmittedAnswer,
}

/// What a submit answers.
#[derive(Debug, Clone, PartialEq)]
pub enum SubmittedAnswer {
    /// `client-tool-result`: a client tool's result or error.
    Outcome(ToolOutcome),
    /// `approval-response`: a decision on an approval-gated call.
    Approval {
        approval_id: String,
        decision: ApprovalDecision,
    },
}

/// Decodes a submit body ([`SubmitRequest`]) into the checked form the store takes. Anything
/// that is not exactly one client answer is refused with the fixed `validation_error` message
/// (with the reason in `details` when `verbose`).
pub fn parse_submission(body: &[u8], verbose: bool) -> Result<Submission, ApiError> {
    SubmitRequest::from_json(body, verbose).map(Submission::from)
}

impl From<SubmitRequest> for Submission {
    fn from(request: SubmitRequest) -> Self {
        match request {
            SubmitRequest::ClientToolResult(submit) => Self {
                session_id: submit.session_id,
                tool_call_id: submit.tool_call_id,
                answer: SubmittedAnswer::Outcome(submit.outcome),
            },
            SubmitRequest::ApprovalResponse(submit) => Self {
                session_id: submit.session_id,
                tool_call_id: submit.tool_call_id,
                answer: SubmittedAnswer::Approval {
                    approval_id: submit.approval_id,
                    decision: ApprovalDecision {
                        approved: submit.approved,
                        reason: submit.reason,
                        arguments: submit.arguments,
                    },
                },
            },
        }
    }
}

/// Stores a client's answer. The call is found through the root session's ownership map; a
/// result is checked against the owning tool's output schema (errors skip it). Nothing is written
/// on any refusal.
pub async fn submit_tool_result(
    store: &Store,
    registry: &AgentRegistry,
    limits: SubmitLimits,
    submission: Submission,
    verbose: bool,
) -> Result<SubmitAnswer, ApiError> {
    let Submission {
        session_id,
        tool_call_id,
        answer,
    } = submission;
    let payload = match &answer {
        SubmittedAnswer::Outcome(ToolOutcome::Result(result)) => Some(result),
        SubmittedAnswer::Approval { decision, .. } => decision.arguments.as_ref(),
        SubmittedAnswer::Outcome(ToolOutcome::Error(_)) => None,
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
    let owner = SessionAddress {
        root_session_id: session_id.clone(),
        session_id: owner_id,
    };
    let answer =
        check_against_pending(store, registry, &owner, &tool_call_id, answer, verbose).await?;
    let answer = StoredAnswer {
        answer,
        submitted_at: now_ms(),
    };
    let stored = store
        .submit_answer(&owner, &tool_call_id, &answer)
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
    tool_call_id: &str,
    answer: SubmittedAnswer,
    verbose: bool,
) -> Result<Answer, ApiError> {
    let stored = |answer: SubmittedAnswer| match answer {
        SubmittedAnswer::Outcome(outcome) => Answer::Outcome { outcome },
        SubmittedAnswer::Approval { decision, .. } => Answer::Approval(decision),
    };
    let Some(call) = store
        .pending_call(owner, tool_call_id)
        .await
        .map_err(store_unavailable)?
    else {
        return Ok(stored(answer));
    };
    let Some(state) = store.session(owner).await.map_err(store_unavailable)? else {
        return Ok(stored(answer));
    };
    let agent = registry.get(&state.agent_type);
    let with_details = |error: ApiError, detail: String| {
        if verbose {
            error.with("details", detail)
        } else {
            error
        }
    };
    match (&answer, call.kind) {
        (SubmittedAnswer::Outcome(outcome), PendingKind::Client) => {
            let tool = agent.and_then(|agent| agent.client_tool(&call.tool_name));
            if let (ToolOutcome::Result(result), Some(tool)) = (outcome, tool) {
                tool.check_output(result).map_err(|detail| {
                    let error = ApiError::new(ErrorCode::InvalidResult, INVALID_RESULT_MESSAGE)
                        .with("toolName", call.tool_name.clone())
                        .with("toolCallId", tool_call_id);
                    with_details(error, detail)
                })?;
            }
        }
        (
            SubmittedAnswer::Approval {
                approval_id,
                decision,
            },
            PendingKind::Approval,
        ) => {
            if call.approval_id.as_deref() != Some(approval_id.as_str()) {
                return Err(ApiError::new(
                    ErrorCode::UnknownToolCall,
                    format!("no pending approval {approval_id}"),
                )
                .with("status", "unknown_tool_call"));
            }
            let tool = agent.and_then(|agent| agent.tool(&call.tool_name));
            if let (Some(arguments), Some(tool)) = (&decision.arguments, tool) {
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
                PendingKind::Approval => "approval-response",
            };
            return Err(ApiError::new(
                ErrorCode::ValidationError,
                format!("tool call {tool_call_id} awaits a {expected}"),
            ));
        }
    }
    Ok(stored(answer))
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
    use serde_json::json;

    #[test]
    fn a_decoded_submit_becomes_the_stores_submission() {
        let submission = parse_submission(
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1",
                "approvalId": "r::c1", "approved": false, "reason": "no"})
            .to_string()
            .as_bytes(),
            false,
        )
        .unwrap();
        assert_eq!(submission.session_id, "s1");
        assert_eq!(submission.tool_call_id, "c1");
        assert_eq!(
            submission.answer,
            SubmittedAnswer::Approval {
                approval_id: "r::c1".into(),
                decision: ApprovalDecision {
                    approved: false,
                    reason: Some("no".into()),
                    arguments: None
                },
            }
        );
        let result = parse_submission(br#"{"sessionId":"s1","toolCallId":"c1","result":2}"#, false);
        assert_eq!(
            result.unwrap().answer,
            SubmittedAnswer::Outcome(ToolOutcome::Result(json!(2)))
        );
        assert_eq!(
            parse_submission(b"[]", false).unwrap_err().error,
            INVALID_SUBMIT_MESSAGE
        );
    }

    #[test]
    fn limits() {
        let too_large = payload_too_large("tool_result", 10, 12);
        assert_eq!(too_large.code.presentation().http_status, 413);
        assert_eq!(too_large.details["cause"], "tool_result");
        assert_eq!(SubmitLimits::default().request_body_cap(), 4 << 20);
    }
}
