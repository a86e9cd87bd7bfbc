//! The Vercel AI SDK's chat protocol over the operations, behind `POST /chat`,
//! `GET /chat/{id}/stream` and `GET /chat/{id}/snapshot`: `useChat` (package `ai` 6.x,
//! `DefaultChatTransport`) over Baton's sessions, the chat id naming the session. Only the trailing message of a request is read:
//! a user message starts the session or its next turn, an assistant message carries answers
//! (`answers.rs`), a regenerate rewinds (`turn.rs`). What a response streams is the session's
//! own stream mapped to UI chunks (`mapper.rs`, `ui.rs`); a reload reads the snapshot
//! (`snapshot.rs`).

mod answers;
mod files;
mod mapper;
#[cfg(test)]
mod mapper_tests;
pub mod relayed;
mod request;
mod snapshot;
mod tree;
mod turn;
mod ui;

pub use answers::Rejection;
pub use files::{MAX_CHAT_FILE_BYTES, MAX_CHAT_FILES, MAX_FILENAME_BYTES};
pub use mapper::{ToolRole, UiStreamMapper, tool_role};
pub use request::{ChatBody, MAX_MESSAGE_PARTS, Trigger};
pub use snapshot::{SnapshotInputs, ui_messages};
pub use tree::{Tree, TreeCall};
pub use ui::{DataPart, FinishReason, UiChunk, UiFrame};

use crate::{
    auth::Principal,
    ops::{checked_address, no_session},
    state::AppState,
};
use baton_core::{
    Agent, ApiError, ErrorCode, Message,
    session::{SessionState, Status},
    store::now_ms,
};
use request::Trailing;
use serde::Serialize;
use serde_json::Value;
use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

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

/// What the client's message holds already, for the mapper of the response that goes on with
/// it.
#[derive(Default)]
struct ClientHolds {
    /// The tool calls it has a part for.
    calls: HashSet<String>,
    /// The agent types of the sessions below the root, by session id.
    agent_types: HashMap<String, String>,
    /// The root's sub-agent calls whose child has not ended (id, tool name, input): no part.
    open_sub_agent_calls: Vec<(String, String, Value)>,
    /// The calls remote children relayed (id, role): a forwarded end of one is its output.
    relayed: Vec<(String, ToolRole)>,
}

impl ClientHolds {
    fn mapper(self, state: &AppState, agent: Arc<Agent>, chat_id: &str) -> UiStreamMapper {
        UiStreamMapper::new(agent, chat_id, self.calls)
            .with_tree(state.registry.clone(), self.agent_types)
            .with_open_sub_agent_calls(self.open_sub_agent_calls)
            .with_relayed_calls(self.relayed)
    }
}

