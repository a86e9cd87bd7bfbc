//! A chat reply as the HTTP answer `ai`'s `DefaultChatTransport` reads: SSE `data:` frames of UI
//! chunks ending with `data: [DONE]`, with the UI message stream's headers.

use crate::{
    ai_sdk::{ChatReply, UiFrame},
    metrics::FollowerGuard,
    state::AppState,
    stream::{Follow, FollowerPermit},
};
use axum::{
    http::{HeaderName, HeaderValue},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use baton_core::ApiError;
use futures::{StreamExt, stream};
use std::convert::Infallible;

/// The header that tells `ai` the body is a UI message stream, and its protocol version.
const UI_STREAM_HEADER: &str = "x-vercel-ai-ui-message-stream";

/// The SSE answer of a chat reply. A streamed reply follows the session from its position
/// until the mapper says the run suspended or ended; a stream error becomes an `error` chunk.
/// `permit` is the follower's place under the caps, taken before the request wrote anything.
pub(super) async fn respond(
    state: AppState,
    reply: ChatReply,
    permit: FollowerPermit,
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
            let follow = Follow::open(state, &session_id, after, permit).await?;
            let rest = stream::unfold(Some((counted, follow, mapper)), |progress| async move {
                let (counted, mut follow, mut mapper) = progress?;
                let frames = match follow.next_chunks().await {
                    Some(Ok(chunks)) => {
                        let mut frames = Vec::new();
                        for chunk in &chunks {
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
                let next = (!mapper.is_finished()).then_some((counted, follow, mapper));
                Some((stream::iter(frames.into_iter().map(frame_event)), next))
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

fn frame_event(frame: UiFrame) -> Result<Event, Infallible> {
    Ok(Event::default().data(frame.to_json()))
}
