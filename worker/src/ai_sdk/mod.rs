//! The Vercel AI SDK's chat protocol over the operations, behind `POST /chat`,
//! `GET /chat/{id}/stream` and `GET /chat/{id}/snapshot`: `useChat` (package `ai` 6.x,
//! `DefaultChatTransport`) over Baton's sessions, the chat id naming the session. Only the trailing message of a request is read:
//! a user message starts the session or its next turn, an assistant message carries answers
//! (`answers.rs`), a regenerate rewinds (`turn.rs`). What a response streams is the session's
//! own stream mapped to UI chunks (`mapper.rs`, `ui.rs`); a reload reads the snapshot
//! (`snapshot.rs`).

mod answers;
mod mapper;
#[cfg(test)]
mod mapper_tests;
mod request;
mod snapshot;
mod turn;
mod ui;

pub use answers::Rejection;
pub use mapper::{ToolRole, UiStreamMapper, tool_role};
pub use request::{ChatBody, Trigger};
pub use snapshot::{SnapshotInputs, ui_messages};
pub use ui::{DataPart, FinishReason, UiChunk, UiFrame};

use crate::{
    auth::Principal,
    ops::{checked_address, no_session},
    state::AppState,
};
use baton_core::{
    Agent, ApiError, ErrorCode, Message,
    session::{SessionState, Status},
};
use request::Trailing;
use serde::Serialize;
use serde_json::Value;
use std::{collections::HashSet, sync::Arc};

/// Largest `POST /chat` body: the whole UI history travels with every request.
pub const MAX_CHAT_REQUEST_BYTES: usize = 10 << 20;

/// What a chat request is answered with.
pub enum ChatReply {
    /// Follow the session's stream after `after` and send what `mapper` makes of it, behind
    /// `prefix`.
    Stream {
        session_id: String,
        after: u64,
        prefix: Vec<UiFrame>,
        mapper: Box<UiStreamMapper>,
    },
    /// A complete answer (case B).
    Closed(Vec<UiFrame>),
}

/// `POST /chat`: authorizes the chat id, reads the trailing message and acts on it.
pub async fn chat_post(
    state: &AppState,
    principal: &Principal,
    body: ChatBody,
) -> Result<ChatReply, ApiError> {
    principal.may_act_on(&state.store, &body.id).await?;
    let address = checked_address(&body.id)?;
    let trailing = body.trailing()?;
    let session = state.store.session(&address).await?;
    let chat_id = body.id.clone();
    let (start, trailing_calls) = match (body.trigger, trailing) {
        (Trigger::RegenerateMessage, _) => (
            turn::regenerate(state, &chat_id, session).await?,
            HashSet::new(),
        ),
        (Trigger::SubmitMessage, Trailing::User { text }) => {
            let start = turn::user_turn(
                state, principal, &chat_id, body.agent, body.meta, text, session,
            )
            .await?;
            (start, HashSet::new())
        }
        (
            Trigger::SubmitMessage,
            Trailing::Assistant {
                id,
                tool_parts,
                last_step,
            },
        ) => {
            let session = session.ok_or_else(|| no_session(&chat_id))?;
            let pending = answers::pending_by_id(state, &address).await?;
            let parts = answers::answer_parts(&tool_parts, last_step, &pending);
            let answered = answers::submit_answers(
                state,
                principal,
                &chat_id,
                session.last_sequence,
                &parts,
                &pending,
            )
            .await?;
            match answered {
                answers::Answered::Closed { inside } => {
                    return Ok(ChatReply::Closed(answers::closed_step(&id, inside)));
                }
                answers::Answered::Continue { after } => {
                    let calls = tool_parts.into_iter().map(|p| p.tool_call_id).collect();
                    (
                        turn::TurnStart {
                            after,
                            message_id: id,
                        },
                        calls,
                    )
                }
            }
        }
    };
    let session = state
        .store
        .session(&address)
        .await?
        .ok_or_else(|| no_session(&chat_id))?;
    Ok(ChatReply::Stream {
        mapper: Box::new(UiStreamMapper::new(
            agent_of(state, &session)?,
            &chat_id,
            trailing_calls,
        )),
        session_id: chat_id,
        after: start.after,
        prefix: vec![
            UiChunk::Start {
                message_id: start.message_id,
            }
            .into(),
        ],
    })
}

