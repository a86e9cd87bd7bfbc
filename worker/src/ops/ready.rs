//! `GET /readyz`: whether this server can serve, as a load balancer or an orchestrator asks
//! before sending it traffic. Redis answers a `PING` and Temporal a describe (of a workflow id
//! no run has: "not found" is an answer), both at once, each within its bound. `/healthz` stays
//! the liveness answer that reads nothing.

use super::temporal::workflow_exists;
use crate::state::AppState;
use baton_core::{ApiError, ErrorCode};
use serde::Serialize;
use std::time::Duration;

/// How long either dependency may take to answer before the server is reported not ready.
const READINESS_BOUND: Duration = Duration::from_secs(2);

/// The workflow id the Temporal check describes; no run is ever given it.
const PROBE_WORKFLOW_ID: &str = "baton__readiness-probe";

/// The answer of a ready server: each dependency's check, `ok`.
#[derive(Debug, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Readiness {
    pub redis: &'static str,
    pub temporal: &'static str,
}

/// Ready when both answer; otherwise `store_unavailable` (Redis did not answer, whatever
/// Temporal did) or `temporal_unavailable`, 503 and retryable, the message naming what failed.
pub async fn readiness(state: &AppState) -> Result<Readiness, ApiError> {
    let redis = async {
        match tokio::time::timeout(READINESS_BOUND, state.store.ping()).await {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(format!("Redis: {error}")),
            Err(_) => Some(format!("Redis did not answer within {READINESS_BOUND:?}")),
        }
    };
    let temporal = async {
        match tokio::time::timeout(READINESS_BOUND, workflow_exists(state, PROBE_WORKFLOW_ID)).await
        {
            Ok(Ok(_)) => None,
            Ok(Err(error)) => Some(format!("Temporal: {}", error.error)),
            Err(_) => Some(format!(
                "Temporal did not answer within {READINESS_BOUND:?}"
            )),
        }
    };
    let (redis, temporal) = tokio::join!(redis, temporal);
    let failed: Vec<&str> = [redis.as_deref(), temporal.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if failed.is_empty() {
        return Ok(Readiness {
            redis: "ok",
            temporal: "ok",
        });
    }
    let code = match redis {
        Some(_) => ErrorCode::StoreUnavailable,
        None => ErrorCode::TemporalUnavailable,
    };
    tracing::warn!(failed = %failed.join("; "), "not ready");
    Err(ApiError::new(
        code,
        format!("not ready: {}", failed.join("; ")),
    ))
}
