//! Submitting a client's answer to a pending tool call: checked in Rust (shape, size, output
//! schema), then stored by one Lua script. Submitting is a durable write and nothing else; a
//! resume continues the run.

use crate::{
    AgentRegistry, ApiError, ErrorCode,
    ids::is_valid_name,
    message::{ToolError, ToolOutcome},
    store::{self, Continuation, SessionAddress, Store, StoredAnswer, SubmitOutcome, now_ms},
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The one message of a malformed submit: it never reveals what the schema expects.
pub const INVALID_SUBMIT_MESSAGE: &str = "The submit is not a valid client-tool answer or approval";
/// The one message of a result that fails the tool's output schema.
pub const INVALID_RESULT_MESSAGE: &str = "The submitted result failed the tool output validation";
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
    pub outcome: ToolOutcome,
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
    match fields.remove("kind") {
        None => {}
        Some(Value::String(kind)) if kind == "client-tool-result" => {}
        Some(Value::String(kind)) if kind == "approval-response" => {
            return Err(ApiError::new(
                ErrorCode::ValidationError,
                "approval-response submits are not supported yet",
            ));
        }
        Some(_) => return Err(invalid("unknown kind")),
    }
    let text = |fields: &mut serde_json::Map<String, Value>, name: &str| match fields.remove(name) {
        Some(Value::String(text)) if !text.is_empty() && text.len() <= 256 => Ok(text),
        _ => Err(invalid(&format!("{name} must be a non-empty string"))),
    };
    let session_id = text(&mut fields, "sessionId")?;
    let tool_call_id = text(&mut fields, "toolCallId")?;
    if !is_valid_name(&session_id) {
        return Err(invalid("sessionId is malformed"));
    }
    let outcome = match (fields.remove("result"), fields.remove("error")) {
        (Some(result), None) => ToolOutcome::Result(result),
        (None, Some(Value::String(message))) => {
            ToolOutcome::Error(ToolError::new(CLIENT_TOOL_ERROR, message))
        }
        (None, Some(error @ Value::Object(_))) => ToolOutcome::Error(
            serde_json::from_value::<ToolError>(error)
                .map_err(|_| invalid("error must be a string or {code, message}"))?,
        ),
        _ => return Err(invalid("exactly one of result and error is required")),
    };
    if let Some(extra) = fields.keys().next() {
        return Err(invalid(&format!("unknown field {extra}")));
    }
    Ok(Submission {
        session_id,
        tool_call_id,
        outcome,
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
        outcome,
    } = submission;
    if let ToolOutcome::Result(result) = &outcome {
        let size = serde_json::to_vec(result).map_or(usize::MAX, |bytes| bytes.len());
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
    if let ToolOutcome::Result(result) = &outcome {
        check_output(store, registry, &owner, &tool_call_id, result, verbose).await?;
    }
    let answer = StoredAnswer {
        outcome,
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

async fn check_output(
    store: &Store,
    registry: &AgentRegistry,
    owner: &SessionAddress,
    tool_call_id: &str,
    result: &Value,
    verbose: bool,
) -> Result<(), ApiError> {
    // An unknown call is left to the script, which answers it.
    let Some(call) = store
        .pending_call(owner, tool_call_id)
        .await
        .map_err(store_unavailable)?
    else {
        return Ok(());
    };
    let Some(state) = store.session(owner).await.map_err(store_unavailable)? else {
        return Ok(());
    };
    let tool = registry
        .get(&state.agent_type)
        .and_then(|agent| agent.client_tool(&call.tool_name));
    let Some(tool) = tool else {
        return Ok(());
    };
    tool.check_output(result).map_err(|detail| {
        let error = ApiError::new(ErrorCode::InvalidResult, INVALID_RESULT_MESSAGE)
            .with("toolName", call.tool_name.clone())
            .with("toolCallId", tool_call_id);
        if verbose {
            error.with("details", detail)
        } else {
            error
        }
    })
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
        let ok = parse(json!({"sessionId": "s1", "toolCallId": "c1", "result": null})).unwrap();
        assert_eq!(ok.outcome, ToolOutcome::Result(Value::Null));
        let explicit = parse(
            json!({"kind": "client-tool-result", "sessionId": "s1", "toolCallId": "c1", "result": {"a": 1}}),
        );
        assert_eq!(
            explicit.unwrap().outcome,
            ToolOutcome::Result(json!({"a": 1}))
        );
        let failed =
            parse(json!({"sessionId": "s1", "toolCallId": "c1", "error": "user_cancelled"}))
                .unwrap();
        assert_eq!(
            failed.outcome,
            ToolOutcome::Error(ToolError::new(CLIENT_TOOL_ERROR, "user_cancelled"))
        );
        let coded = parse(
            json!({"sessionId": "s1", "toolCallId": "c1", "error": {"code": "denied", "message": "no"}}),
        );
        assert_eq!(
            coded.unwrap().outcome,
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
        assert_eq!(approval.unwrap_err().code, ErrorCode::ValidationError);

        let too_large = payload_too_large("tool_result", 10, 12);
        assert_eq!(too_large.code.presentation().http_status, 413);
        assert_eq!(too_large.details["cause"], "tool_result");
        assert_eq!(SubmitLimits::default().request_body_cap(), 4 << 20);
    }
}
