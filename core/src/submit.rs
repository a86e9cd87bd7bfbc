//! Submitting a client's answer to a pending tool call: checked in Rust (shape, size, output
//! schema), then stored by one Lua script. Submitting is a durable write and nothing else; a
//! resume continues the run.

use crate::{
    AgentRegistry, ApiError, ErrorCode,
    ids::is_valid_name,
    message::{ToolError, ToolOutcome},
    store::{
        self, Answer, ApprovalDecision, Continuation, PendingKind, SessionAddress, Store,
        StoredAnswer, SubmitOutcome, now_ms,
    },
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The one message of a malformed submit: it never reveals what the schema expects.
pub const INVALID_SUBMIT_MESSAGE: &str = "The submit is not a valid client-tool answer or approval";
/// The one message of a result that fails the tool's output schema.
pub const INVALID_RESULT_MESSAGE: &str = "The submitted result failed the tool output validation";
/// The one message of edited approval arguments that fail the tool's input schema.
pub const INVALID_ARGUMENTS_MESSAGE: &str = "The edited arguments failed the tool input validation";
/// The error code a client-side failure gets when the client sends only a message.
pub const CLIENT_TOOL_ERROR: &str = "client_tool_error";

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

/// The answer to an accepted (or repeated) submit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmitAnswer {
    pub status: SubmitStatus,
    pub continuation: Continuation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubmitStatus {
    Accepted,
    AlreadyCompleted,
}

/// Decodes a submit body. Anything that is not exactly one client answer is refused with the
/// fixed `validation_error` message (with the reason in `details` when `verbose`).
pub fn parse_submission(body: &[u8], verbose: bool) -> Result<Submission, ApiError> {
    let invalid = |reason: &str| {
        let error = ApiError::new(ErrorCode::ValidationError, INVALID_SUBMIT_MESSAGE);
        if verbose {
            error.with("details", reason)
        } else {
            error
        }
    };
    let value: Value = serde_json::from_slice(body).map_err(|e| invalid(&e.to_string()))?;
    let Value::Object(mut fields) = value else {
        return Err(invalid("the body is not a JSON object"));
    };
    let approval = match fields.remove("kind") {
        None => false,
        Some(Value::String(kind)) if kind == "client-tool-result" => false,
        Some(Value::String(kind)) if kind == "approval-response" => true,
        Some(_) => return Err(invalid("unknown kind")),
    };
    let text = |fields: &mut serde_json::Map<String, Value>, name: &str| match fields.remove(name) {
        Some(Value::String(text)) if !text.is_empty() && text.len() <= 256 => Ok(text),
        _ => Err(invalid(&format!("{name} must be a non-empty string"))),
    };
    let session_id = text(&mut fields, "sessionId")?;
    let tool_call_id = text(&mut fields, "toolCallId")?;
    if !is_valid_name(&session_id) {
        return Err(invalid("sessionId is malformed"));
    }
    let answer = if approval {
        let approval_id = text(&mut fields, "approvalId")?;
        let Some(Value::Bool(approved)) = fields.remove("approved") else {
            return Err(invalid("approved must be true or false"));
        };
        let reason = match fields.remove("reason") {
            None | Some(Value::Null) => None,
            Some(Value::String(reason)) => Some(reason),
            Some(_) => return Err(invalid("reason must be a string")),
        };
        let arguments = match fields.remove("arguments") {
            None | Some(Value::Null) => None,
            Some(arguments @ Value::Object(_)) => Some(arguments),
            Some(_) => return Err(invalid("arguments must be an object")),
        };
        SubmittedAnswer::Approval {
            approval_id,
            decision: ApprovalDecision {
                approved,
                reason,
                arguments,
            },
        }
    } else {
        SubmittedAnswer::Outcome(match (fields.remove("result"), fields.remove("error")) {
            (Some(result), None) => ToolOutcome::Result(result),
            (None, Some(Value::String(message))) => {
                ToolOutcome::Error(ToolError::new(CLIENT_TOOL_ERROR, message))
            }
            (None, Some(error @ Value::Object(_))) => ToolOutcome::Error(
                serde_json::from_value::<ToolError>(error)
                    .map_err(|_| invalid("error must be a string or {code, message}"))?,
            ),
            _ => return Err(invalid("exactly one of result and error is required")),
        })
    };
    if let Some(extra) = fields.keys().next() {
        return Err(invalid(&format!("unknown field {extra}")));
    }
    Ok(Submission {
        session_id,
        tool_call_id,
        answer,
    })
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

    fn parse(body: Value) -> Result<Submission, ApiError> {
        parse_submission(body.to_string().as_bytes(), false)
    }

    #[test]
    fn submits_are_parsed_strictly() {
        let outcome = |s: Submission| match s.answer {
            SubmittedAnswer::Outcome(outcome) => outcome,
            other => panic!("not a client result: {other:?}"),
        };
        let ok = parse(json!({"sessionId": "s1", "toolCallId": "c1", "result": null})).unwrap();
        assert_eq!(outcome(ok), ToolOutcome::Result(Value::Null));
        let explicit = parse(
            json!({"kind": "client-tool-result", "sessionId": "s1", "toolCallId": "c1", "result": {"a": 1}}),
        );
        assert_eq!(
            outcome(explicit.unwrap()),
            ToolOutcome::Result(json!({"a": 1}))
        );
        let failed =
            parse(json!({"sessionId": "s1", "toolCallId": "c1", "error": "user_cancelled"}))
                .unwrap();
        assert_eq!(
            outcome(failed),
            ToolOutcome::Error(ToolError::new(CLIENT_TOOL_ERROR, "user_cancelled"))
        );
        let coded = parse(
            json!({"sessionId": "s1", "toolCallId": "c1", "error": {"code": "denied", "message": "no"}}),
        );
        assert_eq!(
            outcome(coded.unwrap()),
            ToolOutcome::Error(ToolError::new("denied", "no"))
        );

        for bad in [
            json!({"sessionId": "s1", "toolCallId": "c1"}),
            json!({"sessionId": "s1", "toolCallId": "c1", "result": 1, "error": "x"}),
            json!({"sessionId": "", "toolCallId": "c1", "result": 1}),
            json!({"toolCallId": "c1", "result": 1}),
            json!({"sessionId": "s1", "result": 1}),
            json!({"sessionId": "s1", "toolCallId": "c1", "result": 1, "extra": true}),
            json!({"kind": "other", "sessionId": "s1", "toolCallId": "c1", "result": 1}),
            json!({"sessionId": "a__b", "toolCallId": "c1", "result": 1}),
            json!([1, 2]),
        ] {
            let error = parse(bad.clone()).unwrap_err();
            assert_eq!(
                (error.code, error.error.as_str()),
                (ErrorCode::ValidationError, INVALID_SUBMIT_MESSAGE),
                "{bad}"
            );
            assert!(error.details.is_empty(), "not verbose: {error:?}");
        }
        let verbose = parse_submission(b"{", true).unwrap_err();
        assert!(verbose.details.contains_key("details"));
        let approval = parse(
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approvalId": "r::c1", "approved": true}),
        );
        assert_eq!(
            approval.unwrap().answer,
            SubmittedAnswer::Approval {
                approval_id: "r::c1".into(),
                decision: ApprovalDecision {
                    approved: true,
                    reason: None,
                    arguments: None
                },
            }
        );
        let edited = parse(
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1",
            "approvalId": "r::c1", "approved": false, "reason": "too risky", "arguments": {"path": "/tmp"}}),
        );
        assert_eq!(
            edited.unwrap().answer,
            SubmittedAnswer::Approval {
                approval_id: "r::c1".into(),
                decision: ApprovalDecision {
                    approved: false,
                    reason: Some("too risky".into()),
                    arguments: Some(json!({"path": "/tmp"})),
                },
            }
        );
        for bad in [
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approved": true}),
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approvalId": "a", "approved": "yes"}),
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approvalId": "a", "approved": true, "result": 1}),
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approvalId": "a", "approved": true, "arguments": [1]}),
        ] {
            assert_eq!(
                parse(bad.clone()).unwrap_err().error,
                INVALID_SUBMIT_MESSAGE,
                "{bad}"
            );
        }

        let too_large = payload_too_large("tool_result", 10, 12);
        assert_eq!(too_large.code.presentation().http_status, 413);
        assert_eq!(too_large.details["cause"], "tool_result");
        assert_eq!(SubmitLimits::default().request_body_cap(), 4 << 20);
    }
}
