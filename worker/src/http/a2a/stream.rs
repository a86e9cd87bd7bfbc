//! The task's stream as A2A events over SSE, each a JSON-RPC response carrying the request's id:
//! `message/stream` (the message's action, then the task and its events) and
//! `tasks/resubscribe` (the task as it is, then its events from there), and the wait of a
//! blocking `message/send`. The session's own chunks after the action's position map onto
//! A2A's events: a run's start is `working`, its text deltas grow the output artifact, its
//! suspension (or a running call's question to a person) is the final `input-required` status
//! (with the calls it waits on), its end the
//! whole output artifact and the final status (`completed`, `failed` or `canceled`, the usage in
//! its metadata). A sub-agent's chunks on the same stream are not the task's and are passed
//! over. A refusal, before or during the stream, is its last event: a JSON-RPC error.

use super::{
    error::RpcError,
    rpc::{Acted, Call, params_of},
    task,
};
use crate::{
    metrics::FollowerGuard,
    ops,
    stream::{Credential, Follow, FollowerPermit},
};
use axum::response::{
    IntoResponse, Response,
    sse::{Event as SseEvent, KeepAlive, Sse},
};
use baton_core::{
    ChunkKind, StreamChunk,
    a2a::{
        Event, JsonRpcResponse, Message, MessageSendParams, Part, TaskArtifactUpdateEvent,
        TaskIdParams, TaskState, TaskStatus, TaskStatusUpdateEvent, methods,
    },
    chunk::EndStatus,
};
use futures::{StreamExt, stream};
use serde_json::Value;
use std::{convert::Infallible, time::Duration};

/// How long a blocking `message/send` waits for its turn to end or ask for input before it
/// answers the task as it is (`working`; the client then polls `tasks/get` or resubscribes).
const BLOCKING_WAIT: Duration = Duration::from_secs(60);

/// `message/stream`.
pub(super) async fn message_stream(
    call: Call,
    credential: Credential,
    id: Value,
    params: Option<Value>,
) -> Response {
    let opened = async {
        let params: MessageSendParams = params_of(methods::MESSAGE_STREAM, params)?;
        let session_id = call.target(&params)?;
        // The follower's place is taken before anything is written.
        let permit = ops::admit_follower(&call.state.app, &session_id, &credential)?;
        let acted = call.act(&params, &session_id).await?;
        let mut first = call.view(&acted.task_id).await?;
        // The task as the action left it: its events come from the chunks after it.
        first.status = TaskStatus {
            state: if acted.answered {
                TaskState::Working
            } else {
                TaskState::Submitted
            },
            message: None,
            timestamp: None,
        };
        first.artifacts.clear();
        let follow = open(&call, permit, &acted.session_id, acted.after).await?;
        Ok::<_, RpcError>(TaskStream::new(
            call,
            acted,
            Event::Task(first),
            Some(follow),
        ))
    };
    respond(id, opened.await)
}

/// `tasks/resubscribe`: the task as it is now, then, unless it has ended or waits on the
/// client, its events until it does.
pub(super) async fn resubscribe(
    call: Call,
    credential: Credential,
    id: Value,
    params: Option<Value>,
) -> Response {
    let opened = async {
        let params: TaskIdParams = params_of(methods::TASKS_RESUBSCRIBE, params)?;
        let session = call.current_task(&params.id).await?;
        let permit = ops::admit_follower(&call.state.app, &session.session_id, &credential)?;
        let now = call.view(&params.id).await?;
        let ended = now.status.state.ends_a_stream();
        let acted = Acted {
            task_id: params.id.clone(),
            session_id: session.session_id.clone(),
            after: session.last_sequence,
            answered: false,
        };
        let follow = if ended {
            None
        } else {
            Some(open(&call, permit, &session.session_id, session.last_sequence).await?)
        };
        Ok::<_, RpcError>(TaskStream::new(call, acted, Event::Task(now), follow))
    };
    respond(id, opened.await)
}

