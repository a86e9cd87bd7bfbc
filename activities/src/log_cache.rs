//! The logs this worker's model steps read last, one per run, so the next step of a run reads
//! only what was appended since: a run's model steps are local activities played one after
//! another by the worker that holds the run's workflow. Within a run a log only grows (only a
//! rewind rewrites one, and a rewind starts a new run), so the messages held are still the
//! log's first ones, and the messages after them are the rest. A step takes its run's entry
//! out while it runs and puts the log back once the model has answered; a failed attempt
//! leaves none, and the next reads the whole log, as does a step on another worker.
//!
//! The cache is bounded twice, in runs and in bytes ([`LogCacheBounds`]): a worker serving a
//! few sessions with very long logs (a 10 MB tool result) holds no more memory than the byte
//! bound, whatever the run bound. A log is weighed once, when it is kept, by what its messages
//! hold (their text and JSON values), and the logs kept longest ago go first. A log heavier than
//! the whole byte bound is not kept: its run's next step reads it from Redis.

use baton_core::{
    message::{Message, ToolOutcome},
    store::RunRef,
};
use serde_json::Value;
use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
};

/// How much a worker's log cache may hold. A worker serving more runs at once than it holds
/// still plays them right: a step that finds no entry reads the whole log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogCacheBounds {
    /// Runs whose logs are kept at most; 0 keeps none.
    pub runs: usize,
    /// Bytes of logs kept at most, as weighed by the cache (the messages' text and JSON
    /// values, a little under what the process holds for them).
    pub bytes: usize,
}

impl LogCacheBounds {
    /// The default run bound.
    pub const DEFAULT_RUNS: usize = 256;
    /// The default byte bound: 64 MiB.
    pub const DEFAULT_BYTES: usize = 64 << 20;
}

impl Default for LogCacheBounds {
    fn default() -> Self {
        Self {
            runs: Self::DEFAULT_RUNS,
            bytes: Self::DEFAULT_BYTES,
        }
    }
}

/// A run: root session, session, run id.
type RunKey = (String, String, String);

/// One run's log, its weight and when it was kept (a counter: the smallest goes first).
struct Entry {
    log: Vec<Message>,
    bytes: usize,
    kept: u64,
}

#[derive(Default)]
struct Logs {
    entries: HashMap<RunKey, Entry>,
    bytes: usize,
    kept: u64,
}

impl Logs {
    fn remove(&mut self, key: &RunKey) -> Option<Entry> {
        let entry = self.entries.remove(key)?;
        self.bytes -= entry.bytes;
        Some(entry)
    }

    /// Drops the log kept longest ago.
    fn evict_oldest(&mut self) {
        let oldest = self
            .entries
            .iter()
            .min_by_key(|(_, entry)| entry.kept)
            .map(|(key, _)| key.clone());
        if let Some(key) = oldest {
            self.remove(&key);
        }
    }
}

#[derive(Default)]
pub(crate) struct LogCache {
    bounds: LogCacheBounds,
    logs: Mutex<Logs>,
}

fn key(run: RunRef<'_>) -> RunKey {
    (
        run.address.root_session_id.clone(),
        run.address.session_id.clone(),
        run.run_id.to_owned(),
    )
}

impl LogCache {
    pub(crate) fn new(bounds: LogCacheBounds) -> Self {
        Self {
            bounds,
            logs: Mutex::default(),
        }
    }

    /// The log `run`'s last step read, taken out of the cache (empty if none is held).
    pub(crate) fn take(&self, run: RunRef<'_>) -> Vec<Message> {
        self.locked()
            .remove(&key(run))
            .map(|entry| entry.log)
            .unwrap_or_default()
    }

    /// Keeps `log` as `run`'s, dropping the logs kept longest ago while either bound would be
    /// passed. A log heavier than the byte bound is not kept.
    pub(crate) fn keep(&self, run: RunRef<'_>, log: Vec<Message>) {
        let key = key(run);
        let bytes = log.iter().map(message_bytes).sum::<usize>();
        let mut logs = self.locked();
        logs.remove(&key);
        if self.bounds.runs == 0 || bytes > self.bounds.bytes {
            return;
        }
        while !logs.entries.is_empty()
            && (logs.entries.len() >= self.bounds.runs || logs.bytes + bytes > self.bounds.bytes)
        {
            logs.evict_oldest();
        }
        logs.kept += 1;
        let kept = logs.kept;
        logs.bytes += bytes;
        logs.entries.insert(key, Entry { log, bytes, kept });
    }

    /// The runs and bytes held now.
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        let logs = self.locked();
        (logs.entries.len(), logs.bytes)
    }

    /// The logs, locked. A panic while they were locked left them whole (each change is a few
    /// map calls that do not panic), so a poisoned lock is taken as it is.
    fn locked(&self) -> MutexGuard<'_, Logs> {
        self.logs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What one message holds, in bytes: its strings and JSON values, plus the message itself.
fn message_bytes(message: &Message) -> usize {
    let held = match message {
        Message::System { content }
        | Message::User {
            content,
            chat: None,
        } => content.len(),
        // A chat message's files are most of its weight: every byte of them counts.
        Message::User {
            content,
            chat: Some(extras),
        } => {
            content.len()
                + extras.id.as_ref().map_or(0, String::len)
                + extras.metadata.as_ref().map_or(0, value_bytes)
                + extras.files.iter().map(|f| f.held_bytes()).sum::<usize>()
        }
        Message::Assistant {
            content,
            tool_calls,
            chat,
            finish,
        } => {
            content.len()
                + chat.as_ref().map_or(0, |chat| {
                    chat.reasoning.iter().map(|r| r.text.len()).sum::<usize>()
                })
                + finish.as_ref().map_or(0, |finish| value_bytes(finish))
                + tool_calls
                    .iter()
                    .map(|call| call.id.len() + call.name.len() + value_bytes(&call.arguments))
                    .sum::<usize>()
        }
        Message::Tool(result) => {
            result.tool_call_id.len()
                + result.tool_name.len()
                + match &result.outcome {
                    ToolOutcome::Result(value) => value_bytes(value),
                    ToolOutcome::Error(error) => error.code.len() + error.message.len(),
                }
        }
    };
    std::mem::size_of::<Message>() + held
}

