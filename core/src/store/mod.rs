//! The Redis store. Every state transition of a session is one Lua script (atomic, one round
//! trip); reads are plain commands. All keys of a session tree carry the root session's hash tag,
//! so each script touches one Redis Cluster slot: `<prefix>:{<root>}:<session>:<what>` (see
//! `keys.rs`). The one write outside a script is the deadline index (`deadline_index.rs`), a
//! sorted set per prefix outside every session's slot, written with plain `ZADD`/`ZREM` beside
//! the scripts and checked against the session by whoever reads a member.
//!
//! The operations are grouped by what they do: `session.rs` (create and read a session),
//! `step.rs` (stage and commit a step, fail a run), `tool_start.rs` (at-most-once start markers),
//! `suspension.rs` (suspend on pending calls, submit answers), `resume.rs` (the one claim of a
//! session for a new run, and the drain), `release.rs` (undo a claim whose run never started),
//! `rewind.rs`, `stop.rs`, `revocation.rs` (revoked tokens), `tree.rs` (child sessions, reports to a parent), `custom_state.rs`,
//! `stream.rs` (read and follow the chunks), `usage.rs` (usage, snapshot), `sweep.rs` (what the
//! zombie sweep reads) and `deadline_index.rs`. `scripts.rs` holds the scripts with the keys each
//! declares, `replies.rs` their decoded replies, `error.rs` the store's error and its one
//! conversion into the client's.

pub use baton_wire::{
    session::{
        ApprovalDecision, Continuation, SessionOwner, SessionState, Status, StopKind, StopRecord,
        Suspension,
    },
    usage::UsageRecord,
};

mod a2a;
mod a2a_child;
mod callback;
mod connection;
mod custom_state;
mod deadline_index;
mod delete;
mod error;
mod fork;
mod health;
mod index_id;
mod index_page;
mod index_queue;
mod index_record;
mod keys;
mod orphans;
mod person_calls;
mod question;
mod relay;
mod release;
mod remote;
mod remote_callback;
mod remote_ids;
mod remote_wait_index;
mod replies;
mod resume;
mod revocation;
mod rewind;
mod round_trips;
mod scripts;
mod search_index;
mod session;
mod stage_and_suspend;
mod stage_turn;
mod step;
mod stop;
mod stream;
mod subject_bucket;
mod submit_token;
mod suspension;
mod sweep;
mod tool_asks;
mod tool_start;
mod tree;
mod tree_read;
mod types;
mod usage;

pub use a2a::{A2aPush, A2aRecord, a2a_task_state};
pub use a2a_child::A2aChild;
pub use callback::{CallbackFailure, RegisteredCallback};
pub use deadline_index::IndexedDeadline;
pub use delete::Deleted;
pub use error::Error;
pub use fork::NewFork;
pub use index_id::{expand as index_long_id, shorten as index_short_id};
pub use orphans::{OrphanOutcome, RemoteOrphan, StartedCall};
pub use person_calls::{AwaitingSession, PersonCall, RelayedEntry};
pub use question::{Closing, Question, QuestionAnswered};
pub use relay::{A2aQuestion, Recorded, RelayedAnswer, RelayedCall, RelayedGroup};
pub use remote::{FollowMode, Forwarded, ForwardedChunk};
pub use remote_callback::CallbackAccepted;
pub use remote_wait_index::RemoteWait;
pub use resume::{
    Applied, Claim, ClaimedRun, DrainedCall, NewRunId, NextRun, ResumeEntry, RunClaim, StepStart,
};
pub use rewind::{Rewind, Rewound};
pub use round_trips::{RoundTrip, RoundTrips};
pub use search_index::{
    INDEX_SHARDS, IndexPage, IndexPosition, IndexQuery, IndexScope, IndexTerm,
    MAX_INDEXED_METADATA, MAX_METADATA_TERM_BYTES, REPAIR_AFTER_MS, metadata_value_text,
};
pub use session::NewSession;
pub use stage_and_suspend::StagedSuspension;
pub use step::{Completion, StagedTurn, StepProgress};
pub use stop::Stopped;
pub use stream::Subscriber;
pub use subject_bucket::SubjectBucket;
pub use suspension::{Answer, StoredAnswer, SubmitAttempt, SubmitOutcome, Submitted, approval_id};
pub use sweep::QuietRun;
pub use tool_asks::StagedCall;
pub use tree::{ChildEnd, ChildRun, NewChild, ParentReport};
pub use tree_read::TreeSession;
pub use types::{
    Checkpoint, NO_DEADLINE, NewRun, PendingAsk, PendingCall, PendingKind, RunRef, SessionAddress,
    StepRef, StoredSuspension, Written,
};

use crate::chunk::ChunkHeader;
use connection::{Connection, Endpoint};
use keys::Key;
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Handle on Baton's Redis data. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    /// Shared by the store's clones, as everything below is but the connection's handle: a
    /// server clones its store for every request and every index write.
    endpoint: std::sync::Arc<Endpoint>,
    connection: Connection,
    prefix: std::sync::Arc<str>,
    /// How long an ended session's keys are kept (ms; 0: forever).
    session_retention_ms: u64,
    /// How long a command may take (ms): a write fenced on a deadline gets now plus this.
    command_timeout_ms: u64,
    /// The chunk headers this server has read (see `stream.rs`).
    header_cache: stream::HeaderCache,
    /// The secret remote children's ids are derived with, once read (see `remote_ids.rs`).
    remote_id_secret: std::sync::Arc<tokio::sync::OnceCell<String>>,
    /// The index writes due after changes, coalesced (see `index_queue.rs`).
    index_queue: index_queue::IndexQueue,
    /// Blocking connections to this store's Redis that their readers gave back (`stream.rs`).
    idle_subscribers: stream::IdleSubscribers,
}

