//! Revoked tokens: a token revoked by its id (`<prefix>:revokedToken:<id>`), the session
//! tokens of a tree revoked up to an expiry (`<prefix>:{<root>}:<root>:revokedTokens`, the
//! latest expiry revoked), and the user tokens of a user revoked up to an issue time
//! (`<prefix>:revokedUser:<userId>`, in ms). Each key expires when the last token it revokes would have, so the
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

    /// Revokes every user token of `user_id` issued at or before `issued_until_ms` (ms since
    /// the epoch), the mark kept for `keep` (the longest a user token lives: every token it
    /// revokes has expired by then). A later revocation only raises the bound.
    pub async fn revoke_user_tokens(
        &self,
        user_id: &str,
        issued_until_ms: u64,
        keep: std::time::Duration,
    ) -> Result<(), Error> {
        let key = keys::revoked_user_key(&self.prefix, user_id);
        let current: Option<u64> = self.conn().get(&key).await?;
        let bound = current.map_or(issued_until_ms, |current| current.max(issued_until_ms));
        let _: () = self
            .conn()
            .set_ex(&key, bound, keep.as_secs().max(1))
            .await?;
        Ok(())
    }

    /// Whether the user token `token_id` was revoked, and the issue time up to which the user
    /// tokens of `user_id` are: both reads at once, so one round trip (as [`Self::revocation`]).
    pub async fn user_token_revocation(
        &self,
        token_id: &str,
        user_id: &str,
    ) -> Result<(bool, Option<u64>), Error> {
        let key = keys::revoked_user_key(&self.prefix, user_id);
        let user = async {
            let until: Option<u64> = self.conn().get(&key).await?;
            Ok::<_, Error>(until)
        };
        futures::try_join!(self.token_revoked(token_id), user)
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
        let keep = std::time::Duration::from_secs(60);
        assert_eq!(
            store.user_token_revocation("t1", "ada").await.unwrap(),
            (true, None)
        );
        store.revoke_user_tokens("ada", 2_000, keep).await.unwrap();
        store.revoke_user_tokens("ada", 1_000, keep).await.unwrap();
        assert_eq!(
            store.user_token_revocation("t3", "ada").await.unwrap(),
            (false, Some(2_000))
        );
        assert_eq!(
            store.user_token_revocation("t3", "bob").await.unwrap(),
            (false, None)
        );
    }
}