fn value_bytes(value: &Value) -> usize {
    std::mem::size_of::<Value>()
        + match value {
            Value::Null | Value::Bool(_) | Value::Number(_) => 0,
            Value::String(text) => text.len(),
            Value::Array(items) => items.iter().map(value_bytes).sum(),
            Value::Object(fields) => fields
                .iter()
                .map(|(name, value)| name.len() + value_bytes(value))
                .sum(),
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::store::SessionAddress;

    fn run<'a>(address: &'a SessionAddress, run_id: &'a str) -> RunRef<'a> {
        RunRef {
            address,
            stream_id: "st",
            run_id,
        }
    }

    #[test]
    fn a_log_is_taken_once_and_only_by_its_run() {
        let cache = LogCache::default();
        let address = SessionAddress::root("s1");
        cache.keep(run(&address, "r1"), vec![Message::user("hi")]);
        assert!(cache.take(run(&address, "r2")).is_empty());
        assert_eq!(cache.take(run(&address, "r1")), vec![Message::user("hi")]);
        assert!(cache.take(run(&address, "r1")).is_empty());
        assert_eq!(cache.held(), (0, 0));
    }

    #[test]
    fn a_full_cache_drops_one_run_to_keep_another() {
        let cache = LogCache::default();
        let runs = LogCacheBounds::DEFAULT_RUNS;
        let addresses: Vec<SessionAddress> = (0..=runs)
            .map(|i| SessionAddress::root(format!("s{i}")))
            .collect();
        for address in &addresses {
            cache.keep(run(address, "r"), vec![Message::user("hi")]);
        }
        assert_eq!(cache.held().0, runs);
        // The first kept went first.
        assert!(cache.take(run(&addresses[0], "r")).is_empty());
        let held = addresses
            .iter()
            .filter(|address| !cache.take(run(address, "r")).is_empty())
            .count();
        assert_eq!(held, runs);
    }

    #[test]
    fn a_cache_over_its_byte_bound_evicts_the_oldest_logs() {
        let log = |bytes: usize| vec![Message::user("x".repeat(bytes))];
        let weight = message_bytes(&log(1_000_000)[0]);
        let cache = LogCache::new(LogCacheBounds {
            runs: 100,
            bytes: weight * 5 / 2,
        });
        let addresses: Vec<SessionAddress> = (0..4)
            .map(|i| SessionAddress::root(format!("s{i}")))
            .collect();
        cache.keep(run(&addresses[0], "r"), log(1_000_000));
        cache.keep(run(&addresses[1], "r"), log(1_000_000));
        assert_eq!(cache.held(), (2, 2 * weight));
        // A third log would pass the byte bound: the oldest goes, though runs are far from full.
        cache.keep(run(&addresses[2], "r"), log(1_000_000));
        assert_eq!(cache.held(), (2, 2 * weight));
        assert!(cache.take(run(&addresses[0], "r")).is_empty());
        assert_eq!(cache.take(run(&addresses[1], "r")), log(1_000_000));
        // A log heavier than the whole bound is not kept, and evicts nothing.
        cache.keep(run(&addresses[3], "r"), log(3_000_000));
        assert_eq!(cache.held(), (1, weight));
        assert_eq!(cache.take(run(&addresses[2], "r")), log(1_000_000));
        // Keeping a run's log again replaces its entry rather than adding to it.
        cache.keep(run(&addresses[1], "r"), log(10));
        cache.keep(run(&addresses[1], "r"), log(1_000_000));
        assert_eq!(cache.held(), (1, weight));
    }

    #[test]
    fn a_cache_bounded_to_no_runs_keeps_nothing() {
        let cache = LogCache::new(LogCacheBounds {
            runs: 0,
            bytes: 1 << 20,
        });
        let address = SessionAddress::root("s1");
        cache.keep(run(&address, "r1"), vec![Message::user("hi")]);
        assert!(cache.take(run(&address, "r1")).is_empty());
    }

    #[test]
    fn a_log_weighs_what_its_messages_hold() {
        let small = message_bytes(&Message::user(""));
        assert_eq!(message_bytes(&Message::user("abcd")), small + 4);
        // A chat message's file parts count with every byte of their data URLs.
        let file = baton_core::message::FilePart {
            media_type: "image/png".into(),
            url: format!("data:image/png;base64,{}", "A".repeat(4096)),
            filename: None,
        };
        let with_file = Message::user_with(
            "abcd",
            baton_core::message::UserExtras {
                files: vec![file.clone()],
                ..Default::default()
            },
        );
        assert!(message_bytes(&with_file) >= small + 4 + 4096 + "image/png".len());
        assert_eq!(message_bytes(&with_file), small + 4 + file.held_bytes());
        let value = serde_json::json!({"ab": ["cd", 1, null]});
        let slot = std::mem::size_of::<Value>();
        assert_eq!(
            value_bytes(&value),
            slot + 2 + slot + slot + 2 + slot + slot
        );
    }
}
