//! `GET {base}/{agentType}/sse?sessionId=&fromSequence=`: the session's stream after the cursor
//! (exclusive), at the mount's fidelity, each chunk with its own sequence as the SSE `id:`. The
//! stream ends with the turn's `end`: the run's `end` chunk, or, when the session suspends for
//! people, an `end` with status `paused` after its `suspended` chunk (carrying that chunk's
//! sequence, so a reconnect from it gets the same `end` again while the session waits). A
//! follower that attaches at or after the last chunk of a session whose turn has ended (paused,
//! or ended) gets that turn's `end` at once, rebuilt from the session, rather than an empty
//! stream. A cursor below the retention floor is a last `error` event with the `TRUNCATED`
//! envelope.

use super::{MountState, error::MountError, guard::MountQuery};
use crate::{auth::Principal, http::SessionQuery, metrics::FollowerGuard, ops, stream::Follow};
use axum::{
    Extension,
    extract::{Path, State},
    response::sse::{Event, KeepAlive, Sse},
};
use baton_core::{
    ApiError, ChunkKind, StreamChunk,
    remote::Status,
    store::{SessionAddress, Status as Baton},
};
use futures::{Stream, StreamExt, stream};
use serde_json::{Value, json};
use std::convert::Infallible;

pub(super) async fn sse(
    State(state): State<MountState>,
    Extension(principal): Extension<Principal>,
    Extension(credential): Extension<crate::stream::Credential>,
    Path(agent_type): Path<String>,
    MountQuery(query): MountQuery<SessionQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, MountError> {
    let session = state
        .session(&principal, &agent_type, &query.session_id)
        .await?;
    let permit = ops::admit_follower(&state.app, &query.session_id, &credential)?;
    let counted = FollowerGuard::new(&state.app.metrics.followers);
    let follow = ops::open_follow(
        &state.app,
        &principal,
        session.clone(),
        query.from_sequence,
        permit,
    )
    .await?;
    let followed = MountFollow {
        address: SessionAddress {
            root_session_id: session.root_session_id,
            session_id: session.session_id,
        },
        state,
        follow,
        position: query.from_sequence,
        watch_pause: session.status == Baton::SuspendedClientTool,
        at_open: Status::of(session.status).ends_a_turn(),
        done: false,
    };
    let events = stream::unfold((counted, followed), |(counted, mut followed)| async move {
        let events = followed.next_events().await?;
        Some((
            stream::iter(events.into_iter().map(Ok)),
            (counted, followed),
        ))
    })
    .flatten();
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// One follower of a session through a mount.
struct MountFollow {
    state: MountState,
    address: SessionAddress,
    follow: Follow,
    /// The sequence of the last chunk read (shown or suppressed).
    position: u64,
    /// The session is (or has just been) suspended: look for the paused end after each read.
    watch_pause: bool,
    /// The session's turn had ended when the follower attached: look for its end before the
    /// first read (a follower past the last chunk would get nothing else).
    at_open: bool,
    done: bool,
}

impl MountFollow {
    /// The next events; `None` once the stream is over.
    async fn next_events(&mut self) -> Option<Vec<Event>> {
        if self.done {
            return None;
        }
        let look = std::mem::take(&mut self.at_open);
        if (look || self.watch_pause)
            && let Some(end) = self.turn_end(!look).await
        {
            self.done = true;
            return Some(vec![end]);
        }
        let chunks = match self.follow.next_chunks().await? {
            Ok(chunks) => chunks,
            Err(error) => {
                self.done = true;
                return Some(vec![error_event(error)]);
            }
        };
        let mut events: Vec<Event> = chunks.iter().filter_map(|c| self.event(c)).collect();
        if let Some(last) = chunks.last() {
            self.position = last.sequence;
        }
        if chunks
            .iter()
            .any(|c| matches!(c.kind, ChunkKind::Suspended { .. }))
        {
            self.watch_pause = true;
        }
        if self.watch_pause
            && let Some(end) = self.turn_end(true).await
        {
            self.done = true;
            events.push(end);
        }
        Some(events)
    }

    /// A chunk as the mount shows it, as an event with its sequence as the `id:`.
    fn event(&self, chunk: &StreamChunk) -> Option<Event> {
        let shown = self.state.mount.shown_chunk(chunk)?;
        Some(
            Event::default()
                .id(chunk.sequence.to_string())
                .data(shown.to_string()),
        )
    }

    /// The end of the session's ended turn (only a paused one with `paused_only`), when the
    /// follower has read all of its stream, rebuilt from the session: its status, output and
    /// error, its state and rollup as the mount shows them, the last chunk's sequence. `None`
    /// otherwise (a failed read is logged, and looked at again after the next read).
    async fn turn_end(&self, paused_only: bool) -> Option<Event> {
        let store = &self.state.app.store;
        let read = async {
            let Some(session) = store.session(&self.address).await? else {
                return Ok(None);
            };
            let status = Status::of(session.status);
            let ended = if paused_only {
                status == Status::Paused
            } else {
                status.ends_a_turn()
            };
            if !ended || session.last_sequence > self.position {
                return Ok(None);
            }
            let rollup = store.usage_rollup(&self.address).await?.unwrap_or_default();
            let custom_state = store.custom_state(&self.address).await?;
            Ok::<_, baton_core::store::Error>(Some((session, rollup, custom_state)))
        };
        let (session, rollup, custom_state) = match read.await {
            Ok(found) => found?,
            Err(error) => {
                tracing::warn!(%error, "reading a session for its turn's end failed");
                return None;
            }
        };
        let mut end = json!({
            "sequence": session.last_sequence,
            "streamId": session.stream_id,
            "sessionId": session.session_id,
            "agentId": session.session_id,
            "runId": session.run_id,
            "timestamp": now_ms(),
            "type": "end",
            "status": Status::of(session.status),
            "usage": self.state.mount.shown_usage(&rollup),
        });
        if let Some(fields) = end.as_object_mut() {
            if let Some(state) = custom_state {
                fields.insert("state".into(), self.state.mount.shown_state(state));
            }
            if let Some(output) = session.output {
                fields.insert("output".into(), Value::String(output));
            }
            if let Some(error) = session.error.and_then(|e| serde_json::to_value(e).ok()) {
                fields.insert("error".into(), error);
            }
        }
        Some(
            Event::default()
                .id(session.last_sequence.to_string())
                .data(end.to_string()),
        )
    }
}

/// A typed error as the stream's last event, named `error`: the mount's envelope.
fn error_event(error: ApiError) -> Event {
    let error = MountError::from(error);
    let body: Value = serde_json::to_value(error.body()).unwrap_or(Value::Null);
    Event::default().event("error").data(body.to_string())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