/// A blocking `message/send`'s wait: until the session's turn ends or asks for input, at most
/// [`BLOCKING_WAIT`]; a failed read ends the wait (the answer is the task as it is).
pub(super) async fn wait_for_turn(
    call: &Call,
    permit: FollowerPermit,
    acted: &Acted,
) -> Result<(), RpcError> {
    let mut follow = open(call, permit, &acted.session_id, acted.after).await?;
    let session_id = acted.session_id.clone();
    let waited = async move {
        while let Some(Ok(chunks)) = follow.next_chunks().await {
            if chunks.iter().any(|chunk| ends_the_turn(chunk, &session_id)) {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(BLOCKING_WAIT, waited).await;
    Ok(())
}

fn ends_the_turn(chunk: &StreamChunk, session_id: &str) -> bool {
    asks_a_person(chunk)
        || chunk.header.agent_id == session_id
            && matches!(
                chunk.kind,
                ChunkKind::End { .. } | ChunkKind::Suspended { .. }
            )
}

/// A running call's question, the session's own or one of its tree's (copied onto the root's
/// stream): the task asks for input while the run goes on.
fn asks_a_person(chunk: &StreamChunk) -> bool {
    matches!(chunk.kind, ChunkKind::Question { .. })
}

async fn open(
    call: &Call,
    permit: FollowerPermit,
    session_id: &str,
    after: u64,
) -> Result<Follow, RpcError> {
    let session = ops::existing_session(&call.state.app, session_id).await?;
    Ok(ops::open_follow(&call.state.app, &call.principal, session, after, permit).await?)
}

/// The SSE answer of a stream, or of its refusal (one error event), so that a client reading
/// a stream gets every answer in the same framing.
fn respond(id: Value, opened: Result<TaskStream, RpcError>) -> Response {
    match opened {
        Ok(task_stream) => {
            let counted = FollowerGuard::new(&task_stream.call.state.app.metrics.followers);
            let events = stream::unfold(
                (counted, task_stream, id),
                |(counted, mut task_stream, id)| async move {
                    let events = task_stream.next_events().await?;
                    let framed: Vec<_> = events
                        .into_iter()
                        .map(|event| Ok::<_, Infallible>(frame(&id, event)))
                        .collect();
                    Some((stream::iter(framed), (counted, task_stream, id)))
                },
            )
            .flatten();
            Sse::new(events)
                .keep_alive(KeepAlive::default())
                .into_response()
        }
        Err(refused) => {
            let event = frame(&id, Err(refused));
            Sse::new(stream::iter([Ok::<_, Infallible>(event)])).into_response()
        }
    }
}

fn frame(id: &Value, event: Result<Event, RpcError>) -> SseEvent {
    let response = match event.and_then(|event| {
        serde_json::to_value(event).map_err(|error| {
            RpcError::new(baton_core::a2a::codes::INTERNAL_ERROR, error.to_string())
        })
    }) {
        Ok(result) => JsonRpcResponse::result(id.clone(), result),
        Err(refused) => JsonRpcResponse::error(id.clone(), refused.into_object()),
    };
    SseEvent::default().data(serde_json::to_string(&response).unwrap_or_default())
}

/// One task's events: the first (the task), then those of its session's chunks, until the
/// final one.
struct TaskStream {
    call: Call,
    acted: Acted,
    first: Option<Event>,
    follow: Option<Follow>,
    /// A piece of the output artifact has been sent (the next ones append).
    streamed_output: bool,
    done: bool,
}

impl TaskStream {
    fn new(call: Call, acted: Acted, first: Event, follow: Option<Follow>) -> Self {
        Self {
            call,
            acted,
            first: Some(first),
            follow,
            streamed_output: false,
            done: false,
        }
    }

    /// The next events; `None` once the stream is over.
    async fn next_events(&mut self) -> Option<Vec<Result<Event, RpcError>>> {
        if let Some(first) = self.first.take() {
            return Some(vec![Ok(first)]);
        }
        if self.done {
            return None;
        }
        let Some(follow) = self.follow.as_mut() else {
            self.done = true;
            return None;
        };
        let chunks = match follow.next_chunks().await {
            None => {
                self.done = true;
                return None;
            }
            Some(Err(refused)) => {
                self.done = true;
                return Some(vec![Err(refused.into())]);
            }
            Some(Ok(chunks)) => chunks,
        };
        let mut events = Vec::new();
        for chunk in chunks {
            if chunk.header.agent_id != self.acted.session_id && !asks_a_person(&chunk) {
                continue;
            }
            events.extend(self.events_of(&chunk).await);
            if self.done {
                break;
            }
        }
        Some(events)
    }

    /// The events of one of the session's own chunks.
    async fn events_of(&mut self, chunk: &StreamChunk) -> Vec<Result<Event, RpcError>> {
        match &chunk.kind {
            ChunkKind::RunStart { .. } => vec![Ok(self.status(TaskState::Working, None, false))],
            ChunkKind::TextDelta { delta, .. } => {
                let append = std::mem::replace(&mut self.streamed_output, true);
                vec![Ok(self.artifact(delta.clone(), append, false))]
            }
            ChunkKind::Suspended { .. } | ChunkKind::Question { .. } => {
                self.done = true;
                // The calls it waits on, with their schemas: the task as it is now.
                match self.call.view(&self.acted.task_id).await {
                    Ok(task) => vec![Ok(Event::StatusUpdate(TaskStatusUpdateEvent {
                        task_id: task.id,
                        context_id: task.context_id,
                        status: task.status,
                        is_final: true,
                        metadata: task.metadata,
                    }))],
                    Err(refused) => vec![Err(refused)],
                }
            }
            ChunkKind::End {
                status,
                output,
                error,
                usage,
                ..
            } => {
                self.done = true;
                let cancelled = error
                    .as_ref()
                    .is_some_and(|error| error.code == baton_core::ErrorCode::FrameworkCancelled);
                let state = match status {
                    EndStatus::Completed => TaskState::Completed,
                    EndStatus::Interrupted => TaskState::Canceled,
                    EndStatus::Failed if cancelled => TaskState::Canceled,
                    EndStatus::Failed => TaskState::Failed,
                };
                let mut events = Vec::new();
                if let (TaskState::Completed, Some(output)) = (state, output) {
                    events.push(Ok(self.artifact(output.clone(), false, true)));
                }
                let message = error
                    .as_ref()
                    .map(|error| vec![Part::text(format!("{}: {}", error.code, error.message))]);
                let mut update = self.status(state, message, true);
                if let Event::StatusUpdate(update) = &mut update
                    && self.call.state.mount.serves_usage
                {
                    let mut metadata = serde_json::Map::new();
                    metadata.insert(
                        "baton".into(),
                        serde_json::json!({"usage": self.call.state.mount.shown_usage(usage)}),
                    );
                    update.metadata = Some(metadata);
                }
                events.push(Ok(update));
                events
            }
            _ => Vec::new(),
        }
    }

    fn status(&self, state: TaskState, parts: Option<Vec<Part>>, is_final: bool) -> Event {
        let message = parts.map(|parts| Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            role: baton_core::a2a::Role::Agent,
            parts,
            context_id: Some(self.acted.session_id.clone()),
            task_id: Some(self.acted.task_id.clone()),
            reference_task_ids: Vec::new(),
            metadata: None,
            extensions: Vec::new(),
        });
        Event::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.acted.task_id.clone(),
            context_id: self.acted.session_id.clone(),
            status: TaskStatus {
                state,
                message,
                timestamp: None,
            },
            is_final,
            metadata: None,
        })
    }

    fn artifact(&self, text: String, append: bool, last_chunk: bool) -> Event {
        Event::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: self.acted.task_id.clone(),
            context_id: self.acted.session_id.clone(),
            artifact: task::output_artifact(text),
            append,
            last_chunk,
            metadata: None,
        })
    }
}
