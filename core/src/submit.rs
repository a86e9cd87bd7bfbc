//! Submitting a client's answer to a pending tool call: checked in Rust (shape, size, output
//! schema), then stored by one Lua script. Submitting is a durable write and nothing else; a
//! resume continues the run.

use crate::{
    AgentRegistry, ApiError, ErrorCode,
    message::ToolOutcome,
    observe::{self, CallIds, ClientCallEvent},
    refusal::{Payload, Refusal},
    store::{
        Answer, PendingKind, SessionAddress, Store, StoredAnswer, SubmitAttempt, SubmitOutcome,
        now_ms,
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

/// Stores a client's answer, in one round trip to Redis: the submit script takes the root's
/// rate-limit token (`submits_per_minute`), finds the call through the root's ownership map,
/// checks the answer's kind and approval id and picks the verdict of the call's tool among the
/// schema checks made here beforehand (a result against every client tool's output schema,
/// edited arguments against every server tool's input schema), then stores the answer. Nothing
/// is written on any refusal but the token, and nothing at all when the bucket is empty.
/// The submit is logged as a client-call event: `client_call.submitted` when the answer was
/// stored, `client_call.refused` with the error code (or `run_stopped`) as the reason otherwise.
pub async fn submit_tool_result(
    store: &Store,
    registry: &AgentRegistry,
    limits: SubmitLimits,
    submits_per_minute: Option<u32>,
    request: SubmitRequest,
    verbose: bool,
) -> Result<SubmitAnswer, ApiError> {
    let session_id = request.session_id().to_owned();
    let tool_call_id = request.tool_call_id().to_owned();
    let mut seen = SeenCall::default();
    let answer = store_submitted(
        store,
        registry,
        (limits, submits_per_minute),
        request,
        verbose,
        &mut seen,
    )
    .await;
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
        // A rate-limited submit never reached the call.
        Err(error) if error.code == ErrorCode::RateLimited => {}
        Err(error) => {
            let reason = match error.refusal() {
                Some(Refusal::RunStopped) => "run_stopped",
                _ => error.code.as_str(),
            };
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

/// One schema check's refusal: the tool it names and the first mismatch (for verbose answers).
struct SchemaRefusal {
    agent_type: String,
    tool_name: String,
    detail: String,
}

/// The answer checked against every tool it might answer: a result against each client tool's
/// output schema, edited arguments against each server tool's input schema. Only the refusals
/// are kept; the submit script picks the call's (a tool the registry lacks refuses nothing).
fn schema_refusals(registry: &AgentRegistry, request: &SubmitRequest) -> Vec<SchemaRefusal> {
    let mut refusals = Vec::new();
    match request {
        SubmitRequest::ClientToolResult(submit) => {
            let ToolOutcome::Result(result) = &submit.outcome else {
                return refusals;
            };
            for (agent_type, agent) in registry.agents() {
                for (tool_name, tool) in agent.client_tools() {
                    if let Err(detail) = tool.check_output(result) {
                        refusals.push(SchemaRefusal {
                            agent_type: agent_type.to_owned(),
                            tool_name: tool_name.to_owned(),
                            detail,
                        });
                    }
                }
            }
        }
        SubmitRequest::ApprovalResponse(submit) => {
            let Some(arguments) = &submit.decision.arguments else {
                return refusals;
            };
            for (agent_type, agent) in registry.agents() {
                for (tool_name, tool) in agent.tools() {
                    if let Err(error) = tool.check_input(arguments) {
                        refusals.push(SchemaRefusal {
                            agent_type: agent_type.to_owned(),
                            tool_name: tool_name.to_owned(),
                            detail: error.message,
                        });
                    }
                }
            }
        }
    }
    refusals
}

async fn store_submitted(
    store: &Store,
    registry: &AgentRegistry,
    (limits, submits_per_minute): (SubmitLimits, Option<u32>),
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
                Payload::ToolResult,
                limits.max_result_bytes,
                size,
            ));
        }
    }
    let refusals = schema_refusals(registry, &request);
    let refused_by_schema: Vec<(String, String)> = refusals
        .iter()
        .map(|refusal| (refusal.agent_type.clone(), refusal.tool_name.clone()))
        .collect();
    let is_approval = matches!(request, SubmitRequest::ApprovalResponse(_));
    let approval_id = match &request {
        SubmitRequest::ApprovalResponse(submit) => Some(submit.approval_id.clone()),
        SubmitRequest::ClientToolResult(_) => None,
    };
    let answer = StoredAnswer {
        answer: Answer::from(request),
        submitted_at: now_ms(),
    };
    let submitted = store
        .submit_answer(&SubmitAttempt {
            root_session_id: &session_id,
            tool_call_id: &tool_call_id,
            approval_id: approval_id.as_deref(),
            answer: &answer,
            submits_per_minute,
            refused_by_schema: &refused_by_schema,
        })
        .await?;
    seen.owner_id = Some(submitted.owner_session_id);
    seen.tool = submitted.tool_name;
    seen.run_id = submitted.run_id;
    match submitted.outcome {
        SubmitOutcome::Accepted(continuation) => Ok(SubmitAnswer {
            status: SubmitStatus::Accepted,
            continuation,
        }),
        SubmitOutcome::AlreadyCompleted(continuation) => Ok(SubmitAnswer {
            status: SubmitStatus::AlreadyCompleted,
            continuation,
        }),
        SubmitOutcome::RateLimited(wait) => Err(rate_limited(submits_per_minute, wait)),
        SubmitOutcome::UnknownToolCall | SubmitOutcome::OwnedBy(_) => Err(ApiError::new(
            ErrorCode::UnknownToolCall,
            format!("no pending tool call {tool_call_id} in session {session_id}"),
        )
        .with(Refusal::NoPendingCall)),
        SubmitOutcome::RunStopped => Err(ApiError::new(
            ErrorCode::UnknownToolCall,
            format!(
                "tool call {tool_call_id} belongs to a stopped run; send a new message to go on"
            ),
        )
        .with(Refusal::RunStopped)),
        SubmitOutcome::UnknownApproval => Err(ApiError::new(
            ErrorCode::UnknownToolCall,
            format!(
                "no pending approval {}",
                approval_id.as_deref().unwrap_or_default()
            ),
        )
        .with(Refusal::NoPendingCall)),
        SubmitOutcome::AwaitsSubAgent => Err(ApiError::new(
            ErrorCode::UnknownToolCall,
            format!("tool call {tool_call_id} awaits a sub-agent, not a client"),
        )
        .with(Refusal::NoPendingCall)),
        SubmitOutcome::WrongKind(kind) => {
            let expected = match kind {
                PendingKind::Client => "client-tool-result",
                PendingKind::Approval | PendingKind::SubAgent(_) => "approval-response",
            };
            Err(ApiError::new(
                ErrorCode::ValidationError,
                format!("tool call {tool_call_id} awaits a {expected}"),
            ))
        }
        SubmitOutcome::RefusedBySchema { agent_type } => {
            let detail = refusals
                .iter()
                .find(|refusal| refusal.agent_type == agent_type && refusal.tool_name == seen.tool)
                .map_or("", |refusal| refusal.detail.as_str());
            let mismatch = Refusal::SchemaMismatch {
                tool_name: seen.tool.clone(),
                tool_call_id,
                details: verbose.then(|| detail.to_owned()),
            };
            let error = if is_approval {
                ApiError::new(ErrorCode::ValidationError, INVALID_ARGUMENTS_MESSAGE)
            } else {
                ApiError::new(ErrorCode::InvalidResult, INVALID_RESULT_MESSAGE)
            };
            Err(error.with(mismatch))
        }
        SubmitOutcome::RefusedByQuestion(detail) => {
            let mismatch = Refusal::SchemaMismatch {
                tool_name: seen.tool.clone(),
                tool_call_id,
                details: verbose.then_some(detail),
            };
            Err(ApiError::new(ErrorCode::InvalidResult, INVALID_RESULT_MESSAGE).with(mismatch))
        }
        SubmitOutcome::CheckAgainstQuestion(_) => Err(ApiError::new(
            ErrorCode::Internal,
            "the submit was not checked against its call's question",
        )),
    }
}

