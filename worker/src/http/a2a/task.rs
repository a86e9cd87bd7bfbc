//! The mapping between Baton's words and A2A's, in one place: a session is a context (its id is
//! the `contextId`), a turn is a task whose id is `<sessionId>~<runId>` (the run that began the
//! turn; the runs that continue it after answers keep the task), a session's status is a task
//! state, the calls waiting on a person are the `input-required` status's question (a text part
//! and a data part with each call and its schema), the answers are the data parts of the
//! client's next message on the task, the output is the task's artifact and the usage its
//! metadata.

use super::error::RpcError;
use baton_core::{
    a2a::codes,
    a2a::{Artifact, Message, Part, Role, Task, TaskState, TaskStatus},
    ids,
    search::{PendingDetail, PersonCallKind},
    store::{SessionState, Status},
    submit::SubmitRequest,
};
use serde_json::{Map, Value, json};

/// Between a task id's session and run.
const SEPARATOR: char = '~';
/// The id of a task's one artifact, its output.
pub(super) const OUTPUT_ARTIFACT: &str = "output";

/// The id of the task a turn begun by run `run_id` of `session_id` is.
pub(super) fn task_id(session_id: &str, run_id: &str) -> String {
    format!("{session_id}{SEPARATOR}{run_id}")
}

/// The session (the context) a task id names; `TaskNotFound` for an id this server never made.
pub(super) fn context_of(task_id: &str) -> Result<&str, RpcError> {
    match task_id.split_once(SEPARATOR) {
        Some((session_id, run_id)) if ids::is_valid_name(session_id) && !run_id.is_empty() => {
            Ok(session_id)
        }
        _ => Err(RpcError::task_not_found(format!(
            "no task {}: this server's task ids are <contextId>~<runId>",
            baton_core::escape::bounded(task_id)
        ))),
    }
}

/// A task's state for a session's status: an abort (`failed` with `framework_cancelled`) and an
/// interrupt are `canceled`; a running session whose call asks a person (an MCP server's
/// elicitation: its `pending` lists the question) is `input-required`.
pub(super) fn state_of(session: &SessionState) -> TaskState {
    match session.status {
        // A running call's question to a person (read with the session's person calls).
        Status::Active if !session.pending.is_empty() => TaskState::InputRequired,
        _ => baton_core::store::a2a_task_state(session),
    }
}

/// The task `task_id` as `session` (read with its pending calls) shows it, with `usage` (the
/// rollup as the mount shows it) in its metadata when the mount serves usage.
pub(super) fn task_of(session: &SessionState, task_id: &str, usage: Option<Value>) -> Task {
    let mut task = Task {
        id: task_id.to_owned(),
        context_id: session.session_id.clone(),
        status: TaskStatus {
            state: state_of(session),
            message: None,
            timestamp: None,
        },
        history: Vec::new(),
        artifacts: Vec::new(),
        metadata: Some(metadata(session, usage)),
    };
    task.status.message = status_message(session, &task);
    if task.status.state == TaskState::Completed
        && let Some(output) = &session.output
    {
        task.artifacts.push(output_artifact(output.clone()));
    }
    task
}

/// The artifact of a task's output (or of a piece of it, streamed).
pub(super) fn output_artifact(text: String) -> Artifact {
    Artifact {
        artifact_id: OUTPUT_ARTIFACT.into(),
        parts: vec![Part::text(text)],
        name: Some("output".into()),
        description: None,
        metadata: None,
    }
}

/// Baton's view of the task: the session, its agent, the current run, its steps, and the usage.
pub(super) fn metadata(session: &SessionState, usage: Option<Value>) -> Map<String, Value> {
    let mut baton = json!({
        "sessionId": session.session_id,
        "agentType": session.agent_type,
        "runId": session.run_id,
        "status": session.status,
        "stepCount": session.step_count,
    });
    if let (Some(fields), Some(usage)) = (baton.as_object_mut(), usage) {
        fields.insert("usage".into(), usage);
    }
    let mut metadata = Map::new();
    metadata.insert("baton".into(), baton);
    metadata
}

/// The agent's message of the task's status: the question of an `input-required` task, the
/// error of a failed one.
fn status_message(session: &SessionState, task: &Task) -> Option<Message> {
    let parts = match task.status.state {
        TaskState::InputRequired => question(&session.pending),
        TaskState::Failed | TaskState::Canceled => {
            let error = session.error.as_ref()?;
            vec![Part::text(format!("{}: {}", error.code, error.message))]
        }
        _ => return None,
    };
    Some(Message::agent(
        format!("{}:{}:{}", task.id, session.last_sequence, state_word(task)),
        task,
        parts,
    ))
}

fn state_word(task: &Task) -> &'static str {
    match task.status.state {
        TaskState::InputRequired => "input-required",
        TaskState::Failed => "failed",
        _ => "status",
    }
}

