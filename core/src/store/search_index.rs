//! The search index: which sessions hold a status, an agent, a user, a tag, a metadata entry, or
//! a call waiting on a person, newest activity first, for `GET /sessions` and `GET /pending`.
//!
//! It lives in [`INDEX_SHARDS`] shards outside every session's slot (`<prefix>:index:{idx-<n>}:…`,
//! a session's shard from its id), so no session script writes it, and a Redis Cluster spreads
//! it: per shard a sorted set per term and scope (`root:tag:vip`, scored by the session's
//! `updatedAt`), a hash of each session's record (the terms it is in) and two sorted sets of
//! sessions to look at again (`dirty`: marked before a change, cleared by the entry written after
//! it; `expiry`: an ended session's end of retention). Every entry is computed from the session's
//! state and written by one idempotent script per shard (`index_write.lua`), so the index is a
//! hint, never the truth: a reader checks each hit against the session, and the repair sweep
//! ([`Store::repair_index`]) rewrites the marked entries, reading only those.

use super::person_calls::person_calls_of;
use super::{
    Error, SessionAddress, SessionState, Status, Store,
    index_id::{expand, shorten},
    index_record::Record,
    now_ms,
    scripts::Invocation,
};
use crate::{ids, meta::SessionMeta};
use redis::{AsyncCommands, FromRedisValue};
use std::sync::LazyLock;

/// The number of index shards: each a hash tag of its own, so a cluster spreads them.
pub const INDEX_SHARDS: u32 = 16;
/// At most this many metadata entries of a session are indexed (its first scalar ones, in key
/// order), each `key=value` at most [`MAX_METADATA_TERM_BYTES`]: a session's entry stays small.
pub const MAX_INDEXED_METADATA: usize = 8;
/// The longest indexed metadata `key=value`, in bytes.
pub const MAX_METADATA_TERM_BYTES: usize = 128;
/// A dirty mark older than this (ms) is the repair sweep's: the write after it did not come.
pub const REPAIR_AFTER_MS: u64 = 30_000;

static INDEX_WRITE: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("index_write.lua")));
static INDEX_MARK: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("index_mark.lua")));

/// The name of the index's script whose hash is `hash`, if it is one (see `round_trips.rs`).
pub(super) fn index_script_name(hash: &str) -> Option<&'static str> {
    [
        (&INDEX_WRITE, "index_write"),
        (&super::index_page::INDEX_PAGE, "index_page"),
        (&INDEX_MARK, "index_mark"),
    ]
    .into_iter()
    .find(|(script, _)| script.get_hash() == hash)
    .map(|(_, name)| name)
}

/// Every status, in the order the `All` drive reads their sets.
pub(super) const STATUSES: [Status; 5] = [
    Status::Active,
    Status::SuspendedClientTool,
    Status::Completed,
    Status::Failed,
    Status::Interrupted,
];

/// What the index narrows a search by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexTerm {
    /// Every session: as a drive, the sets of every status (a session is in no set of its own
    /// for it since the short records; entries written before hold one, dropped when rewritten).
    All,
    Status(Status),
    Agent(String),
    User(String),
    Tag(String),
    /// A metadata entry: its key and the value's text (see [`metadata_value_text`]).
    Metadata(String, String),
    /// A call waiting on a person: anywhere in the tree for a root, in the session for a child.
    Awaiting,
}

impl IndexTerm {
    pub(super) fn text(&self) -> String {
        match self {
            Self::All => "all".to_owned(),
            Self::Status(status) => format!("status:{}", status.as_str()),
            Self::Agent(agent) => format!("agent:{agent}"),
            Self::User(user) => format!("user:{user}"),
            Self::Tag(tag) => format!("tag:{tag}"),
            Self::Metadata(key, value) => format!("meta:{key}={value}"),
            Self::Awaiting => "awaiting".to_owned(),
        }
    }
}

/// The text a metadata value is indexed and filtered by: a string as it is, a number or a boolean
/// as its JSON; `None` (not indexed) for null, arrays and objects.
pub fn metadata_value_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(text) => Some(text.clone()),
        serde_json::Value::Number(_) | serde_json::Value::Bool(_) => Some(value.to_string()),
        _ => None,
    }
}

/// Root sessions, or the sessions below them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexScope {
    Roots,
    Children,
}

impl IndexScope {
    fn of(address: &SessionAddress) -> Self {
        if address.is_root() {
            Self::Roots
        } else {
            Self::Children
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Roots => "root",
            Self::Children => "child",
        }
    }
}

/// A place in the index's order (newest activity first, then session id, descending).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct IndexPosition {
    pub score: u64,
    pub session_id: String,
}

