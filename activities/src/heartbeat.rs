//! Heartbeats for long activity work (model calls, tools), so Temporal notices a lost worker
//! quickly and an interrupt's cancellation reaches the activity.

use std::{future::Future, time::Duration};
use temporalio_sdk::activities::ActivityContext;

/// A ticker whose first tick is one period away. `interval`'s immediate first tick is no free
/// start: awaiting it goes through the timer wheel, about 1 ms, paid by every model call and tool.
pub(crate) fn periodic(every: Duration) -> tokio::time::Interval {
    tokio::time::interval_at(tokio::time::Instant::now() + every, every)
}

/// Runs `work`, recording a heartbeat every `every` so Temporal notices a lost worker quickly
/// and a cancellation reaches the activity.
pub(crate) async fn with_heartbeats<T>(
    ctx: &ActivityContext,
    every: Duration,
    work: impl Future<Output = T>,
) -> T {
    let mut work = std::pin::pin!(work);
    let mut ticker = periodic(every);
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