/// What an `input-required` task asks: a sentence naming each call, and a data part with the
/// calls (`pendingCalls`: id, tool, kind, input, the result's JSON Schema or the approval's id)
/// and how to answer them.
fn question(pending: &[PendingDetail]) -> Vec<Part> {
    let named: Vec<String> = pending
        .iter()
        .map(|call| match call.kind {
            PersonCallKind::ClientTool => format!("{} {}", call.tool_name, call.input),
            PersonCallKind::Approval => format!("approve {} {}", call.tool_name, call.input),
        })
        .collect();
    let calls: Vec<Value> = pending
        .iter()
        .map(|call| {
            let mut entry = json!({
                "toolCallId": call.tool_call_id,
                "toolName": call.tool_name,
                "kind": call.kind,
                "input": call.input,
                "deadlineAt": call.deadline_at,
            });
            if let Some(fields) = entry.as_object_mut() {
                if let Some(schema) = &call.output_schema {
                    fields.insert("outputSchema".into(), schema.clone());
                }
                if let Some(approval_id) = &call.approval_id {
                    fields.insert("approvalId".into(), Value::String(approval_id.clone()));
                }
            }
            entry
        })
        .collect();
    let mut data = Map::new();
    data.insert("pendingCalls".into(), Value::Array(calls));
    data.insert(
        "answerWith".into(),
        Value::String(
            "a message on this task with one data part per call: {toolCallId, result} (or \
             {toolCallId, error}) for a client tool, {kind: \"approval-response\", toolCallId, \
             approvalId, approved, reason?} for an approval"
                .into(),
        ),
    );
    vec![
        Part::text(format!("The agent waits for: {}", named.join("; "))),
        Part::data(data),
    ]
}

/// The submits a client's message on an `input-required` task makes: one per data part, each
/// the API's submit body without its `sessionId` (the task's context). Refused, with nothing
/// written, when the message carries no answer or a part that is not one.
pub(super) fn answers(
    message: &Message,
    session_id: &str,
    verbose: bool,
) -> Result<Vec<SubmitRequest>, RpcError> {
    check_role(message)?;
    let mut submits = Vec::new();
    for part in &message.parts {
        let Part::Data { data, .. } = part else {
            continue;
        };
        if data.contains_key("sessionId") {
            return Err(RpcError::invalid_params(
                "an answer names no sessionId: the task's context is its session",
            ));
        }
        let mut body = data.clone();
        body.insert("sessionId".into(), Value::String(session_id.to_owned()));
        submits.push(SubmitRequest::from_value(Value::Object(body), verbose)?);
    }
    if submits.is_empty() {
        return Err(RpcError::invalid_params(
            "the task is input-required: answer each awaited call with a data part \
             {toolCallId, result} (see the status message's pendingCalls)",
        ));
    }
    Ok(submits)
}

/// The text of a client's message that begins a turn: its text parts, and each data part as
/// its compact JSON, one per line. A file is refused (`ContentTypeNotSupported`), as is a
/// message with nothing in it.
pub(super) fn turn_text(message: &Message) -> Result<String, RpcError> {
    check_role(message)?;
    let mut lines = Vec::new();
    for part in &message.parts {
        match part {
            Part::Text { text, .. } => lines.push(text.clone()),
            Part::Data { data, .. } => lines.push(Value::Object(data.clone()).to_string()),
            Part::File { .. } => {
                return Err(RpcError::new(
                    codes::CONTENT_TYPE_NOT_SUPPORTED,
                    "this agent takes text and data parts, not files",
                ));
            }
        }
    }
    let text = lines.join("\n");
    if text.trim().is_empty() {
        return Err(RpcError::invalid_params(
            "the message has no text: send a text or data part",
        ));
    }
    Ok(text)
}

fn check_role(message: &Message) -> Result<(), RpcError> {
    if message.role == Role::User {
        Ok(())
    } else {
        Err(RpcError::invalid_params(
            "a client's message has role \"user\"",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(parts: Value) -> Message {
        serde_json::from_value(json!({"messageId": "m", "role": "user", "parts": parts})).unwrap()
    }

    #[test]
    fn task_ids_name_their_context_and_answers_are_data_parts() {
        let id = task_id("ctx-1", "run9");
        assert_eq!(context_of(&id).unwrap(), "ctx-1");
        for bad in ["ctx-1", "~run", "a.b~run", "ctx~", "bad id~r"] {
            assert_eq!(
                context_of(bad).unwrap_err().code(),
                codes::TASK_NOT_FOUND,
                "{bad}"
            );
        }

        let answer = message(json!([
            {"kind": "text", "text": "here"},
            {"kind": "data", "data": {"toolCallId": "c1", "result": {"answer": "Ada"}}}
        ]));
        let submits = answers(&answer, "ctx-1", false).unwrap();
        assert_eq!(submits.len(), 1);
        assert_eq!(submits[0].session_id(), "ctx-1");
        assert_eq!(submits[0].tool_call_id(), "c1");
        let text_only = message(json!([{"kind": "text", "text": "Ada"}]));
        assert_eq!(
            answers(&text_only, "ctx-1", false).unwrap_err().code(),
            codes::INVALID_PARAMS
        );
        let foreign =
            message(json!([{"kind": "data", "data": {"sessionId": "x", "toolCallId": "c"}}]));
        assert_eq!(
            answers(&foreign, "ctx-1", false).unwrap_err().code(),
            codes::INVALID_PARAMS
        );

        let turn =
            message(json!([{"kind": "text", "text": "hi"}, {"kind": "data", "data": {"a": 1}}]));
        assert_eq!(turn_text(&turn).unwrap(), "hi\n{\"a\":1}");
        let file = message(json!([{"kind": "file", "file": {"uri": "https://x"}}]));
        assert_eq!(
            turn_text(&file).unwrap_err().code(),
            codes::CONTENT_TYPE_NOT_SUPPORTED
        );
    }
}
