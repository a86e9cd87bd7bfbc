//! `GET /metrics`: the server's counters as Prometheus text, for operators only (a refusal is
//! audited with the principal that asked).

use crate::{auth::Principal, state::AppState};
use baton_core::ApiError;

/// The metrics text, once `principal` is an operator.
pub fn metrics_text(state: &AppState, principal: &Principal) -> Result<String, ApiError> {
    if let Err(refused) = principal.must_be_operator() {
        crate::audit::refusal("/metrics", &refused, Some(principal));
        return Err(refused);
    }
    Ok(state.metrics.render(&[(
        "baton_stream_feeds",
        "Sessions whose stream this server reads for its followers",
        state.streams.feed_count() as f64,
    )]))
}
