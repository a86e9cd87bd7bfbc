//! Heartbeats for long activity work (model calls, tools), so Temporal notices a lost worker
//! quickly and an interrupt's cancellation reaches the activity.

use std::{future::Future, time::Duration};
use temporalio_sdk::activities::ActivityContext;

/// Runs `work`, recording a heartbeat every `every` so Temporal notices a lost worker quickly
/// and a cancellation reaches the activity.
pub(crate) async fn with_heartbeats<T>(
    ctx: &ActivityContext,
    every: Duration,
    work: impl Future<Output = T>,
) -> T {
    let mut work = std::pin::pin!(work);
    let mut ticker = tokio::time::interval(every);
    ticker.tick().await;
    loop {
        tokio::select! {
            output = &mut work => return output,
            _ = ticker.tick() => {
                // A heartbeat that cannot be encoded is impossible for `()`; ignore the result.
                let _ = ctx.record_heartbeat(()).await;
            }
        }
    }
}
