//! A session's callback (the producer mount's): where to POST when a turn of the session ends,
//! and the last turn delivered, kept in the session's state hash (so they expire with it) and
//! written by one script each; and the callback index, the sessions a worker's callback sweep
//! looks at.
//!
//! The index is one sorted set per prefix (`<prefix>:callbackIndex`), scored by when to look
//! next, outside every session's slot: like the deadline index it is written by plain commands
//! next to the scripts, never inside one, and it is a hint, never the truth: the sweep reads the
//! session before it acts and drops a member whose session or callback is gone. A turn's failed
//! deliveries are counted in the state hash beside the callback (`callback_failed.lua`), so the
//! count is written with the session's own guards and expires with it; the sweep's back-off is
//! the index's score.

use super::{
    Error, SessionAddress, Store,
    keys::{self, Key},
    scripts::{CALLBACK_DELIVERED, CALLBACK_FAILED, REGISTER_CALLBACK},
};
use redis::AsyncCommands;

/// A session's callback, as registered, and the turn last delivered.
#[derive(Clone, PartialEq, Eq)]
pub struct RegisteredCallback {
    pub url: String,
    pub token: String,
    /// The sequence of the last turn end delivered (0: none yet).
    pub delivered: u64,
}

impl std::fmt::Debug for RegisteredCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredCallback")
            .field("url", &self.url)
            .field("token", &"[token]")
            .field("delivered", &self.delivered)
            .finish()
    }
}

/// What a failed delivery left of a callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackFailure {
    /// The turn has failed `attempts` times so far: try again after a back-off.
    Retry { attempts: u32 },
    /// The last attempt failed: the callback is removed.
    Dropped,
}

/// The state hash fields of a callback.
const URL: &str = "callbackUrl";
const TOKEN: &str = "callbackToken";
pub(super) const DELIVERED: &str = "callbackDelivered";

impl Store {
    fn callback_index_key(&self) -> String {
        keys::callback_index_key(&self.prefix)
    }

    /// Registers the session's callback (one script; a repeat replaces it) and indexes the
    /// session for the sweep; `false` if there is no such session (nothing written).
    pub async fn register_callback(
        &self,
        address: &SessionAddress,
        url: &str,
        token: &str,
    ) -> Result<bool, Error> {
        let registered: i64 = REGISTER_CALLBACK
            .on(self, address)
            .arg(url)
            .arg(token)
            .run(self)
            .await?;
        if registered == 1 {
            self.index_callback(address, 0).await?;
        }
        Ok(registered == 1)
    }

    /// The session's callback, if it has one.
    pub async fn callback(
        &self,
        address: &SessionAddress,
    ) -> Result<Option<RegisteredCallback>, Error> {
        let (url, token, delivered): (Option<String>, Option<String>, Option<u64>) = self
            .conn()
            .hget(self.key(address, Key::State), &[URL, TOKEN, DELIVERED])
            .await?;
        Ok(url.zip(token).map(|(url, token)| RegisteredCallback {
            url,
            token,
            delivered: delivered.unwrap_or(0),
        }))
    }

    /// Records the turn ending at `sequence` delivered (the mark only rises); `false` when it
    /// was already (or the session is gone).
    pub async fn callback_delivered(
        &self,
        address: &SessionAddress,
        sequence: u64,
    ) -> Result<bool, Error> {
        let raised: i64 = CALLBACK_DELIVERED
            .on(self, address)
            .arg(sequence)
            .run(self)
            .await?;
        Ok(raised == 1)
    }

    /// Records a failed delivery of the turn ending at `sequence` (one script): the attempts of
    /// that turn so far, or [`CallbackFailure::Dropped`] when this one reached `max_attempts`
    /// and the callback was removed (nothing is delivered to it again).
    pub async fn callback_failed(
        &self,
        address: &SessionAddress,
        sequence: u64,
        max_attempts: u32,
    ) -> Result<CallbackFailure, Error> {
        let attempts: u32 = CALLBACK_FAILED
            .on(self, address)
            .arg(sequence)
            .arg(max_attempts.max(1))
            .run(self)
            .await?;
        Ok(match attempts {
            0 => CallbackFailure::Dropped,
            attempts => CallbackFailure::Retry { attempts },
        })
    }

