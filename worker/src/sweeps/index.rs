//! The search index's repair sweep: rewrites, from their sessions, the entries whose change was
//! not followed by its index write (a crash between the two) and drops those of sessions past
//! their retention. Each pass reads only the marked members of each shard, never the keyspace.

use super::repeat_until;
use baton_core::store::{self, REPAIR_AFTER_MS, Store};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the sweep runs.
pub const INDEX_SWEEP_EVERY: Duration = Duration::from_secs(10);

/// Members rewritten per shard and pass, of each kind.
const PER_SHARD: usize = 200;

/// Sweeps every [`INDEX_SWEEP_EVERY`] until `shutdown`.
pub async fn sweep_index(store: Store, shutdown: CancellationToken) {
    repeat_until(INDEX_SWEEP_EVERY, &shutdown, "index", || {
        sweep_index_once(&store)
    })
    .await;
}

/// One pass: the marks older than [`REPAIR_AFTER_MS`] and the retentions that ended. Answers
/// how many entries it rewrote.
pub async fn sweep_index_once(store: &Store) -> Result<u64, store::Error> {
    store.repair_index(REPAIR_AFTER_MS, PER_SHARD).await
}