/// How long an ended session is kept by default: a few days, for late reads and follow-ups.
pub const DEFAULT_SESSION_RETENTION: std::time::Duration =
    std::time::Duration::from_secs(3 * 24 * 3600);

/// How long a Redis command may take before it fails as unavailable: far above any script's
/// time (milliseconds), well below what a caller waits before giving up.
pub const DEFAULT_REDIS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl Store {
    /// Connects to `redis_url`; every key starts with `prefix` (tests use one prefix each).
    /// Commands time out after [`DEFAULT_REDIS_TIMEOUT`].
    pub async fn connect(redis_url: &str, prefix: impl Into<String>) -> Result<Self, Error> {
        Self::connect_with_timeout(redis_url, prefix, DEFAULT_REDIS_TIMEOUT).await
    }

    /// Connects like [`Self::connect`], with commands (and each connection attempt) failing
    /// after `timeout`. Without a bound, a Redis that stops answering while its connections stay
    /// open (a partition, a frozen process) holds every request and activity for as long as it
    /// lasts; with one, they fail as `store_unavailable` and are retried. A command that timed
    /// out may still run once Redis answers again: the scripts' guards make a retry of it safe.
    pub async fn connect_with_timeout(
        redis_url: &str,
        prefix: impl Into<String>,
        timeout: std::time::Duration,
    ) -> Result<Self, Error> {
        let (endpoint, connection) = Endpoint::connect(redis_url, timeout).await?;
        Ok(Self {
            endpoint: std::sync::Arc::new(endpoint),
            connection,
            prefix: prefix.into().into(),
            session_retention_ms: retention_ms(DEFAULT_SESSION_RETENTION),
            command_timeout_ms: retention_ms(timeout).max(1),
            header_cache: stream::HeaderCache::default(),
            remote_id_secret: Default::default(),
            index_queue: Default::default(),
            idle_subscribers: Default::default(),
        })
    }

    /// The deadline (ms since the epoch) past which a fenced write is refused by its script,
    /// read on Redis's clock: half the command's time-out from now. A write applied before it
    /// leaves its reply the other half to reach the caller before the caller gives up; with the
    /// whole time-out, a write Redis applied just in time (a Redis that stopped answering and
    /// came back) was answered after its caller had given up and said 503.
    fn write_deadline_ms(&self) -> u64 {
        now_ms().saturating_add(self.command_timeout_ms / 2)
    }

    /// Keeps an ended session's keys for `retention` after the script that ends it (zero: for
    /// ever); a new turn keeps them again until it ends.
    pub fn with_session_retention(mut self, retention: std::time::Duration) -> Self {
        self.session_retention_ms = retention_ms(retention);
        self
    }

    fn key(&self, address: &SessionAddress, key: Key) -> String {
        key.of(&self.prefix, address)
    }

    /// The header of the chunks `run` writes to its session's stream, stamped now.
    fn header(&self, run: RunRef<'_>) -> ChunkHeader {
        ChunkHeader {
            stream_id: run.stream_id.to_owned(),
            session_id: run.address.session_id.clone(),
            agent_id: run.address.session_id.clone(),
            run_id: run.run_id.to_owned(),
            timestamp: now_ms(),
        }
    }

    fn conn(&self) -> Connection {
        self.connection.clone()
    }

    /// A list of JSON records, decoded.
    async fn json_list<T: for<'de> Deserialize<'de>>(&self, key: String) -> Result<Vec<T>, Error> {
        self.json_list_from(key, 0).await
    }

    /// A list of JSON values from its item `skip` on.
    async fn json_list_from<T: for<'de> Deserialize<'de>>(
        &self,
        key: String,
        skip: usize,
    ) -> Result<Vec<T>, Error> {
        let start = isize::try_from(skip).unwrap_or(isize::MAX);
        let items: Vec<String> =
            redis::AsyncCommands::lrange(&mut self.conn(), &key, start, -1).await?;
        items.iter().map(|item| from_json(&key, item)).collect()
    }
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("Baton's own types always serialize")
}

fn from_json<T: for<'de> Deserialize<'de>>(key: &str, text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}

fn retention_ms(retention: std::time::Duration) -> u64 {
    u64::try_from(retention.as_millis()).unwrap_or(u64::MAX)
}

/// How a script takes a yes/no argument.
fn flag(set: bool) -> &'static str {
    if set { "1" } else { "0" }
}

#[cfg(test)]
mod call_id_tests;
#[cfg(test)]
mod claim_tests;
#[cfg(test)]
mod compact_state_tests;
#[cfg(test)]
mod delete_tests;
#[cfg(test)]
mod drain_log_tests;
#[cfg(test)]
mod far_deadline_tests;
#[cfg(test)]
mod fault_tests;
#[cfg(test)]
mod footprint_tests;
#[cfg(test)]
mod index_format_tests;
#[cfg(test)]
mod index_page_tests;
#[cfg(test)]
mod index_queue_tests;
#[cfg(test)]
mod person_calls_tests;
#[cfg(test)]
mod pipelined_tests;
#[cfg(test)]
mod remote_tests;
#[cfg(test)]
mod script_cache_tests;
#[cfg(test)]
mod search_tests;
#[cfg(test)]
mod stage_and_suspend_tests;
#[cfg(test)]
mod state_tests;
#[cfg(test)]
mod step_start_tests;
#[cfg(test)]
mod tests;
