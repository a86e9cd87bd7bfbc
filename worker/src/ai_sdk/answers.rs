//! A trailing assistant message's answers: every one submitted first (through the submit
//! operation, so the body checks, the rate limit and the metrics are the same as
//! `/submit-tool-result`'s), then one of three answers: **A** the continuation is streamed (this
//! request completed a batch and resumed the run), **B** a closed step (the rest of the batch is
//! answered elsewhere, or another entry took the continuation), **C** 409
//! `state_not_resumable` with `cause: answer_not_stored`, final (an answer for a call the server
//! still awaits was not stored while a sibling's was).

use super::{
    request::{PartState, ToolPart},
    tree::Tree,
    ui::{DataPart, UiChunk, UiFrame},
};
use crate::{
    auth::Principal,
    ops::{chat_resume, submit},
    state::AppState,
};
use baton_core::{
    ApiError, ErrorCode, Refusal,
    api::Resume,
    escape::bounded,
    message::{ToolError, ToolOutcome, codes},
    refusal::NotStored,
    session::{ApprovalDecision, Continuation},
    store::PendingCall,
    submit::{SubmitAnswer, SubmitRequest, SubmitStatus},
};
use serde_json::{Value, json};
use std::collections::HashMap;

/// Why an answer was not stored although its submit was not refused as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Nothing awaits the call.
    UnknownToolCall,
    /// The approval id names another run than the one awaiting the call.
    StaleRun,
    /// The call's run was stopped.
    RunStopped,
    /// The approval id is not one Baton issued for this call.
    MalformedApprovalId,
}

impl Rejection {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownToolCall => "unknown_tool_call",
            Self::StaleRun => "stale_run",
            Self::RunStopped => "run_stopped",
            Self::MalformedApprovalId => "malformed_approval_id",
        }
    }

    /// The cause of the 409 when no answer was stored and this rejection came first (none for a
    /// malformed approval id: that request is answered 400).
    fn not_stored(self) -> Option<NotStored> {
        match self {
            Self::UnknownToolCall => Some(NotStored::UnknownToolCall),
            Self::StaleRun => Some(NotStored::StaleRun),
            Self::RunStopped => Some(NotStored::RunStopped),
            Self::MalformedApprovalId => None,
        }
    }
}

/// What became of one answer.
#[derive(Debug, Clone)]
enum Outcome {
    Stored(SubmitAnswer),
    /// Not stored; `pending` says whether the server still awaits the call.
    Rejected {
        cause: Rejection,
        pending: bool,
    },
    /// Refused as sent (a classified, non-retryable error): answered as itself.
    Refused(ApiError),
    /// A transient failure: the answer may be sent again.
    Transient(ApiError),
}

/// The route's answer to a message that carries answers.
#[derive(Debug)]
pub(super) enum Answered {
    /// Case A: stream the session from `after` into the trailing message.
    Continue { after: u64 },
    /// Case B: a step that opens and closes, with the frames to put inside it.
    Closed { inside: Vec<UiFrame> },
}

/// The parts of the trailing message that carry an answer to submit: answered client and
/// approval parts of its last step (what `ai`'s predicates read), and answered parts of earlier
/// steps whose call the server still awaits. Server-executed parts are never answers.
pub(super) fn answer_parts<'a>(
    parts: &'a [ToolPart],
    last_step: usize,
    pending: &HashMap<String, PendingCall>,
) -> Vec<&'a ToolPart> {
    parts
        .iter()
        .filter(|part| !part.provider_executed && part.state != PartState::Other)
        .filter(|part| part.step == last_step || pending.contains_key(&part.tool_call_id))
        .collect()
}

/// Submits every answer, then decides between A, B and C (and the errors).
pub(super) async fn submit_answers(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
    position: u64,
    parts: &[&ToolPart],
    pending: &HashMap<String, PendingCall>,
) -> Result<Answered, ApiError> {
    if parts.is_empty() {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "the trailing assistant message answers no tool call",
        ));
    }
    let mut outcomes = Vec::with_capacity(parts.len());
    for part in parts {
        let outcome = submit_one(state, principal, session_id, part, pending).await;
        if let Some(cause) = failure_cause(&outcome) {
            tracing::warn!(
                session_id,
                tool_call_id = %bounded(&part.tool_call_id),
                cause,
                "chat answer not stored"
            );
        }
        outcomes.push((part.tool_call_id.clone(), outcome));
    }
    decide(state, principal, session_id, position, outcomes).await
}