/// Takes the token of an answer that no submit script stores (one relayed to a remote child's
/// producer) from the root's submit bucket, before the answer goes anywhere: past the root's
/// rate limit it is refused as a local answer is (`rate_limited` with `retryAfter`), and
/// nothing is written. No limit (`None`): nothing to take.
pub async fn take_submit_token(
    store: &Store,
    root: &SessionAddress,
    submits_per_minute: Option<u32>,
) -> Result<(), ApiError> {
    let Some(per_minute) = submits_per_minute.filter(|n| *n > 0) else {
        return Ok(());
    };
    match store.take_submit_token(root, per_minute).await? {
        None => Ok(()),
        Some(wait) => Err(rate_limited(submits_per_minute, wait)),
    }
}

/// The refusal of a submit past the root's rate limit: 429 `rate_limited` with `retryAfter`, in
/// whole seconds, at least one.
fn rate_limited(submits_per_minute: Option<u32>, wait: std::time::Duration) -> ApiError {
    let retry_after = wait.as_secs_f64().ceil().max(1.0) as u64;
    ApiError::new(
        ErrorCode::RateLimited,
        format!(
            "more than {} submits a minute on this session",
            submits_per_minute.unwrap_or_default()
        ),
    )
    .with(Refusal::RetryAfter { retry_after })
}

/// The typed refusal of an answer or body over the limit.
pub fn payload_too_large(cause: Payload, limit: usize, size: usize) -> ApiError {
    let name: &'static str = cause.into();
    ApiError::new(
        ErrorCode::ValidationPayloadTooLarge,
        format!(
            "the {} is {size} bytes; the limit is {limit}",
            name.replace('_', " ")
        ),
    )
    .with(Refusal::PayloadTooLarge {
        cause,
        limit_bytes: limit as u64,
        size_bytes: size as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        let too_large = payload_too_large(Payload::ToolResult, 10, 12);
        assert_eq!(too_large.code.presentation().http_status, 413);
        assert_eq!(too_large.details["cause"], "tool_result");
        assert_eq!(SubmitLimits::default().request_body_cap(), 4 << 20);
    }
}
