//! `GET /pending/stream?…`: the inbox as server-sent events (`ops::watch_pending`), the query
//! `/pending`'s: an event `pending` carrying the page at once and whenever its calls change, and
//! a last event `error` with the error body if the watch ends on one.

use super::{error::HttpError, extract::ApiQuery};
use crate::{auth::Principal, ops, state::AppState, stream::Credential};
use axum::{
    Extension,
    extract::State,
    response::sse::{Event, KeepAlive, Sse},
};
use baton_core::search::SessionSearch;
use futures::{Stream, stream};
use std::convert::Infallible;

pub(super) async fn pending_stream(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Extension(credential): Extension<Credential>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, HttpError> {
    let search = SessionSearch::from_query_pairs(pairs)?;
    let watch = ops::watch_pending(&state, &principal, &credential, search).await?;
    let events = stream::unfold(Some(watch), |watch| async move {
        let mut watch = watch?;
        let event = match watch.next().await {
            Ok(page) => Event::default()
                .event("pending")
                .data(serde_json::to_string(&page).unwrap_or_default()),
            Err(error) => {
                let body = serde_json::to_string(&error).unwrap_or_default();
                return Some((Ok(Event::default().event("error").data(body)), None));
            }
        };
        Some((Ok(event), Some(watch)))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}
