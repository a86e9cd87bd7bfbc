//! Revoked tokens: a token revoked by its id (`<prefix>:revokedToken:<id>`), and the session
//! tokens of a tree revoked up to an expiry (`<prefix>:{<root>}:<root>:revokedTokens`, the
//! latest expiry revoked). Each key expires when the last token it revokes would have, so the
//! set stays bounded by the tokens' lifetimes. Plain commands, not scripts: a revocation is no
//! session state transition, and a repeat of one is a no-op.

use super::{Error, SessionAddress, Store, keys};
use redis::AsyncCommands;

impl Store {
    /// Revokes the token `token_id` until `expires_at` (seconds since the epoch), when it would
    /// have expired anyway. A token already expired needs nothing.
    pub async fn revoke_token(&self, token_id: &str, expires_at: u64) -> Result<(), Error> {
        let Some(left) = seconds_left(expires_at) else {
            return Ok(());
        };
        let key = keys::revoked_token_key(&self.prefix, token_id);
        let _: () = self.conn().set_ex(&key, expires_at, left).await?;
        Ok(())
    }

    /// Whether the token `token_id` was revoked.
    pub async fn token_revoked(&self, token_id: &str) -> Result<bool, Error> {
        let key = keys::revoked_token_key(&self.prefix, token_id);
        Ok(self.conn().exists(&key).await?)
    }

    /// Revokes every session token of the tree `root_session_id` expiring at or before
    /// `expires_at` (seconds since the epoch): all those issued until now when `expires_at` is
    /// now plus the tokens' lifetime. A later revocation only raises the bound.
    pub async fn revoke_session_tokens(
        &self,
        root_session_id: &str,
        expires_at: u64,
    ) -> Result<(), Error> {
        let Some(left) = seconds_left(expires_at) else {
            return Ok(());
        };
        let key = self.key(
            &SessionAddress::root(root_session_id),
            keys::Key::RevokedTokens,
        );
        let current: Option<u64> = self.conn().get(&key).await?;
        let bound = current.map_or(expires_at, |current| current.max(expires_at));
        let _: () = self.conn().set_ex(&key, bound, left.max(1)).await?;
        Ok(())
    }

    /// Whether the token `token_id` was revoked and, for a session token of the tree
    /// `root_session_id`, the latest expiry up to which the tree's session tokens are: both
    /// reads at once (every request's check), so one round trip. Not one `MGET` or pipeline:
    /// the two keys are in different slots (a token's key has no tree tag), which a Redis
    /// Cluster refuses in one command or pipeline; both go out together on the multiplexed
    /// connection instead.
    pub async fn revocation(
        &self,
        token_id: &str,
        root_session_id: Option<&str>,
    ) -> Result<(bool, Option<u64>), Error> {
        let tree = async {
            match root_session_id {
                Some(root) => self.session_tokens_revoked_until(root).await,
                None => Ok(None),
            }
        };
        futures::try_join!(self.token_revoked(token_id), tree)
    }

    /// The latest expiry up to which the tree's session tokens are revoked, if any are.
    pub async fn session_tokens_revoked_until(
        &self,
        root_session_id: &str,
    ) -> Result<Option<u64>, Error> {
        let key = self.key(
            &SessionAddress::root(root_session_id),
            keys::Key::RevokedTokens,
        );
        Ok(self.conn().get(&key).await?)
    }
}

/// Seconds from now to `expires_at`, or `None` when it has passed.
fn seconds_left(expires_at: u64) -> Option<u64> {
    let now = super::now_ms() / 1000;
    (expires_at > now).then(|| expires_at - now)
}

#[cfg(test)]
mod tests {
    use crate::store::tests::store as test_store;

    #[tokio::test]
    async fn revocations_are_bounded_by_the_expiry_and_only_ever_raised() {
        let store = test_store().await;
        let now = crate::store::now_ms() / 1000;
        assert!(!store.token_revoked("t1").await.unwrap());
        store.revoke_token("t1", now + 60).await.unwrap();
        store
            .revoke_token("t2", now.saturating_sub(1))
            .await
            .unwrap();
        assert!(store.token_revoked("t1").await.unwrap());
        assert!(
            !store.token_revoked("t2").await.unwrap(),
            "expired: nothing kept"
        );
        assert_eq!(store.session_tokens_revoked_until("r").await.unwrap(), None);
        store.revoke_session_tokens("r", now + 100).await.unwrap();
        store.revoke_session_tokens("r", now + 50).await.unwrap();
        assert_eq!(
            store.session_tokens_revoked_until("r").await.unwrap(),
            Some(now + 100)
        );
    }
}