/// `POST /chat`: authorizes the chat id, reads the trailing message and acts on it.
pub async fn chat_post(
    state: &AppState,
    principal: &Principal,
    body: ChatBody,
) -> Result<ChatReply, ApiError> {
    crate::ops::authorize(state, principal, "chat", &body.id).await?;
    let address = checked_address(&body.id)?;
    let trailing = body.trailing()?;
    let session = state.store.session(&address).await?;
    let chat_id = body.id.clone();
    // A new message's `createdAt`: when the route took the user message it answers (kept with
    // that message, so a reload gives the same), or now for a regenerated one.
    let created_at = now_ms();
    let (start, holds) = match (body.trigger, trailing) {
        (Trigger::RegenerateMessage, _) => (
            turn::regenerate(state, principal, &chat_id, session).await?,
            ClientHolds::default(),
        ),
        (Trigger::SubmitMessage, Trailing::User { text, mut extras }) => {
            extras.received_at = Some(created_at);
            let message = turn::UserMessage { text, extras };
            let edited = body.message_id.as_deref();
            let start = turn::user_turn(
                state, principal, &chat_id, body.agent, body.meta, message, session, edited,
            )
            .await?;
            (start, ClientHolds::default())
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
            let below = tree::read(state, &address).await?;
            let pending = answers::pending_by_id(&below);
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
                    let holds = ClientHolds {
                        calls: tool_parts.into_iter().map(|p| p.tool_call_id).collect(),
                        relayed: relayed_roles(state, &below),
                        agent_types: below.agent_types,
                        // The root's sub-agent calls the suspended tree waits on.
                        open_sub_agent_calls: pending
                            .into_values()
                            .filter(|call| call.kind.is_sub_agent())
                            .map(|call| (call.tool_call_id, call.tool_name, call.input))
                            .collect(),
                    };
                    let start = turn::TurnStart {
                        after,
                        message_id: id,
                    };
                    (start, holds)
                }
            }
        }
    };
    let session = state
        .store
        .session(&address)
        .await?
        .ok_or_else(|| no_session(&chat_id))?;
    // A new message (not a continuation of one the client holds) is created now.
    let fresh = holds.calls.is_empty();
    Ok(ChatReply::Stream {
        mapper: Box::new(holds.mapper(state, agent_of(state, &session)?, &chat_id)),
        session_id: chat_id,
        after: start.after,
        prefix: vec![
            UiChunk::Start {
                message_id: start.message_id,
                message_metadata: fresh.then(|| serde_json::json!({ "createdAt": created_at })),
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
    crate::ops::authorize(state, principal, "chat", chat_id).await?;
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
    // The turn's message was created when the route took its user message, as its snapshot says.
    let created_at = log.iter().rev().find_map(|m| match m {
        Message::User { chat, .. } => Some(chat.as_ref().and_then(|chat| chat.received_at)),
        _ => None,
    });
    let pinned = &snapshot.messages;
    // The calls the client's trailing message holds: those of the turn's assistant messages in
    // the snapshot, when the snapshot has reached this turn's user message, but the sub-agent
    // calls whose child has not ended (no part until it has).
    let agent = agent_of(state, &session)?;
    let turn_messages: &[Message] = if turn::user_turns(pinned) == turn {
        let from = pinned
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }))
            .map_or(0, |user| user + 1);
        &pinned[from..]
    } else {
        &[]
    };
    let ended: HashSet<&str> = turn_messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut holds = ClientHolds::default();
    for call in turn_messages.iter().flat_map(|m| match m {
        Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
        _ => &[],
    }) {
        holds.calls.insert(call.id.clone());
        if tool_role(&agent, &call.name) == ToolRole::SubAgent && !ended.contains(call.id.as_str())
        {
            let open = (call.id.clone(), call.name.clone(), call.arguments.clone());
            holds.open_sub_agent_calls.push(open);
        }
    }
    // The calls the sessions below await are in the snapshot's message too.
    let below = tree::read(state, &address).await?;
    holds
        .calls
        .extend(below.calls.iter().map(|c| c.call.tool_call_id.clone()));
    holds.relayed = relayed_roles(state, &below);
    holds.agent_types = below.agent_types;
    Ok(Some(ChatReply::Stream {
        mapper: Box::new(holds.mapper(state, agent, chat_id)),
        session_id: chat_id.to_owned(),
        after: u64::try_from(snapshot.stream_sequence).unwrap_or(session.last_sequence),
        prefix: vec![
            UiChunk::Start {
                message_id: snapshot::assistant_message_id(turn),
                message_metadata: created_at
                    .flatten()
                    .map(|at| serde_json::json!({ "createdAt": at })),
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
    checked_address(chat_id)?;
    crate::ops::chat_stop(state, principal, chat_id).await
}

/// The answer of `GET /chat/{id}/snapshot`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
    crate::ops::authorize(state, principal, "chat", chat_id).await?;
    let address = checked_address(chat_id)?;
    // Independent reads, sent at once: a reload waits for one round trip, not four.
    let store = &state.store;
    let (session, snapshot, below, checkpoints) = futures::try_join!(
        async { Ok::<_, ApiError>(store.session(&address).await?) },
        async { Ok(store.snapshot(&address).await?) },
        tree::read(state, &address),
        async { Ok(store.checkpoints(&address).await?) },
    )?;
    let session = session.ok_or_else(|| no_session(chat_id))?;
    let agent = agent_of(state, &session)?;
    let snapshot = snapshot.ok_or_else(|| no_session(chat_id))?;
    let pending = answers::pending_by_id(&below);
    let mut stored = below.root_answers.clone();
    stored.extend(below.calls.iter().filter_map(|c| {
        let answer = c.answer.clone()?;
        Some((c.call.tool_call_id.clone(), answer))
    }));
    let approval_ids = checkpoints
        .iter()
        .flat_map(|c| c.pending.iter())
        .filter_map(|p| Some((p.tool_call_id.clone(), p.approval_id.clone()?)))
        .collect();
    // An interrupt writes no log entry: its finish (the `end` chunk's time and usage) comes from
    // the session's stop record and usage, for the message it cut short.
    let interrupted = match (snapshot.status, &session.stop) {
        (Status::Interrupted, Some(stop)) => {
            let usage = state
                .store
                .usage_rollup(&address)
                .await?
                .unwrap_or_default();
            Some(baton_core::message::finish_metadata(stop.at, Some(&usage)))
        }
        _ => None,
    };
    let inputs = SnapshotInputs {
        agent: &agent,
        pending: &pending,
        answers: &stored,
        approval_ids: &approval_ids,
        registry: &state.registry,
        tree: &below.calls,
        interrupted: interrupted.as_ref(),
    };
    Ok(ChatSnapshot {
        id: chat_id.to_owned(),
        status: snapshot.status,
        streaming: snapshot.status == Status::Active,
        messages: ui_messages(&snapshot.messages, &inputs),
    })
}

/// The calls remote children relayed to the tree, with their roles.
fn relayed_roles(state: &AppState, tree: &Tree) -> Vec<(String, ToolRole)> {
    tree.calls
        .iter()
        .filter(|call| call.relayed)
        .filter_map(|call| Some((call.call.tool_call_id.clone(), call.role(&state.registry)?)))
        .collect()
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
