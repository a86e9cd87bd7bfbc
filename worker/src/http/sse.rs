//! `GET /sse`: a session's stream as server-sent events, one event per chunk (its sequence as
//! the `id:`), and a typed error as a last event named `error`.

use super::{
    error::HttpError,
    extract::{ApiQuery, SessionQuery},
};
use crate::{auth::Principal, metrics::FollowerGuard, state::AppState, stream::Credential};
use axum::{
    Extension,
    extract::State,
    response::sse::{Event, KeepAlive, Sse},
};
use baton_core::{ApiError, ErrorCode, chunk::StreamChunk};
use futures::{Stream, StreamExt, stream};
use std::convert::Infallible;

pub(super) async fn sse(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Extension(credential): Extension<Credential>,
    ApiQuery(query): ApiQuery<SessionQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, HttpError> {
    let follow = crate::ops::follow(
        &state,
        &principal,
        &credential,
        &query.session_id,
        query.from_sequence,
    )
    .await?;
    let counted = FollowerGuard::new(&state.metrics.followers);
    let events = stream::unfold((counted, follow), |(counted, mut follow)| async move {
        let events = match follow.next_chunks().await? {
            Ok(chunks) => chunks.iter().map(|chunk| Ok(chunk_event(chunk))).collect(),
            Err(error) => vec![Ok(error_event(&error))],
        };
        Some((stream::iter(events), (counted, follow)))
    })
    .flatten();
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// A chunk as an SSE event: its sequence as the `id:`, its JSON as the data.
fn chunk_event(chunk: &StreamChunk) -> Event {
    Event::default()
        .id(chunk.sequence.to_string())
        .json_data(chunk)
        .unwrap_or_else(|_| {
            error_event(&ApiError::new(
                ErrorCode::Internal,
                "chunk could not be encoded",
            ))
        })
}

/// A typed error as an SSE event named `error`; its data is an [`ApiError`] body.
fn error_event(error: &ApiError) -> Event {
    let body = serde_json::to_string(error).expect("an ApiError always serializes");
    Event::default().event("error").data(body)
}
