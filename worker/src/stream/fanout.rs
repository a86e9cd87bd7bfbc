//! Stream fan-out: one Redis reader per followed session, however many clients follow it.
//!
//! A follower first reads what it missed straight from the Redis stream (`XRANGE`, no blocking),
//! then takes new chunks from its session's feed: a broadcast channel filled by one task that
//! blocks on `XREAD` for the whole server. A follower that falls behind the channel, or sees a gap,
//! reads Redis again; a gap Redis cannot fill (the chunks were trimmed) is `TRUNCATED`.
//!
//! A feed's blocking connection goes back to its store when the feed retires and the next feed
//! takes it (`Store::keep_subscriber`): a session followed once a round (a client that follows
//! each turn to its pause) would otherwise open a Redis connection every round.

use baton_core::{
    StreamChunk,
    store::{SessionAddress, Store},
};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};
use tokio::sync::broadcast;

/// Chunks the feed task read in one go.
pub type Batch = Arc<[StreamChunk]>;

/// How many batches a feed keeps for followers that are slow to take them.
const FEED_CAPACITY: usize = 256;
/// How long the feed task blocks on Redis before checking whether anyone still follows.
const FEED_POLL_MS: usize = 5_000;

/// The live feeds of this server, one per followed session. Cheap to clone.
#[derive(Clone, Default)]
pub struct StreamHub {
    feeds: Arc<Mutex<HashMap<SessionAddress, broadcast::Sender<Batch>>>>,
    /// The followers of this server, counted against the follower caps.
    pub followers: super::Followers,
}

impl std::fmt::Debug for StreamHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamHub")
            .field("feeds", &self.feed_count())
            .finish()
    }
}

impl StreamHub {
    /// A receiver of the session's new chunks. Every chunk written after this call (and maybe
    /// some before) reaches it; the caller reads anything older from Redis. `start` is a
    /// sequence the session's stream had reached before this call (a feed that starts here reads
    /// after it, so it starts no later than this point).
    pub fn subscribe(
        &self,
        store: &Store,
        address: &SessionAddress,
        start: u64,
    ) -> broadcast::Receiver<Batch> {
        let mut feeds = self.feeds.lock().expect("the feed map is never poisoned");
        if let Some(feed) = feeds.get(address) {
            return feed.subscribe();
        }
        let (sender, receiver) = broadcast::channel(FEED_CAPACITY);
        feeds.insert(address.clone(), sender.clone());
        drop(feeds);
        tokio::spawn(
            self.clone()
                .feed(store.clone(), address.clone(), sender, start),
        );
        receiver
    }

    /// Sessions with a live feed.
    pub fn feed_count(&self) -> usize {
        self.feeds.lock().map_or(0, |feeds| feeds.len())
    }

    /// The feed task: reads the session's stream after `after` and broadcasts it, until no one
    /// follows. On a Redis failure it ends; its followers see the channel close and re-subscribe.
    async fn feed(
        self,
        store: Store,
        address: SessionAddress,
        sender: broadcast::Sender<Batch>,
        mut after: u64,
    ) {
        let mut reader = match store.subscriber().await {
            Ok(reader) => Some(reader),
            Err(error) => {
                tracing::warn!(session = %address.session_id, %error, "stream feed could not start");
                None
            }
        };
        while let Some(connection) = reader.as_mut() {
            if self.retire_if_unfollowed(&address, &sender) {
                if let Some(reader) = reader {
                    store.keep_subscriber(reader);
                }
                return;
            }
            match connection
                .next_chunks(&store, &address, after, FEED_POLL_MS)
                .await
            {
                Ok(chunks) => {
                    if let Some(last) = chunks.last() {
                        after = last.sequence;
                        // No receiver right now is fine: the next loop retires the feed.
                        let _ = sender.send(Arc::from(chunks));
                    }
                }
                Err(error) => {
                    tracing::warn!(session = %address.session_id, %error, "stream feed failed");
                    reader = None;
                }
            }
        }
        self.retire(&address, &sender);
    }

    /// Removes the feed when nobody follows it any more (under the lock that subscribers take,
    /// so none can join a retiring feed).
    fn retire_if_unfollowed(
        &self,
        address: &SessionAddress,
        sender: &broadcast::Sender<Batch>,
    ) -> bool {
        self.retire_when(address, sender, || sender.receiver_count() == 0)
    }

    /// Removes the feed whatever its followers (the feed task is ending).
    fn retire(&self, address: &SessionAddress, sender: &broadcast::Sender<Batch>) {
        self.retire_when(address, sender, || true);
    }

    /// Under the feed map's lock: if `condition` holds, removes the feed of `address` when it is
    /// still `sender`'s (a newer feed of the session is left alone). Says whether it held.
    fn retire_when(
        &self,
        address: &SessionAddress,
        sender: &broadcast::Sender<Batch>,
        condition: impl FnOnce() -> bool,
    ) -> bool {
        let mut feeds = self.feeds.lock().expect("the feed map is never poisoned");
        if !condition() {
            return false;
        }
        if feeds
            .get(address)
            .is_some_and(|current| current.same_channel(sender))
        {
            feeds.remove(address);
        }
        true
    }
}
