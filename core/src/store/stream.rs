//! Reading a session's stream: a range of chunks, and a subscriber that waits for new ones.
//!
//! A stream entry holds a chunk without the header every chunk of a run repeats (its stream,
//! session, agent and run ids): the rest of the chunk from its timestamp on in field `c`, and in
//! field `h` the key of the header, which the state hash of the stream's session keeps once as
//! `chunkHeader:<h>` (see `chunk_entry_fields` in `prelude.lua`) in its shortest form: the run id
//! of the session's own chunk, `^.<suffix>:<key>` for a descendant's chunk copied to the root's
//! stream (with the root's stream id; `.<suffix>:<key>` as earlier versions wrote it, with the
//! descendant's), or the whole header. The sequence is the entry id. Reading puts the chunk's JSON back together
//! byte for byte. An entry without `h` holds the whole chunk in `c`. Headers never change once
//! written, so each server keeps the ones it has read.

use super::{
    Error, SessionAddress, Store, from_json,
    keys::{CHUNK_FIELD, CHUNK_HEADER_FIELD, Key, chunk_header_field, state_field},
};
use crate::chunk::StreamChunk;
use redis::{
    AsyncCommands, Value as RedisValue,
    streams::{StreamId, StreamRangeReply, StreamReadOptions, StreamReadReply},
};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// Chunk headers by state key and header key.
type HeadersByKey = HashMap<(String, String), Arc<str>>;

/// The chunk headers a server has read. Bounded: when full it starts again empty (a header read
/// again costs one `HMGET`).
#[derive(Debug, Default, Clone)]
pub(super) struct HeaderCache {
    headers: Arc<Mutex<HeadersByKey>>,
}

/// How many headers a server keeps (one per run of each session it serves; a few hundred KB).
const HEADER_CACHE_CAPACITY: usize = 4096;

impl HeaderCache {
    fn get(&self, state_key: &str, header_key: &str) -> Option<Arc<str>> {
        let headers = self
            .headers
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        headers
            .get(&(state_key.to_owned(), header_key.to_owned()))
            .cloned()
    }

    fn insert(&self, state_key: &str, header_key: &str, header: Arc<str>) {
        let mut headers = self
            .headers
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if headers.len() >= HEADER_CACHE_CAPACITY {
            headers.clear();
        }
        headers.insert((state_key.to_owned(), header_key.to_owned()), header);
    }
}

impl Store {
    /// Keeps the header of run `run_id`'s chunks on `address`'s own stream, which the state
    /// keeps as the run id alone under `header_key` (a claim that wrote it says so).
    pub(super) fn keep_own_header(
        &self,
        address: &SessionAddress,
        stream_id: &str,
        run_id: &str,
        header_key: &str,
    ) {
        let header = own_header(stream_id, &address.session_id, run_id);
        self.header_cache.insert(
            &self.key(address, Key::State),
            header_key,
            Arc::from(header),
        );
    }

    /// Up to `count` chunks with a sequence above `after` (exclusive), oldest first.
    pub async fn chunks_after(
        &self,
        address: &SessionAddress,
        after: u64,
        count: usize,
    ) -> Result<Vec<StreamChunk>, Error> {
        let key = self.key(address, Key::Stream);
        let reply: StreamRangeReply = self
            .conn()
            .xrange_count(&key, format!("({after}-0"), "+", count)
            .await?;
        self.decode_entries(address, &key, &reply.ids).await
    }

    /// Up to `count` chunks with a sequence above `after`, oldest first, each as its sequence and
    /// the JSON text written, not decoded: for readers that must see every chunk, including kinds
    /// this build does not know (the reliability campaign's invariants).
    pub async fn chunk_texts_after(
        &self,
        address: &SessionAddress,
        after: u64,
        count: usize,
    ) -> Result<Vec<(u64, String)>, Error> {
        let key = self.key(address, Key::Stream);
        let reply: StreamRangeReply = self
            .conn()
            .xrange_count(&key, format!("({after}-0"), "+", count)
            .await?;
        let headers = self.entry_headers(address, &key, &reply.ids).await?;
        reply
            .ids
            .iter()
            .map(|entry| {
                let text = chunk_text(&key, entry, &headers)?;
                Ok((entry_sequence(&key, entry)?, text))
            })
            .collect()
    }

    /// A connection of its own for blocking stream reads, which would stall the shared one: one
    /// a reader gave back ([`Self::keep_subscriber`]), else a new one.
    pub async fn subscriber(&self) -> Result<Subscriber, Error> {
        if let Some(idle) = self.idle_subscribers.take() {
            return Ok(idle);
        }
        Ok(Subscriber {
            connection: self.endpoint.dedicated().await?,
        })
    }

    /// Gives back a subscriber whose last read was answered, for the next reader (a session
    /// followed once a round would otherwise open a connection every round); with 64 kept
    /// already, it is closed.
    pub fn keep_subscriber(&self, subscriber: Subscriber) {
        self.idle_subscribers.keep(subscriber);
    }

