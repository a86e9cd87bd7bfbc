//! The search index's writes after changes, coalesced per process: a change asks for its
//! session's entry to be rewritten after [`INDEX_DELAY`], and the changes of a session that come
//! within it (a submit and the resume that follows it, a tree's claims) make one write, from the
//! state read then, clearing the latest of their marks. A crash before the write leaves the marks
//! to the repair sweep, as before.

use super::SessionAddress;
use std::{
    collections::{HashMap, hash_map::Entry},
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

/// How long a change's index write waits for more changes of its session.
pub(super) const INDEX_DELAY: Duration = Duration::from_millis(25);

/// The sessions whose index write is due, with the latest mark each may clear (0: none).
#[derive(Debug, Clone, Default)]
pub(super) struct IndexQueue {
    waiting: Arc<Mutex<HashMap<SessionAddress, u64>>>,
}

impl IndexQueue {
    /// Notes a change of `address` marked `mark`: true when no write is due for it yet, so the
    /// caller schedules one; false when a waiting write takes this change too.
    pub(super) fn note(&self, address: &SessionAddress, mark: u64) -> bool {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match waiting.entry(address.clone()) {
            Entry::Occupied(mut due) => {
                let latest = due.get_mut();
                *latest = (*latest).max(mark);
                false
            }
            Entry::Vacant(due) => {
                due.insert(mark);
                true
            }
        }
    }

    /// Takes the write due for `address`: the latest mark it clears. A change noted after this
    /// schedules a write of its own.
    pub(super) fn take(&self, address: &SessionAddress) -> u64 {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(address)
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_within_the_delay_make_one_write_clearing_the_latest_mark() {
        let queue = IndexQueue::default();
        let a = SessionAddress::root("a");
        let b = SessionAddress::root("b");
        assert!(queue.note(&a, 0));
        assert!(!queue.note(&a, 7));
        assert!(!queue.note(&a, 5));
        assert!(queue.note(&b, 3));
        assert_eq!(queue.take(&a), 7);
        assert!(
            queue.note(&a, 0),
            "a change after the take schedules its own write"
        );
        assert_eq!(queue.take(&a), 0);
        assert_eq!(queue.take(&b), 3);
        assert_eq!(queue.take(&b), 0, "nothing is due twice");
    }
}
