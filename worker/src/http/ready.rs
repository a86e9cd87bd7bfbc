//! `GET /readyz`: 200 `{"redis":"ok","temporal":"ok"}` when this server can serve, else 503 with
//! the error body naming what did not answer (`ops::readiness`). Read without a credential, as
//! `/healthz` is: it tells only whether the dependencies answer.

use super::error::HttpError;
use crate::{ops::Readiness, state::AppState};
use axum::{Json, extract::State};

pub(super) async fn ready(State(state): State<AppState>) -> Result<Json<Readiness>, HttpError> {
    Ok(Json(crate::ops::readiness(&state).await?))
}