/// A search of the index: one term's sets drive it, every other term must be held too.
#[derive(Debug, Clone)]
pub struct IndexQuery {
    pub drive: IndexTerm,
    pub required: Vec<IndexTerm>,
    pub scopes: Vec<IndexScope>,
    /// Continue below this position (exclusive).
    pub after: Option<IndexPosition>,
    /// Activity at or before / at or after these times (ms since the epoch).
    pub updated_before: Option<u64>,
    pub updated_after: Option<u64>,
    pub limit: usize,
}

/// The hits of a search, in order, and where the next page starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexPage {
    pub hits: Vec<IndexPosition>,
    pub next: Option<IndexPosition>,
}

/// The shard a session's entry lives in (FNV-1a of its id).
pub(super) fn shard_of(session_id: &str) -> u32 {
    let hash = session_id.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    });
    hash % INDEX_SHARDS
}

/// The address of a session the index names by its id.
pub(super) fn address_of(session_id: &str) -> SessionAddress {
    SessionAddress {
        root_session_id: ids::root_of(session_id).to_owned(),
        session_id: session_id.to_owned(),
    }
}

/// The terms a session is in, from its state and whether it waits on a person.
fn terms_of(state: &SessionState, awaiting: bool) -> Vec<IndexTerm> {
    let SessionMeta {
        user_id,
        tags,
        metadata,
    } = &state.meta;
    let mut terms = vec![
        IndexTerm::Status(state.status),
        IndexTerm::Agent(state.agent_type.clone()),
    ];
    terms.extend(user_id.iter().cloned().map(IndexTerm::User));
    terms.extend(tags.iter().cloned().map(IndexTerm::Tag));
    let entries = metadata.iter().flatten().filter_map(|(key, value)| {
        let text = metadata_value_text(value)?;
        (key.len() + text.len() < MAX_METADATA_TERM_BYTES)
            .then(|| IndexTerm::Metadata(key.clone(), text))
    });
    terms.extend(entries.take(MAX_INDEXED_METADATA));
    if awaiting {
        terms.push(IndexTerm::Awaiting);
    }
    terms.dedup();
    terms
}

impl Store {
    pub(super) fn index_key(&self, shard: u32, name: &str) -> String {
        format!("{}:index:{{idx-{shard}}}:{name}", self.prefix)
    }

    /// Marks a session for the repair sweep before a change the index follows, and answers the
    /// mark (a time in ms, each of a session's marks later than the one before): the entry
    /// written after the change clears marks up to it; a crash in between leaves it for
    /// [`Self::repair_index`]. A mark set after it (another change, maybe not applied when this
    /// change's entry reads the state) stays.
    pub(super) async fn mark_for_index(&self, address: &SessionAddress) -> Result<u64, Error> {
        self.index_mark(address).run(self).await
    }

