//! The HTTP side of the metrics: the middleware that counts and times every request, and
//! `GET /metrics` (operators only). The collectors are `crate::metrics`.

use super::error::HttpError;
use crate::{auth::Principal, state::AppState};
use axum::{
    Extension,
    extract::{MatchedPath, Request, State},
    http::header::CONTENT_TYPE,
    middleware::Next,
    response::{IntoResponse, Response},
};

/// Counts each request by route and status, and times it.
pub(super) async fn measure(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let metrics = &state.metrics;
    metrics
        .latency
        .with_label_values(&[route.as_str()])
        .observe(started.elapsed().as_secs_f64());
    metrics
        .requests
        .with_label_values(&[route.as_str(), response.status().as_str()])
        .inc();
    response
}

/// `GET /metrics`: Prometheus text, for operators.
pub(super) async fn metrics(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
) -> Result<Response, HttpError> {
    let text = crate::ops::metrics_text(&state, &principal)?;
    Ok((
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response())
}
