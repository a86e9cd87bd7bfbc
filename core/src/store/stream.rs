//! Reading a session's stream: a range of chunks, and a subscriber that waits for new ones.

use super::{
    Error, SessionAddress, Store, from_json,
    keys::{CHUNK_FIELD, Key},
};
use crate::chunk::StreamChunk;
use redis::{
    AsyncCommands, Value as RedisValue,
    streams::{StreamRangeReply, StreamReadOptions, StreamReadReply},
};
use std::collections::HashMap;

impl Store {
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
        reply
            .ids
            .iter()
            .map(|entry| decode_chunk(&key, &entry.map))
            .collect()
    }

    /// A connection of its own for blocking stream reads, which would stall the shared one.
    pub async fn subscriber(&self) -> Result<Subscriber, Error> {
        Ok(Subscriber {
            connection: self.endpoint.dedicated().await?,
        })
    }
}

/// A dedicated connection that waits for new chunks of a session.
pub struct Subscriber {
    connection: super::connection::Connection,
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
        reply
            .keys
            .iter()
            .flat_map(|stream| stream.ids.iter())
            .map(|entry| decode_chunk(&key, &entry.map))
            .collect()
    }
}

fn decode_chunk(key: &str, fields: &HashMap<String, RedisValue>) -> Result<StreamChunk, Error> {
    let corrupt = |reason: String| Error::Corrupt {
        key: key.to_owned(),
        reason,
    };
    let raw = fields
        .get(CHUNK_FIELD)
        .ok_or_else(|| corrupt("stream entry without field c".into()))?;
    let text: String =
        redis::from_redis_value(raw).map_err(|e| corrupt(format!("field c: {e}")))?;
    from_json(key, &text)
}
