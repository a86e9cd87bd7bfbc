//! A chat reply as the HTTP answer `ai`'s `DefaultChatTransport` reads: SSE `data:` frames of UI
//! chunks ending with `data: [DONE]`, with the UI message stream's headers; and, for an app that
//! opts in, the stop of the run when the client aborts the answer.

use crate::{
    ai_sdk::{ChatReply, UiFrame, UiStreamMapper, relayed},
    auth::Principal,
    metrics::FollowerGuard,
    state::AppState,
    stream::FollowerPermit,
};
use axum::{
    http::{HeaderName, HeaderValue},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use baton_core::{ApiError, escape::bounded, store::StopKind};
use futures::{StreamExt, stream};
use std::convert::Infallible;

/// The header that tells `ai` the body is a UI message stream, and its protocol version.
const UI_STREAM_HEADER: &str = "x-vercel-ai-ui-message-stream";

/// The request header by which an app opts in to a stop on abort: `x-baton-stop-on-abort: true`
/// on `POST /chat` makes the answer's end before the turn's (the client aborted: `useChat`'s
/// `stop()`) interrupt the run. Off by default: a reload or a lost connection also ends an
/// answer early, and the turn goes on for the next attach.
pub(super) const STOP_ON_ABORT_HEADER: &str = "x-baton-stop-on-abort";

/// Interrupts the chat's run when dropped while armed: the answer ended before the turn did.
struct StopOnAbort {
    state: AppState,
    session_id: String,
    armed: bool,
}

impl Drop for StopOnAbort {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let state = self.state.clone();
        let session_id = std::mem::take(&mut self.session_id);
        tokio::spawn(async move {
            let stopped = crate::ops::stop_session(&state, &session_id, StopKind::Interrupt).await;
            let outcome = stopped.as_ref().map_or_else(|e| e.code.as_str(), |_| "ok");
            tracing::info!(session_id = %bounded(&session_id), outcome, "the chat's answer was aborted: its run is interrupted");
        });
    }
}

/// The SSE answer of a chat reply. A streamed reply follows the session from its position
/// until the mapper says the run suspended or ended; a stream error becomes an `error` chunk.
/// `permit` is the follower's place under the caps, taken before the request wrote anything; a
/// revocation of `principal`'s token ends the answer with an `error` chunk, as any stream error.
pub(super) async fn respond(
    state: AppState,
    reply: ChatReply,
    permit: FollowerPermit,
    principal: &Principal,
    stop_on_abort: bool,
) -> Result<Response, ApiError> {
    let events = match reply {
        ChatReply::Closed(frames) => stream::iter(frames.into_iter().map(frame_event)).boxed(),
        ChatReply::Stream {
            session_id,
            after,
            prefix,
            mapper,
        } => {
            let counted = FollowerGuard::new(&state.metrics.followers);
            let abort_state = state.clone();
            let read_state = state.clone();
            let session = crate::ops::existing_session(&state, &session_id).await?;
            let follow = crate::ops::open_follow(&state, principal, session, after, permit).await?;
            // Armed once the answer is about to stream (a refusal before it stops nothing).
            let abort = StopOnAbort {
                state: abort_state,
                session_id: session_id.clone(),
                armed: stop_on_abort,
            };
            let start = Some((counted, follow, mapper, abort));
            let rest = stream::unfold(start, move |progress| {
                let state = read_state.clone();
                async move {
                    let (counted, mut follow, mut mapper, mut abort) = progress?;
                    let frames = match follow.next_chunks().await {
                        Some(Ok(chunks)) => {
                            let mut frames = Vec::new();
                            for chunk in &chunks {
                                if mapper.reads_relayed_before(chunk) {
                                    relayed_into(&state, &mut mapper, &chunk.header.session_id)
                                        .await;
                                }
                                frames.extend(mapper.map(chunk));
                                if mapper.is_finished() {
                                    break;
                                }
                            }
                            frames
                        }
                        Some(Err(error)) => mapper.fail(format!("{}: {}", error.code, error.error)),
                        None => mapper.fail("the stream ended before the run did".to_owned()),
                    };
                    // The turn is over (or failed): an answer ending now aborts nothing.
                    abort.armed &= !mapper.is_finished();
                    let next = (!mapper.is_finished()).then_some((counted, follow, mapper, abort));
                    Some((stream::iter(frames.into_iter().map(frame_event)), next))
                }
            })
            .flatten();
            stream::iter(prefix.into_iter().map(frame_event))
                .chain(rest)
                .boxed()
        }
    };
    let done = stream::once(async { Ok::<_, Infallible>(Event::default().data("[DONE]")) });
    let mut response = Sse::new(events.chain(done))
        .keep_alive(KeepAlive::default())
        .into_response();
    let headers = response.headers_mut();
    headers.insert(
        HeaderName::from_static(UI_STREAM_HEADER),
        HeaderValue::from_static("v1"),
    );
    headers.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    Ok(response)
}

/// Gives `mapper` the calls remote children of `root_session_id`'s tree relayed (see
/// `ai_sdk::relayed`); a failed read adds none (they show on the next reload).
async fn relayed_into(state: &AppState, mapper: &mut UiStreamMapper, root_session_id: &str) {
    match relayed::calls(state, root_session_id).await {
        Ok(calls) => mapper.add_relayed(calls),
        Err(error) => tracing::warn!(
            session_id = %bounded(root_session_id),
            code = %error.code,
            "the calls remote children relayed could not be read for the chat"
        ),
    }
}

fn frame_event(frame: UiFrame) -> Result<Event, Infallible> {
    Ok(Event::default().data(frame.to_json()))
}
