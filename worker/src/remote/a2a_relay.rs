//! The A2A arm of the relay (`relay.rs`): an answer to a call an A2A task asked for is sent to
//! the agent as a message on that task, before anything is written here. For an agent that
//! listed Baton's `pendingCalls` the message carries Baton's submit body under the producer's
//! ids (one data part); for any other agent it carries the answer alone (a string as a text part,
//! an object as a data part, a client error as text), checked first against the schema the
//! question carried. The agent's refusal is answered with Baton's code: the one Baton's own A2A
//! server sends in its error's `data`, else the nearest for the JSON-RPC code.

use crate::state::AppState;
use baton_core::{
    ApiError, ErrorCode, Refusal,
    a2a::{MessageSendParams, Part, codes},
    message::ToolOutcome,
    remote::ErrorBody,
    store::{A2aQuestion, RelayedCall},
    subagent::A2aAgent,
    submit::{SubmitRequest, SubmitStatus},
    tool::ask::content_mismatch,
};
use baton_remote::{A2aClient, A2aError};
use serde_json::{Map, Value};

/// Sends the answer `request` (as the producer takes it: `forwarded`) to the task `relayed` was
/// asked in.
pub(super) async fn relay_answer(
    state: &AppState,
    agent: &A2aAgent,
    request: &SubmitRequest,
    forwarded: &SubmitRequest,
    relayed: &RelayedCall,
) -> Result<SubmitStatus, ApiError> {
    let question = relayed.a2a.as_ref().ok_or_else(|| {
        ApiError::new(
            ErrorCode::Internal,
            "a relayed call of an A2A sub-agent names no task",
        )
    })?;
    let part = if question.as_submit {
        submit_part(forwarded)?
    } else {
        answer_part(request, relayed, state.options.verbose_errors)?
    };
    let params = message_on(question, &relayed.call.tool_call_id, part);
    let client = A2aClient::connect(&state.http, agent)
        .await
        .map_err(|error| refused(error, relayed))?;
    client
        .send(&params)
        .await
        .map_err(|error| refused(error, relayed))?;
    Ok(SubmitStatus::Accepted)
}

/// The message answering `question`: one part, on its task.
fn message_on(question: &A2aQuestion, relayed_id: &str, part: Part) -> MessageSendParams {
    MessageSendParams::user(
        format!("{relayed_id}-answer"),
        vec![part],
        question.context_id.clone(),
        Some(question.task_id.clone()),
    )
}

/// Baton's submit body, without its `sessionId` (the task's context is the session).
fn submit_part(forwarded: &SubmitRequest) -> Result<Part, ApiError> {
    let Ok(Value::Object(mut body)) = serde_json::to_value(forwarded) else {
        return Err(ApiError::new(
            ErrorCode::Internal,
            "a submit that is not a JSON object",
        ));
    };
    body.remove("sessionId");
    Ok(Part::data(body))
}

/// The answer alone, checked against the question's schema.
fn answer_part(
    request: &SubmitRequest,
    relayed: &RelayedCall,
    verbose: bool,
) -> Result<Part, ApiError> {
    let SubmitRequest::ClientToolResult(submit) = request else {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!(
                "tool call {} awaits a client-tool-result",
                relayed.call.tool_call_id
            ),
        ));
    };
    let result = match &submit.outcome {
        ToolOutcome::Error(error) => {
            return Ok(Part::text(format!("{}: {}", error.code, error.message)));
        }
        ToolOutcome::Result(result) => result,
    };
    let schema = relayed
        .render
        .as_ref()
        .and_then(|render| render.get("outputSchema"));
    if let Some(first) = schema.and_then(|schema| content_mismatch(schema, result)) {
        return Err(ApiError::new(
            ErrorCode::InvalidResult,
            format!(
                "the answer does not match the schema the A2A agent asked with for {}",
                relayed.call.tool_call_id
            ),
        )
        .with(Refusal::SchemaMismatch {
            tool_name: relayed.call.tool_name.clone(),
            tool_call_id: relayed.call.tool_call_id.clone(),
            details: verbose.then_some(first),
        }));
    }
    Ok(match result {
        Value::String(text) => Part::text(text.clone()),
        Value::Object(data) => Part::data(data.clone()),
        other => {
            let mut data = Map::new();
            data.insert("value".into(), other.clone());
            Part::data(data)
        }
    })
}

/// The agent's refusal as the client that answered reads it.
fn refused(error: A2aError, relayed: &RelayedCall) -> ApiError {
    let ours = &relayed.call.tool_call_id;
    match error {
        A2aError::Unavailable(reason) => ApiError::new(
            ErrorCode::RemoteUnavailable,
            format!("the answer could not be relayed to the A2A sub-agent: {reason}"),
        ),
        A2aError::Refused {
            code,
            message,
            data,
        } => {
            if let Some(body) = data.and_then(|data| serde_json::from_value::<ErrorBody>(data).ok())
            {
                return super::relay::named_as_relayed(body.into_api_error(), relayed);
            }
            let error = |code: ErrorCode| {
                ApiError::new(
                    code,
                    format!(
                        "the A2A sub-agent refused the answer to tool call {ours}: {}",
                        baton_core::escape::bounded(&message)
                    ),
                )
            };
            match code {
                codes::TASK_NOT_FOUND => {
                    error(ErrorCode::UnknownToolCall).with(Refusal::NoPendingCall)
                }
                codes::INVALID_PARAMS => error(ErrorCode::ValidationError),
                _ => error(ErrorCode::RemoteUnavailable),
            }
        }
    }
}