    /// The chunks of these entries of `address`'s stream (`key`), their headers put back.
    async fn decode_entries(
        &self,
        address: &SessionAddress,
        key: &str,
        entries: &[StreamId],
    ) -> Result<Vec<StreamChunk>, Error> {
        let headers = self.entry_headers(address, key, entries).await?;
        entries
            .iter()
            .map(|entry| from_json(key, &chunk_text(key, entry, &headers)?))
            .collect()
    }

    /// The headers these entries of `address`'s stream (`key`) name, by key.
    async fn entry_headers(
        &self,
        address: &SessionAddress,
        key: &str,
        entries: &[StreamId],
    ) -> Result<HashMap<String, Arc<str>>, Error> {
        let state_key = self.key(address, Key::State);
        let mut headers: HashMap<String, Arc<str>> = HashMap::new();
        let mut missing: Vec<String> = Vec::new();
        for entry in entries {
            let Some(raw) = entry.map.get(CHUNK_HEADER_FIELD) else {
                continue;
            };
            let header_key = text(key, CHUNK_HEADER_FIELD, raw)?;
            if headers.contains_key(&header_key) || missing.contains(&header_key) {
                continue;
            }
            match self.header_cache.get(&state_key, &header_key) {
                Some(header) => {
                    headers.insert(header_key, header);
                }
                None => missing.push(header_key),
            }
        }
        if !missing.is_empty() {
            let fields: Vec<String> = missing.iter().map(|h| chunk_header_field(h)).collect();
            let (stream_id, found): (Option<String>, Vec<Option<String>>) = redis::pipe()
                .hget(&state_key, state_field::STREAM_ID)
                .cmd("HMGET")
                .arg(&state_key)
                .arg(&fields)
                .query_async(&mut self.conn())
                .await?;
            for (header_key, stored) in missing.into_iter().zip(found) {
                let stored = stored.ok_or_else(|| Error::Corrupt {
                    key: state_key.clone(),
                    reason: format!("no chunk header {header_key} for the stream's entries"),
                })?;
                let header: Arc<str> = match StoredHeader::of(&stored) {
                    StoredHeader::Whole(header) => header.to_owned(),
                    StoredHeader::Run(run_id) => {
                        let stream_id = stream_id.as_deref().ok_or_else(|| Error::Corrupt {
                            key: state_key.clone(),
                            reason: "no streamId".into(),
                        })?;
                        own_header(stream_id, &address.session_id, run_id)
                    }
                    StoredHeader::Below { suffix, key } => {
                        self.header_below(address, suffix, key, None).await?
                    }
                    StoredHeader::Copy { suffix, key } => {
                        let stream_id = stream_id.as_deref().ok_or_else(|| Error::Corrupt {
                            key: state_key.clone(),
                            reason: "no streamId".into(),
                        })?;
                        self.header_below(address, suffix, key, Some(stream_id))
                            .await?
                    }
                    StoredHeader::Unknown => {
                        return Err(Error::Corrupt {
                            key: state_key.clone(),
                            reason: format!("chunk header {header_key}: {stored:?}"),
                        });
                    }
                }
                .into();
                self.header_cache
                    .insert(&state_key, &header_key, header.clone());
                headers.insert(header_key, header);
            }
        }
        Ok(headers)
    }
}

impl Store {
    /// The header a root's stream names as `^.<suffix>:<key>` or `.<suffix>:<key>`: that of a
    /// chunk of the session `<root>.<suffix>` copied to the root's stream, whose run id is kept
    /// under `key` in that session's state hash; with `root_stream_id` (the `^` form) the copy
    /// names the root's stream, else (as earlier versions wrote it) the session's own.
    async fn header_below(
        &self,
        root: &SessionAddress,
        suffix: &str,
        header_key: &str,
        root_stream_id: Option<&str>,
    ) -> Result<String, Error> {
        let below = SessionAddress {
            root_session_id: root.root_session_id.clone(),
            session_id: format!("{}{suffix}", root.root_session_id),
        };
        let state_key = self.key(&below, Key::State);
        let (stream_id, stored): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(&state_key)
            .arg(state_field::STREAM_ID)
            .arg(chunk_header_field(header_key))
            .query_async(&mut self.conn())
            .await?;
        let corrupt = |reason: String| Error::Corrupt {
            key: state_key.clone(),
            reason,
        };
        match (stream_id, stored.as_deref().map(StoredHeader::of)) {
            (_, Some(StoredHeader::Whole(header))) if root_stream_id.is_none() => {
                Ok(header.to_owned())
            }
            (Some(stream_id), Some(StoredHeader::Run(run_id))) => Ok(own_header(
                root_stream_id.unwrap_or(&stream_id),
                &below.session_id,
                run_id,
            )),
            _ => Err(corrupt(format!(
                "no chunk header {header_key} for the root's copies"
            ))),
        }
    }
}

