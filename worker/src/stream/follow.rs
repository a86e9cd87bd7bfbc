//! The stream follower: one SSE or gRPC subscriber's position in a session's stream. What it
//! missed comes from Redis, new chunks from the session's shared feed (`crate::stream::fanout`); it
//! yields chunks or one typed error (`TRUNCATED`, `store_unavailable`) that each transport
//! frames its own way.

use super::{FollowerPermit, StreamHub, revocation::RevocationWatch};
use crate::auth::Principal;
use baton_core::{
    ApiError, ErrorCode, Refusal, Store,
    chunk::{ChunkKind, StreamChunk},
    store::{SessionAddress, SessionState},
};

/// How long a follower waits for its feed before checking the session again.
const STREAM_POLL_MS: u64 = 10_000;

/// The position of one follower (an SSE or a gRPC subscriber) in a session's stream: what it
/// missed comes from Redis, new chunks from the session's shared feed.
pub struct Follow {
    store: Store,
    streams: StreamHub,
    address: SessionAddress,
    /// New chunks, from the session's shared feed.
    feed: tokio::sync::broadcast::Receiver<crate::stream::fanout::Batch>,
    after: u64,
    /// Chunks after `after` may be in Redis only: read them there before taking the feed.
    behind: bool,
    finished: bool,
    /// The session's run when the follower attached, and its last sequence then: an `end` at
    /// or before that sequence of another run is an earlier run's, which the follower passes
    /// (it follows the current run to its end).
    run_at_open: String,
    sequence_at_open: u64,
    /// Its place under the follower caps, freed when the follower is dropped.
    _permit: FollowerPermit,
    /// The credential it was opened with, while it may be revoked.
    revocation: Option<RevocationWatch>,
}

/// Most chunks read from Redis at once when a follower catches up.
const CATCH_UP_BATCH: usize = 512;

impl Follow {
    /// Follows `session` (as the caller has just read it) after sequence `after` (exclusive). A
    /// follower that has seen everything of an ended session ends at once. `permit` is its
    /// admission under the follower caps ([`crate::stream::Followers::admit`]), taken by the
    /// caller before anything it does is written.
    pub async fn open(
        store: Store,
        streams: StreamHub,
        session: SessionState,
        after: u64,
        permit: FollowerPermit,
    ) -> Result<Self, ApiError> {
        let finished = session.status.is_terminal() && session.last_sequence <= after;
        // A child session's keys are in its root's slot.
        let address = SessionAddress {
            root_session_id: session.root_session_id.clone(),
            session_id: session.session_id.clone(),
        };
        let feed = streams.subscribe(&store, &address, session.last_sequence);
        Ok(Self {
            store,
            streams,
            address,
            feed,
            after,
            behind: true,
            finished,
            run_at_open: session.run_id,
            sequence_at_open: session.last_sequence,
            _permit: permit,
            revocation: None,
        })
    }

    /// Ends the stream with `unauthorized` within [`super::revocation::RECHECK_EVERY`] of a
    /// revocation of `principal`'s token (every transport opens its followers so).
    pub fn ends_on_revocation(mut self, principal: &Principal) -> Self {
        self.revocation = RevocationWatch::of(principal);
        self
    }

    /// The next chunks, up to and with the `end` chunk; `None` once the stream is over (after
    /// `end`, or when the session has ended and nothing newer remains). An error (`TRUNCATED`
    /// when the chunks after the position are no longer kept, `store_unavailable`) is the
    /// stream's last item.
    pub async fn next_chunks(&mut self) -> Option<Result<Vec<StreamChunk>, ApiError>> {
        use tokio::sync::broadcast::error::RecvError;
        while !self.finished {
            if let Some(watch) = &mut self.revocation
                && let Some(revoked) = watch.revoked(&self.store).await
            {
                self.finished = true;
                return Some(Err(revoked));
            }
            if self.behind {
                match self.catch_up().await {
                    Ok(chunks) if chunks.is_empty() => self.behind = false,
                    Ok(chunks) => {
                        // A short read reached the stream's end: what comes after it is written
                        // after the feed was taken, so the feed has it (a gap reads Redis again).
                        self.behind = chunks.len() >= CATCH_UP_BATCH;
                        return Some(Ok(self.taken(chunks)));
                    }
                    Err(error) => {
                        self.finished = true;
                        return Some(Err(error));
                    }
                }
            }
            let poll = std::time::Duration::from_millis(STREAM_POLL_MS);
            let wait = self
                .revocation
                .as_ref()
                .map_or(poll, |watch| watch.due_in().min(poll));
            match tokio::time::timeout(wait, self.feed.recv()).await {
                Ok(Ok(batch)) => {
                    let fresh: Vec<&StreamChunk> =
                        batch.iter().filter(|c| c.sequence > self.after).collect();
                    match fresh.first() {
                        None => continue,
                        // A gap: Redis has what the feed did not carry.
                        Some(first) if first.sequence != self.after + 1 => self.behind = true,
                        Some(_) => {
                            let chunks = fresh.into_iter().cloned().collect();
                            return Some(Ok(self.taken(chunks)));
                        }
                    }
                }
                Ok(Err(RecvError::Lagged(_))) => self.behind = true,
                Ok(Err(RecvError::Closed)) => {
                    // Its feed ended (a Redis failure): a new one from the position, and what
                    // came in between from Redis.
                    self.feed = self
                        .streams
                        .subscribe(&self.store, &self.address, self.after);
                    self.behind = true;
                }
                Err(_) => match self.store.session(&self.address).await {
                    Ok(Some(session))
                        if session.status.is_terminal() && session.last_sequence <= self.after =>
                    {
                        self.finished = true;
                    }
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "status read failed while streaming"),
                },
            }
        }
        None
    }

    /// Reads chunks after the position straight from Redis; `TRUNCATED` when they are gone.
    async fn catch_up(&mut self) -> Result<Vec<StreamChunk>, ApiError> {
        let chunks = self
            .store
            .chunks_after(&self.address, self.after, CATCH_UP_BATCH)
            .await
            .map_err(|error| {
                tracing::warn!(session = %self.address.session_id, %error, "stream read failed");
                ApiError::new(ErrorCode::StoreUnavailable, "reading the stream failed")
            })?;
        if let Some(first) = chunks.first()
            && first.sequence != self.after + 1
        {
            let floor = first.sequence - 1;
            return Err(ApiError::new(
                ErrorCode::Truncated,
                format!(
                    "the stream no longer holds the chunks after {}; read the snapshot and \
                     follow from its streamSequence",
                    self.after
                ),
            )
            .with(Refusal::Truncated {
                oldest_retained_sequence: floor,
            }));
        }
        Ok(chunks)
    }

    /// The chunks up to and with the first `end` chunk of the current run (see
    /// [`Self::ends_the_follow`]), the position moved past them.
    fn taken(&mut self, mut chunks: Vec<StreamChunk>) -> Vec<StreamChunk> {
        if let Some(end) = chunks.iter().position(|chunk| self.ends_the_follow(chunk)) {
            chunks.truncate(end + 1);
            self.finished = true;
        }
        if let Some(last) = chunks.last() {
            self.after = last.sequence;
        }
        chunks
    }

    /// Whether `chunk` is the `end` the follower stops at: any `end` but an earlier run's.
    fn ends_the_follow(&self, chunk: &StreamChunk) -> bool {
        let earlier_run =
            chunk.sequence <= self.sequence_at_open && chunk.header.run_id != self.run_at_open;
        matches!(chunk.kind, ChunkKind::End { .. }) && !earlier_run
    }
}
