//! The logs this worker's model steps read last, one per run, so the next step of a run reads
//! only what was appended since: a run's model steps are local activities played one after
//! another by the worker that holds the run's workflow. Within a run a log only grows (only a
//! rewind rewrites one, and a rewind starts a new run), so the messages held are still the
//! log's first ones, and the messages after them are the rest. A step takes its run's entry
//! out while it runs and puts the log back once the model has answered; a failed attempt
//! leaves none, and the next reads the whole log, as does a step on another worker.

use baton_core::{message::Message, store::RunRef};
use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
};

/// How many runs' logs a worker keeps. A worker serving more runs at once than this still plays
/// them right: a step that finds no entry reads the whole log.
const CAPACITY: usize = 256;

/// A run: root session, session, run id.
type RunKey = (String, String, String);

#[derive(Default)]
pub(crate) struct LogCache {
    logs: Mutex<HashMap<RunKey, Vec<Message>>>,
}

fn key(run: RunRef<'_>) -> RunKey {
    (
        run.address.root_session_id.clone(),
        run.address.session_id.clone(),
        run.run_id.to_owned(),
    )
}

impl LogCache {
    /// The log `run`'s last step read, taken out of the cache (empty if none is held).
    pub(crate) fn take(&self, run: RunRef<'_>) -> Vec<Message> {
        self.locked().remove(&key(run)).unwrap_or_default()
    }

    /// Keeps `log` as `run`'s, dropping another run's when the cache is full.
    pub(crate) fn keep(&self, run: RunRef<'_>, log: Vec<Message>) {
        let mut logs = self.locked();
        if logs.len() >= CAPACITY
            && let Some(evicted) = logs.keys().next().cloned()
        {
            logs.remove(&evicted);
        }
        logs.insert(key(run), log);
    }

    /// The logs, locked. A panic while they were locked left them whole (each change is one
    /// map call), so a poisoned lock is taken as it is.
    fn locked(&self) -> MutexGuard<'_, HashMap<RunKey, Vec<Message>>> {
        self.logs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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
    }

    #[test]
    fn a_full_cache_drops_one_run_to_keep_another() {
        let cache = LogCache::default();
        let addresses: Vec<SessionAddress> = (0..=CAPACITY)
            .map(|i| SessionAddress::root(format!("s{i}")))
            .collect();
        for address in &addresses {
            cache.keep(run(address, "r"), vec![Message::user("hi")]);
        }
        let held = addresses
            .iter()
            .filter(|address| !cache.take(run(address, "r")).is_empty())
            .count();
        assert_eq!(held, CAPACITY);
    }
}