    /// `index_mark.lua` on `address`'s session, to run.
    fn index_mark(&self, address: &SessionAddress) -> Invocation<'static> {
        let dirty = self.index_key(shard_of(&address.session_id), "dirty");
        let mut mark = Invocation::plain("index_mark", &INDEX_MARK, &[&dirty]);
        mark.arg(shorten(&address.session_id)).arg(now_ms());
        mark
    }

    /// [`Self::mark_for_index`], then `change` (a script of the session's slot): in one round
    /// trip on one server (a pipeline, which Redis runs in that order, so the change never goes
    /// before its mark), one after the other on a cluster (the mark's shard is another slot).
    /// Answers the mark and the change's reply.
    pub(super) async fn mark_then<T: FromRedisValue>(
        &self,
        address: &SessionAddress,
        change: &Invocation<'_>,
    ) -> Result<(u64, T), Error> {
        self.mark_then_after(address, change, None).await
    }

    /// [`Self::mark_then`], then `after` (a plain idempotent write that must follow the change,
    /// whatever it answers) in the same round trip; on a cluster, one after the other.
    pub(super) async fn mark_then_after<T: FromRedisValue>(
        &self,
        address: &SessionAddress,
        change: &Invocation<'_>,
        after: Option<redis::Cmd>,
    ) -> Result<(u64, T), Error> {
        let mark = self.index_mark(address);
        if !self.conn().pipelines_across_slots() {
            let mark = mark.run(self).await?;
            let reply = change.run(self).await?;
            if let Some(after) = after {
                let _: () = after.query_async(&mut self.conn()).await?;
            }
            return Ok((mark, reply));
        }
        mark.run_then_after(change, after, self).await
    }

    /// Rewrites the index entry of a session (and of its root, whose `awaiting` term covers the
    /// tree) from its state, after a change marked `mark`, in a task of its own: the change's
    /// caller does not wait for it. The write waits [`super::index_queue::INDEX_DELAY`] for the
    /// session's next changes in this process, which it takes too. An error is logged and the
    /// marks left for the sweep.
    pub(super) async fn reindex_after_change(&self, address: &SessionAddress, mark: u64) {
        if !self.index_queue.note(address, mark) {
            return;
        }
        let store = self.clone();
        let address = address.clone();
        tokio::spawn(async move {
            tokio::time::sleep(super::index_queue::INDEX_DELAY).await;
            let mark = store.index_queue.take(&address);
            if let Err(error) = store.reindex_clearing(&address, mark).await {
                tracing::warn!(session_id = %address.session_id, %error, "search index not updated");
            }
        });
    }

    /// Rewrites the index entries of a session and, for a child, of its root. Clears no mark:
    /// a change's own entry or the repair sweep does.
    pub async fn reindex(&self, address: &SessionAddress) -> Result<(), Error> {
        self.reindex_clearing(address, 0).await
    }

    /// [`Self::reindex`], clearing the session's marks up to `clear_upto` (its change's own).
    pub(super) async fn reindex_clearing(
        &self,
        address: &SessionAddress,
        clear_upto: u64,
    ) -> Result<(), Error> {
        self.reindex_one(address, clear_upto).await?;
        if !address.is_root() {
            self.reindex_one(&SessionAddress::root(&address.root_session_id), 0)
                .await?;
        }
        Ok(())
    }

    pub(super) async fn reindex_one(
        &self,
        address: &SessionAddress,
        clear_upto: u64,
    ) -> Result<(), Error> {
        let shard = shard_of(&address.session_id);
        let records = self.index_key(shard, "records");
        let dirty = self.index_key(shard, "dirty");
        let member = shorten(&address.session_id);
        let legacy = if member == address.session_id {
            String::new()
        } else {
            address.session_id.clone()
        };
        // The index's record of the session (both forms) and its mark.
        let read_record = || async {
            let read: (Option<String>, Option<String>, Option<f64>) = redis::pipe()
                .hget(&records, &member)
                .hget(&records, &address.session_id)
                .zscore(&dirty, &member)
                .query_async(&mut self.conn())
                .await?;
            Ok::<_, Error>(read)
        };
        let members = async {
            if address.is_root() {
                self.tree_sessions(address).await
            } else {
                Ok(Vec::new())
            }
        };
        // The session, its tree's members, the record and the session's own open calls, in one
        // round trip; the members' calls after it, for a tree.
        let (state, members, mut read, own_calls) = futures::try_join!(
            self.session(address),
            members,
            read_record(),
            self.awaiting_sessions_of(address, Vec::new())
        )?;
        let entry = match state {
            None => None,
            Some(state) => {
                // A suspended tree's calls, or a running call's question to a person.
                let awaiting = matches!(state.status, Status::SuspendedClientTool | Status::Active)
                    && {
                        let mut sessions = own_calls;
                        if !members.is_empty() {
                            sessions.extend(self.awaiting_members_of(address, members).await?);
                        }
                        !person_calls_of(sessions).is_empty()
                    };
                Some(state_entry(&state, awaiting, self.session_retention_ms))
            }
        };
        let encoded = entry.as_ref().map(|entry| entry.record.encode());
        // A write between our read of the record and the script's makes it answer `moved`.
        for attempt in 0..4 {
            if attempt > 0 {
                read = read_record().await?;
            }
            let (short, old, marked) = std::mem::take(&mut read);
            // Written already in its short form (by a write after a later change, maybe
            // another process's) and no mark of this write's left to clear: nothing to do.
            let cleared = marked.is_none_or(|mark| mark as u64 > clear_upto);
            let legacy_left = !legacy.is_empty() && old.is_some();
            if cleared && !legacy_left && short.is_some() && short == encoded {
                return Ok(());
            }
            let current = short.or(if legacy.is_empty() { None } else { old });
            let old_terms = match &current {
                Some(text) => {
                    Record::decode(text)
                        .map_err(|reason| Error::Corrupt {
                            key: records.clone(),
                            reason,
                        })?
                        .k
                }
                None => Vec::new(),
            };
            let mut invocation = INDEX_WRITE.prepare_invoke();
            invocation
                .key(&records)
                .key(&dirty)
                .key(self.index_key(shard, "expiry"));
            for term in &old_terms {
                invocation.key(self.index_key(shard, term));
            }
            let (record, score, expire_at, version) = match &entry {
                Some(entry) => {
                    for term in &entry.record.k {
                        invocation.key(self.index_key(shard, term));
                    }
                    let expire_at = entry.expire_at.map(|at| at.to_string());
                    (
                        encoded.as_deref().unwrap_or_default(),
                        entry.score,
                        expire_at.unwrap_or_default(),
                        entry.record.v,
                    )
                }
                None => ("", 0, String::new(), (0, 0)),
            };
            invocation
                .arg(&member)
                .arg(current.unwrap_or_default())
                .arg(record)
                .arg(version.0)
                .arg(version.1)
                .arg(score)
                .arg(expire_at)
                .arg(old_terms.len())
                .arg(clear_upto)
                .arg(&legacy);
            let reply: String = invocation.invoke_async(&mut self.conn()).await?;
            if reply != "moved" {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The repair sweep's pass: rewrites the entries of sessions marked longer than `older_than`
    /// ms ago (a crash between a change and its entry) and of ended sessions past their
    /// retention (dropped once their keys are gone), at most `max_per_shard` of each per shard.
    /// Reads only those members, never the keyspace. Answers how many it rewrote.
    pub async fn repair_index(
        &self,
        older_than_ms: u64,
        max_per_shard: usize,
    ) -> Result<u64, Error> {
        let now = now_ms();
        // Marks up to this are the repair's: their changes' own entries did not come.
        let marked_before = now.saturating_sub(older_than_ms);
        let mut repaired = 0;
        for shard in 0..INDEX_SHARDS {
            let (marked, expired): (Vec<String>, Vec<String>) = redis::pipe()
                .zrangebyscore_limit(
                    self.index_key(shard, "dirty"),
                    "-inf",
                    marked_before,
                    0,
                    max_per_shard as isize,
                )
                .zrangebyscore_limit(
                    self.index_key(shard, "expiry"),
                    "-inf",
                    now,
                    0,
                    max_per_shard as isize,
                )
                .query_async(&mut self.conn())
                .await?;
            for member in marked.iter().chain(&expired) {
                self.reindex_one(&address_of(&expand(member)), marked_before)
                    .await?;
                repaired += 1;
            }
        }
        Ok(repaired)
    }

    /// Writes index entries (roots, no sessions behind them) in one pipeline: each a session id,
    /// its score and its terms. For the benchmark, which measures a page over a large index
    /// without the sessions' own keys; a search drops such hits when it reads them back, so
    /// measure [`Self::search_index`] with it.
    pub async fn seed_index(&self, entries: &[(String, u64, Vec<IndexTerm>)]) -> Result<(), Error> {
        let mut pipe = redis::pipe();
        for (session_id, score, terms) in entries {
            let shard = shard_of(session_id);
            let keys: Vec<String> = terms
                .iter()
                .map(|term| format!("{}:{}", IndexScope::Roots.name(), term.text()))
                .collect();
            let member = shorten(session_id);
            for key in &keys {
                pipe.zadd(self.index_key(shard, key), &member, *score)
                    .ignore();
            }
            let record = Record {
                v: (1, *score),
                k: keys,
            }
            .encode();
            pipe.hset(self.index_key(shard, "records"), &member, record)
                .ignore();
        }
        let () = pipe.query_async(&mut self.conn()).await?;
        Ok(())
    }

    /// The sessions marked for the repair sweep (tests and metrics).
    pub async fn index_marks(&self) -> Result<u64, Error> {
        let mut marks = 0;
        for shard in 0..INDEX_SHARDS {
            let count: u64 = self.conn().zcard(self.index_key(shard, "dirty")).await?;
            marks += count;
        }
        Ok(marks)
    }
}

/// A session's index entry: its record, score and end of retention.
struct Entry {
    record: Record,
    score: u64,
    expire_at: Option<u64>,
}

fn state_entry(state: &SessionState, awaiting: bool, retention_ms: u64) -> Entry {
    let scope = IndexScope::of(&SessionAddress {
        root_session_id: state.root_session_id.clone(),
        session_id: state.session_id.clone(),
    });
    let k = terms_of(state, awaiting)
        .iter()
        .map(|term| format!("{}:{}", scope.name(), term.text()))
        .collect();
    Entry {
        record: Record {
            v: (state.last_sequence, state.updated_at),
            k,
        },
        score: state.updated_at,
        expire_at: (state.status.is_terminal() && retention_ms > 0)
            .then(|| state.updated_at + retention_ms),
    }
}

pub(super) fn parse_score(text: &str) -> u64 {
    text.parse::<f64>().map_or(0, |score| score as u64)
}