    /// Indexes a root session for the callback sweep, due at `due_at` (ms since the epoch; 0:
    /// now). Idempotent; a later call moves the time.
    pub async fn index_callback(&self, address: &SessionAddress, due_at: u64) -> Result<(), Error> {
        let _: () = self
            .conn()
            .zadd(self.callback_index_key(), &address.session_id, due_at)
            .await?;
        Ok(())
    }

    /// Takes a session out of the callback index.
    pub async fn unindex_callback(&self, address: &SessionAddress) -> Result<(), Error> {
        let _: () = self
            .conn()
            .zrem(self.callback_index_key(), &address.session_id)
            .await?;
        Ok(())
    }

    /// Up to `limit` indexed root sessions due at or before `until` (ms since the epoch).
    pub async fn due_callbacks(
        &self,
        until: u64,
        limit: usize,
    ) -> Result<Vec<SessionAddress>, Error> {
        let members: Vec<String> = self
            .conn()
            .zrangebyscore_limit(self.callback_index_key(), 0, until, 0, limit as isize)
            .await?;
        Ok(members.iter().map(SessionAddress::root).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{new_session, store};
    use super::*;

    #[tokio::test]
    async fn a_callback_is_registered_on_a_session_only_and_its_mark_only_rises() {
        let store = store().await;
        let address = SessionAddress::root("s1");
        assert!(
            !store
                .register_callback(&address, "http://c/1", "t")
                .await
                .unwrap()
        );
        assert_eq!(store.callback(&address).await.unwrap(), None);
        assert!(store.due_callbacks(u64::MAX, 10).await.unwrap().is_empty());

        new_session(&store, &address).await;
        assert!(
            store
                .register_callback(&address, "http://c/1", "t1")
                .await
                .unwrap()
        );
        assert_eq!(
            store.due_callbacks(0, 10).await.unwrap(),
            vec![address.clone()]
        );
        assert!(store.callback_delivered(&address, 5).await.unwrap());
        assert!(!store.callback_delivered(&address, 3).await.unwrap());
        assert!(!store.callback_delivered(&address, 5).await.unwrap());
        // A repeat replaces the URL and token and keeps the mark.
        assert!(
            store
                .register_callback(&address, "http://c/2", "t2")
                .await
                .unwrap()
        );
        let callback = store.callback(&address).await.unwrap().unwrap();
        assert_eq!(
            (callback.url.as_str(), callback.delivered),
            ("http://c/2", 5)
        );
        assert!(!format!("{callback:?}").contains("t2"));
        // The session still reads as before: the fields are the callback's own.
        assert_eq!(store.session(&address).await.unwrap().unwrap().run_id, "r1");

        // Failures of one turn are counted; a delivery forgets them; the last one drops it.
        let failed = |sequence| store.callback_failed(&address, sequence, 3);
        assert_eq!(
            failed(7).await.unwrap(),
            CallbackFailure::Retry { attempts: 1 }
        );
        assert_eq!(
            failed(7).await.unwrap(),
            CallbackFailure::Retry { attempts: 2 }
        );
        assert_eq!(
            failed(8).await.unwrap(),
            CallbackFailure::Retry { attempts: 1 }
        );
        assert!(store.callback_delivered(&address, 8).await.unwrap());
        assert_eq!(
            failed(9).await.unwrap(),
            CallbackFailure::Retry { attempts: 1 }
        );
        assert_eq!(
            failed(9).await.unwrap(),
            CallbackFailure::Retry { attempts: 2 }
        );
        assert_eq!(failed(9).await.unwrap(), CallbackFailure::Dropped);
        assert_eq!(store.callback(&address).await.unwrap(), None);
        assert_eq!(failed(9).await.unwrap(), CallbackFailure::Dropped);
        assert!(
            store
                .register_callback(&address, "http://c/3", "t3")
                .await
                .unwrap()
        );
        assert_eq!(
            failed(9).await.unwrap(),
            CallbackFailure::Retry { attempts: 1 }
        );

        store.index_callback(&address, 1_000).await.unwrap();
        assert!(store.due_callbacks(999, 10).await.unwrap().is_empty());
        assert_eq!(store.due_callbacks(1_000, 10).await.unwrap().len(), 1);
        store.unindex_callback(&address).await.unwrap();
        assert!(store.due_callbacks(u64::MAX, 10).await.unwrap().is_empty());
    }
}
