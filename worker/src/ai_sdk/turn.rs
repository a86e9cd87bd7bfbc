//! A user message (the chat's first, which starts the session named by the chat id, or its next
//! turn, which abandons calls still awaited) and a regenerate (a rewind to the checkpoint before
//! the last user message's answer).

use super::snapshot::assistant_message_id;
use crate::{
    auth::Principal,
    ops::{ResumeWith, already_running, chat_resume, chat_start, checked_address, no_session},
    state::AppState,
};
use baton_core::{
    ApiError, ErrorCode, Message, SessionMeta,
    api::{Resume, StartRequest},
    message::UserExtras,
    session::{SessionState, Status},
};

/// Where a turn's stream starts and the id of the message it streams into.
pub(super) struct TurnStart {
    pub(super) after: u64,
    pub(super) message_id: String,
}

/// A user message as the chat sent it: its text and what it carries besides.
pub(super) struct UserMessage {
    pub(super) text: String,
    pub(super) extras: UserExtras,
}

/// The number of user messages in a log: the turn its last one opened.
pub(super) fn user_turns(log: &[Message]) -> usize {
    log.iter()
        .filter(|m| matches!(m, Message::User { .. }))
        .count()
}

/// Sends a user message: starts the session (an operator only; the body names the agent type)
/// or, for an existing one that is not running, its next turn (`with_message`, abandoning
/// calls still awaited). `edited` is the request's `messageId` (`useChat`'s `sendMessage` with
/// a `messageId` edits that message): naming a user message of the log whose id the trailing
/// message carries, the turn replaces it ([`edit`]) rather than following it.
#[allow(clippy::too_many_arguments)]
pub(super) async fn user_turn(
    state: &AppState,
    principal: &Principal,
    chat_id: &str,
    agent: Option<String>,
    meta: SessionMeta,
    message: UserMessage,
    session: Option<SessionState>,
    edited: Option<&str>,
) -> Result<TurnStart, ApiError> {
    let UserMessage { text, extras } = message;
    let Some(session) = session else {
        if matches!(principal, Principal::Session { .. }) {
            // A session token's refusal comes first, whatever the body says.
            principal.may_start("", None)?;
        }
        let agent = agent.ok_or_else(|| {
            ApiError::new(
                ErrorCode::ValidationError,
                "the chat's first message needs the agent type in the body field `agent`",
            )
        })?;
        chat_start(
            state,
            principal,
            StartRequest {
                session_id: Some(chat_id.to_owned()),
                user_id: meta.user_id,
                tags: meta.tags,
                metadata: meta.metadata,
                ..StartRequest::new(agent, text)
            },
            extras,
        )
        .await?;
        return Ok(TurnStart {
            after: 0,
            message_id: assistant_message_id(1),
        });
    };
    if session.status == Status::Active {
        return Err(already_running());
    }
    let address = checked_address(chat_id)?;
    let log = state.store.messages(&address).await?;
    let edits = edited.filter(|id| extras.id.as_deref() == Some(*id));
    if let Some(index) = edits.and_then(|id| user_message_at(&log, id)) {
        let message = UserMessage { text, extras };
        return edit(state, principal, chat_id, &session, &log, index, message).await;
    }
    let resume = Resume::WithMessage {
        message: text,
        abandon_pending: true,
    };
    chat_resume(state, principal, chat_id, resume, extras.into()).await?;
    Ok(TurnStart {
        after: session.last_sequence,
        message_id: assistant_message_id(user_turns(&log) + 1),
    })
}

/// The index in `log` of the user message whose client id is `id`.
fn user_message_at(log: &[Message], id: &str) -> Option<usize> {
    log.iter().position(|m| {
        matches!(m, Message::User { chat: Some(extras), .. } if extras.id.as_deref() == Some(id))
    })
}

/// Edits the user message at `index` of the log: rewinds to the newest checkpoint before it
/// and sends `message` in its place (its id kept), abandoning calls that checkpoint awaited;
/// what came after the old message is gone from the log, as from the client's copy. A message
/// no checkpoint precedes (the chat's first) is in the session's first checkpoint, which never
/// awaits a call: the rewind to it keeps only the messages before the edited one.
async fn edit(
    state: &AppState,
    principal: &Principal,
    chat_id: &str,
    session: &SessionState,
    log: &[Message],
    index: usize,
    message: UserMessage,
) -> Result<TurnStart, ApiError> {
    let address = checked_address(chat_id)?;
    let checkpoints = state.store.checkpoints(&address).await?;
    let before = checkpoints
        .iter()
        .rev()
        .find(|checkpoint| checkpoint.message_count <= index as u64);
    let (checkpoint, keep_messages) = match before {
        Some(checkpoint) => (checkpoint, None),
        None => {
            let first = checkpoints
                .iter()
                .find(|checkpoint| checkpoint.pending.is_empty())
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::StateNotResumable,
                        "the session has no checkpoint to go back to",
                    )
                })?;
            (first, Some(index as u64))
        }
    };
    let UserMessage { text, extras } = message;
    let resume = Resume::FromCheckpoint {
        checkpoint_id: checkpoint.id,
        message: Some(text),
        abandon_pending: true,
    };
    let with = ResumeWith {
        extras,
        keep_messages,
    };
    chat_resume(state, principal, chat_id, resume, with).await?;
    Ok(TurnStart {
        after: session.last_sequence,
        message_id: assistant_message_id(user_turns(&log[..index]) + 1),
    })
}

/// Regenerates the answer to the last user message: rewinds to the newest checkpoint whose log
/// ends with that message (and goes on), or else to the newest one before it and sends the
/// message again (abandoning calls that checkpoint awaited). Refused with
/// `state_already_running` while a run works, and `state_not_resumable` when the log has no
/// user message or no checkpoint before it.
pub(super) async fn regenerate(
    state: &AppState,
    principal: &Principal,
    chat_id: &str,
    session: Option<SessionState>,
) -> Result<TurnStart, ApiError> {
    let session = session.ok_or_else(|| no_session(chat_id))?;
    if session.status == Status::Active {
        return Err(already_running());
    }
    let address = checked_address(chat_id)?;
    let log = state.store.messages(&address).await?;
    let nothing = || {
        ApiError::new(
            ErrorCode::StateNotResumable,
            "there is no answer to regenerate",
        )
    };
    let (index, text, extras) = log
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, m)| match m {
            Message::User { content, chat } => Some((
                index,
                content.clone(),
                chat.as_deref().cloned().unwrap_or_default(),
            )),
            _ => None,
        })
        .ok_or_else(nothing)?;
    let checkpoints = state.store.checkpoints(&address).await?;
    let through = index as u64 + 1;
    let resume = checkpoints
        .iter()
        .rev()
        .find_map(|checkpoint| {
            if checkpoint.message_count == through {
                Some(Resume::FromCheckpoint {
                    checkpoint_id: checkpoint.id,
                    message: None,
                    abandon_pending: false,
                })
            } else if checkpoint.message_count < through {
                Some(Resume::FromCheckpoint {
                    checkpoint_id: checkpoint.id,
                    message: Some(text.clone()),
                    abandon_pending: true,
                })
            } else {
                None
            }
        })
        .ok_or_else(nothing)?;
    // A message sent again keeps its id, metadata and files.
    chat_resume(state, principal, chat_id, resume, extras.into()).await?;
    Ok(TurnStart {
        after: session.last_sequence,
        message_id: assistant_message_id(user_turns(&log[..through as usize])),
    })
}