/// `GET /chat/{id}/stream`: the running turn, from the snapshot's position, into the message
/// the snapshot ends with (or a new one); `None` (204) when no run works.
pub async fn chat_reattach(
    state: &AppState,
    principal: &Principal,
    chat_id: &str,
) -> Result<Option<ChatReply>, ApiError> {
    principal.may_act_on(&state.store, chat_id).await?;
    let address = checked_address(chat_id)?;
    let Some(session) = state.store.session(&address).await? else {
        return Ok(None);
    };
    if session.status != Status::Active {
        return Ok(None);
    }
    let Some(snapshot) = state.store.snapshot(&address).await? else {
        return Ok(None);
    };
    let log = state.store.messages(&address).await?;
    let turn = turn::user_turns(&log);
    let pinned = &snapshot.messages;
    // The calls the client's trailing message holds: those of the turn's assistant messages in
    // the snapshot, when the snapshot has reached this turn's user message.
    let known: HashSet<String> = if turn::user_turns(pinned) == turn {
        pinned
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .flat_map(|m| match m {
                Message::Assistant { tool_calls, .. } => {
                    tool_calls.iter().map(|c| c.id.clone()).collect()
                }
                _ => Vec::new(),
            })
            .collect()
    } else {
        HashSet::new()
    };
    Ok(Some(ChatReply::Stream {
        mapper: Box::new(UiStreamMapper::new(
            agent_of(state, &session)?,
            chat_id,
            known,
        )),
        session_id: chat_id.to_owned(),
        after: u64::try_from(snapshot.stream_sequence).unwrap_or(session.last_sequence),
        prefix: vec![
            UiChunk::Start {
                message_id: snapshot::assistant_message_id(turn),
            }
            .into(),
        ],
    }))
}

/// `POST /chat/{id}/stop`: interrupts the chat's run, as `POST /interrupt` does.
pub async fn chat_stop(
    state: &AppState,
    principal: &Principal,
    chat_id: &str,
) -> Result<baton_core::api::StopResponse, ApiError> {
    principal.may_act_on(&state.store, chat_id).await?;
    checked_address(chat_id)?;
    crate::ops::stop_session(state, chat_id, baton_core::store::StopKind::Interrupt).await
}

/// The answer of `GET /chat/{id}/snapshot`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatSnapshot {
    pub id: String,
    pub status: Status,
    /// Whether a run works now: attach with `GET /chat/{id}/stream` (`resumeStream()`).
    pub streaming: bool,
    pub messages: Vec<Value>,
}

/// `GET /chat/{id}/snapshot`: the session's UI messages.
pub async fn chat_snapshot(
    state: &AppState,
    principal: &Principal,
    chat_id: &str,
) -> Result<ChatSnapshot, ApiError> {
    principal.may_act_on(&state.store, chat_id).await?;
    let address = checked_address(chat_id)?;
    let session = state
        .store
        .session(&address)
        .await?
        .ok_or_else(|| no_session(chat_id))?;
    let agent = agent_of(state, &session)?;
    let snapshot = state
        .store
        .snapshot(&address)
        .await?
        .ok_or_else(|| no_session(chat_id))?;
    let pending = answers::pending_by_id(state, &address).await?;
    let stored = state.store.answers(&address).await?;
    let checkpoints = state.store.checkpoints(&address).await?;
    let approval_ids = checkpoints
        .iter()
        .flat_map(|c| c.pending.iter())
        .filter_map(|p| Some((p.tool_call_id.clone(), p.approval_id.clone()?)))
        .collect();
    let inputs = SnapshotInputs {
        agent: &agent,
        pending: &pending,
        answers: &stored,
        approval_ids: &approval_ids,
    };
    Ok(ChatSnapshot {
        id: chat_id.to_owned(),
        status: snapshot.status,
        streaming: snapshot.status == Status::Active,
        messages: ui_messages(&snapshot.messages, &inputs),
    })
}

/// The agent of a session, or `unknown_agent_type` when this server does not serve it.
fn agent_of(state: &AppState, session: &SessionState) -> Result<Arc<Agent>, ApiError> {
    state
        .registry
        .get(&session.agent_type)
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::UnknownAgentType,
                format!("this server has no agent type {:?}", session.agent_type),
            )
        })
}
