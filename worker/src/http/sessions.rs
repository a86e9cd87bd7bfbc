//! `GET /sessions` (search) and `GET /pending` (the inbox): the query string's filters, paged
//! by an opaque cursor; a session token sees only its own tree.

use super::{error::HttpError, extract::ApiQuery};
use crate::{auth::Principal, ops, state::AppState};
use axum::{Extension, Json, extract::State};
use baton_core::search::{PendingPage, SessionSearch, SessionsPage};

/// `GET /sessions?status=…&agent=…&userId=…&tag=…&metadata.<key>=…&awaiting=person&…`.
pub(super) async fn sessions(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<SessionsPage>, HttpError> {
    let search = SessionSearch::from_query_pairs(pairs)?;
    Ok(Json(ops::list_sessions(&state, &principal, &search).await?))
}

/// `GET /pending`: every call waiting on a person, with the same filters and paging.
pub(super) async fn pending(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<PendingPage>, HttpError> {
    let search = SessionSearch::from_query_pairs(pairs)?;
    Ok(Json(ops::list_pending(&state, &principal, &search).await?))
}