/// The cause a failed answer is logged with.
fn failure_cause(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Stored(_) => None,
        Outcome::Rejected { cause, pending } => Some(format!(
            "{} (call still pending: {pending})",
            cause.as_str()
        )),
        Outcome::Refused(error) | Outcome::Transient(error) => {
            Some(format!("{}: {}", error.code, error.error))
        }
    }
}

async fn submit_one(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
    part: &ToolPart,
    pending: &HashMap<String, PendingCall>,
) -> Outcome {
    let call = pending.get(&part.tool_call_id);
    let request = match &part.state {
        PartState::Output(output) => SubmitRequest::tool_result(
            session_id,
            &part.tool_call_id,
            ToolOutcome::Result(output.clone()),
        ),
        PartState::OutputError(text) => SubmitRequest::tool_result(
            session_id,
            &part.tool_call_id,
            ToolOutcome::Error(ToolError::new(codes::CLIENT_TOOL_ERROR, text.clone())),
        ),
        PartState::ApprovalResponded {
            approval_id,
            approved,
            reason,
        } => {
            if !well_formed_approval_id(approval_id, &part.tool_call_id) {
                return Outcome::Rejected {
                    cause: Rejection::MalformedApprovalId,
                    pending: call.is_some(),
                };
            }
            if let Some(call) = call
                && call.approval_id.as_deref() != Some(approval_id.as_str())
            {
                return Outcome::Rejected {
                    cause: Rejection::StaleRun,
                    pending: true,
                };
            }
            // An app edits a call's arguments by changing the part's input before approving.
            let arguments = call
                .filter(|call| *approved && part.input.is_object() && part.input != call.input)
                .map(|_| part.input.clone());
            SubmitRequest::approval(
                session_id,
                &part.tool_call_id,
                approval_id,
                ApprovalDecision {
                    approved: *approved,
                    reason: reason.clone(),
                    arguments,
                },
            )
        }
        PartState::Other => {
            return Outcome::Rejected {
                cause: Rejection::UnknownToolCall,
                pending: call.is_some(),
            };
        }
    };
    match submit(state, principal, request).await {
        Ok(answer) => Outcome::Stored(answer),
        Err(error) if error.code == ErrorCode::UnknownToolCall => Outcome::Rejected {
            cause: if error.refusal() == Some(Refusal::RunStopped) {
                Rejection::RunStopped
            } else {
                Rejection::UnknownToolCall
            },
            pending: call.is_some(),
        },
        Err(error) if error.retryable => Outcome::Transient(error),
        Err(error) => Outcome::Refused(error),
    }
}

/// Baton's approval ids are `<runId>::<toolCallId>`.
fn well_formed_approval_id(approval_id: &str, tool_call_id: &str) -> bool {
    approval_id
        .split_once("::")
        .is_some_and(|(run, call)| !run.is_empty() && call == tool_call_id)
}