/// A chunk header as a state hash keeps it (see `chunk_entry_fields` in `prelude.lua`).
#[derive(Debug, PartialEq)]
enum StoredHeader<'a> {
    /// The header as it is in the chunk.
    Whole(&'a str),
    /// The run id of a chunk of the hash's own session on its own stream.
    Run(&'a str),
    /// `.<suffix>:<key>`: a chunk of the session `<root>.<suffix>` copied to the root's stream,
    /// whose header that session's state keeps under `key`.
    Below { suffix: &'a str, key: &'a str },
    /// `^.<suffix>:<key>`: as `Below`, the copy naming the root's stream.
    Copy { suffix: &'a str, key: &'a str },
    /// A `.` or `^` form without its key: not written by any version.
    Unknown,
}

impl<'a> StoredHeader<'a> {
    fn of(stored: &'a str) -> Self {
        if stored.starts_with('"') {
            StoredHeader::Whole(stored)
        } else if let Some(copy) = stored.strip_prefix('^') {
            match copy.rsplit_once(':') {
                Some((suffix, key)) if suffix.starts_with('.') => {
                    StoredHeader::Copy { suffix, key }
                }
                _ => StoredHeader::Unknown,
            }
        } else if stored.starts_with('.') {
            match stored.rsplit_once(':') {
                Some((suffix, key)) => StoredHeader::Below { suffix, key },
                None => StoredHeader::Unknown,
            }
        } else {
            StoredHeader::Run(stored)
        }
    }
}

/// The header of a chunk that `session_id` wrote on its own stream in run `run_id`, as the chunk
/// spells it (`encode_unsequenced`).
fn own_header(stream_id: &str, session_id: &str, run_id: &str) -> String {
    format!(
        "\"streamId\":\"{stream_id}\",\"sessionId\":\"{session_id}\",\"agentId\":\"{session_id}\",\"runId\":\"{run_id}\","
    )
}

/// A dedicated connection that waits for new chunks of a session.
pub struct Subscriber {
    connection: super::connection::Connection,
}

/// Most idle subscribers a store keeps.
pub(super) const IDLE_SUBSCRIBERS: usize = 64;

/// The subscribers given back to a store (shared by its clones, which reach the same Redis).
#[derive(Clone, Default)]
pub(super) struct IdleSubscribers(Arc<std::sync::Mutex<Vec<Subscriber>>>);

impl IdleSubscribers {
    fn take(&self) -> Option<Subscriber> {
        self.0.lock().ok().and_then(|mut idle| idle.pop())
    }

    fn keep(&self, subscriber: Subscriber) {
        if let Ok(mut idle) = self.0.lock()
            && idle.len() < IDLE_SUBSCRIBERS
        {
            idle.push(subscriber);
        }
    }
}

impl Subscriber {
    /// Waits up to `block_ms` for chunks above `after` and returns them (empty on time-out).
    pub async fn next_chunks(
        &mut self,
        store: &Store,
        address: &SessionAddress,
        after: u64,
        block_ms: usize,
    ) -> Result<Vec<StreamChunk>, Error> {
        let key = store.key(address, Key::Stream);
        let options = StreamReadOptions::default().block(block_ms).count(512);
        let reply: Option<StreamReadReply> = self
            .connection
            .xread_options(&[&key], &[format!("{after}-0")], &options)
            .await?;
        let Some(reply) = reply else {
            return Ok(Vec::new());
        };
        let entries: Vec<StreamId> = reply
            .keys
            .into_iter()
            .flat_map(|stream| stream.ids)
            .collect();
        store.decode_entries(address, &key, &entries).await
    }
}

/// The sequence of an entry: its id, `<sequence>-0`.
fn entry_sequence(key: &str, entry: &StreamId) -> Result<u64, Error> {
    let sequence = entry
        .id
        .split_once('-')
        .map_or(entry.id.as_str(), |(sequence, _)| sequence);
    sequence.parse().map_err(|e| Error::Corrupt {
        key: key.to_owned(),
        reason: format!("stream entry id {}: {e}", entry.id),
    })
}

/// One entry's chunk JSON: `c` as it is, or with `h` the chunk put back together from its
/// sequence (the entry id), its header and the rest.
fn chunk_text(
    key: &str,
    entry: &StreamId,
    headers: &HashMap<String, Arc<str>>,
) -> Result<String, Error> {
    let corrupt = |reason: String| Error::Corrupt {
        key: key.to_owned(),
        reason,
    };
    let raw = entry
        .map
        .get(CHUNK_FIELD)
        .ok_or_else(|| corrupt("stream entry without field c".into()))?;
    let body = text(key, CHUNK_FIELD, raw)?;
    let Some(raw_header_key) = entry.map.get(CHUNK_HEADER_FIELD) else {
        return Ok(body);
    };
    let header_key = text(key, CHUNK_HEADER_FIELD, raw_header_key)?;
    let header = headers
        .get(&header_key)
        .ok_or_else(|| corrupt(format!("no chunk header {header_key}")))?;
    let sequence = entry_sequence(key, entry)?;
    Ok(format!("{{\"sequence\":{sequence},{header}{body}"))
}

/// A stream entry's field as text.
fn text(key: &str, field: &str, raw: &RedisValue) -> Result<String, Error> {
    redis::from_redis_value(raw).map_err(|e| Error::Corrupt {
        key: key.to_owned(),
        reason: format!("field {field}: {e}"),
    })
}