/// The spec's order: a refusal as sent wins; with nothing stored a transient failure keeps its
/// retryable answer; an unstored answer for a still-awaited call beside a stored one is case C;
/// all rejected is 409 with the cause; otherwise A or B from the stored continuations.
async fn decide(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
    position: u64,
    outcomes: Vec<(String, Outcome)>,
) -> Result<Answered, ApiError> {
    if let Some(refused) = outcomes.iter().find_map(|(_, o)| match o {
        Outcome::Refused(error) => Some(error.clone()),
        _ => None,
    }) {
        return Err(refused);
    }
    let stored: Vec<(&String, &SubmitAnswer)> = outcomes
        .iter()
        .filter_map(|(id, o)| match o {
            Outcome::Stored(answer) => Some((id, answer)),
            _ => None,
        })
        .collect();
    let transient = outcomes.iter().find_map(|(_, o)| match o {
        Outcome::Transient(error) => Some(error.clone()),
        _ => None,
    });
    if stored.is_empty() {
        if let Some(error) = transient {
            return Err(error);
        }
        return Err(all_rejected(&outcomes));
    }
    let not_stored: Vec<&String> = outcomes
        .iter()
        .filter(|(_, o)| {
            matches!(
                o,
                Outcome::Transient(_) | Outcome::Rejected { pending: true, .. }
            )
        })
        .map(|(id, _)| id)
        .collect();
    if !not_stored.is_empty() {
        return Err(ApiError::new(
            ErrorCode::StateNotResumable,
            "an answer for a call the server still awaits was not stored; re-read the \
             snapshot and answer these calls again",
        )
        .with(Refusal::AnswersNotStored {
            cause: NotStored::AnswerNotStored,
            tool_call_ids: not_stored.into_iter().cloned().collect(),
        }));
    }
    let continues = stored.iter().any(|(_, answer)| {
        matches!(
            answer.continuation,
            Continuation::CallerResumes | Continuation::NewRun { .. }
        )
    });
    let needs_resume = stored
        .iter()
        .any(|(_, answer)| answer.continuation == Continuation::CallerResumes);
    let mut continuation = stored
        .iter()
        .map(|(_, answer)| answer.continuation.kind())
        .find(|kind| *kind != "consumed")
        .unwrap_or("consumed");
    if continues {
        if !needs_resume {
            return Ok(Answered::Continue { after: position });
        }
        let extras = baton_core::message::UserExtras::default();
        match chat_resume(
            state,
            principal,
            session_id,
            Resume::Continue,
            extras.into(),
        )
        .await
        {
            Ok(_) => return Ok(Answered::Continue { after: position }),
            // Another entry (a second tab, the deadline) resumed first: it carries the answer.
            Err(error) if error.code == ErrorCode::StateAlreadyRunning => {
                continuation = "consumed";
            }
            Err(error) if error.code == ErrorCode::StateNotResumable => {
                continuation = "awaiting_batch";
            }
            Err(error) => return Err(error),
        }
    }
    let rejected: Vec<Value> = outcomes
        .iter()
        .filter_map(|(id, o)| match o {
            Outcome::Rejected { cause, .. } => {
                Some(json!({"toolCallId": id, "cause": cause.as_str()}))
            }
            _ => None,
        })
        .collect();
    let answers: Vec<Value> = stored
        .iter()
        .map(|(id, answer)| {
            json!({
                "toolCallId": id,
                "status": match answer.status {
                    SubmitStatus::Accepted => "accepted",
                    SubmitStatus::AlreadyCompleted => "already_completed",
                },
            })
        })
        .collect();
    let mut inside: Vec<UiFrame> = rejected
        .into_iter()
        .map(|rejection| DataPart::kept("resume-rejected", None, rejection).into())
        .collect();
    inside.push(
        DataPart::kept(
            "answers",
            None,
            json!({ "continuation": continuation, "answers": answers }),
        )
        .into(),
    );
    Ok(Answered::Closed { inside })
}

/// The answer when no answer was stored and none failed transiently: 409 with the first cause
/// (400 for a malformed approval id).
fn all_rejected(outcomes: &[(String, Outcome)]) -> ApiError {
    let first = outcomes.iter().find_map(|(id, o)| match o {
        Outcome::Rejected { cause, .. } => Some((id, *cause)),
        _ => None,
    });
    let Some((id, rejection)) = first else {
        return ApiError::new(ErrorCode::Internal, "no answer was submitted");
    };
    match rejection.not_stored() {
        None => ApiError::new(
            ErrorCode::ValidationError,
            format!("the approval id of tool call {id} is not one this server issued"),
        )
        .with(Refusal::ToolCall {
            tool_call_id: id.clone(),
        }),
        Some(cause) => ApiError::new(
            ErrorCode::StateNotResumable,
            format!(
                "no answer of this request was stored (tool call {id}: {})",
                rejection.as_str()
            ),
        )
        .with(Refusal::AnswersNotStored {
            cause,
            tool_call_ids: vec![id.clone()],
        }),
    }
}

/// The frames of case B: a step that opens and closes around `inside`, then the finish.
pub(super) fn closed_step(message_id: &str, inside: Vec<UiFrame>) -> Vec<UiFrame> {
    let mut frames = vec![
        UiChunk::Start {
            message_id: message_id.to_owned(),
            message_metadata: None,
        }
        .into(),
        UiChunk::StartStep.into(),
    ];
    frames.extend(inside);
    frames.push(UiChunk::FinishStep.into());
    frames.push(
        UiChunk::Finish {
            finish_reason: None,
            message_metadata: None,
        }
        .into(),
    );
    frames
}

/// The calls the session awaits, and those the sessions below it await, by id (ids are unique
/// within a tree).
pub(super) fn pending_by_id(tree: &Tree) -> HashMap<String, PendingCall> {
    tree.root_pending
        .iter()
        .chain(tree.calls.iter().map(|c| &c.call))
        .map(|call| (call.tool_call_id.clone(), call.clone()))
        .collect()
}
