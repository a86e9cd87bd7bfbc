//! A subject's token buckets (`take_subject_token.lua`): who a credential speaks for (a user, a
//! session token's tree, an operator key's name) has one bucket for its starts and one for its
//! answers, shared by every server of the Redis. Each lives under a hash tag of its own,
//! `<prefix>:{~<bucket>~<subject>}:…:subjectBucket` (a session id never holds `~`), in no
//! session's slot, and expires once full again.

use super::{Error, SessionAddress, Store, now_ms, scripts::TAKE_SUBJECT_TOKEN};
use std::time::Duration;

/// Which of a subject's buckets a token is taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectBucket {
    Starts,
    Submits,
}

impl SubjectBucket {
    fn name(self) -> &'static str {
        match self {
            Self::Starts => "starts",
            Self::Submits => "submits",
        }
    }
}

impl Store {
    /// Takes one token of `subject`'s `bucket`, which holds `burst` tokens (at least one)
    /// refilled at `per_minute` a minute (at least one): `None` when taken, else how long until
    /// one is available (and nothing was written).
    pub async fn take_subject_token(
        &self,
        bucket: SubjectBucket,
        subject: &str,
        burst: u32,
        per_minute: u32,
    ) -> Result<Option<Duration>, Error> {
        let address = SessionAddress::root(format!("~{}~{subject}", bucket.name()));
        let wait_ms: u64 = TAKE_SUBJECT_TOKEN
            .on(self, &address)
            .arg(now_ms())
            .arg(burst.max(1))
            .arg(f64::from(per_minute.max(1)) / 60_000.0)
            .run(self)
            .await?;
        Ok((wait_ms > 0).then(|| Duration::from_millis(wait_ms)))
    }
}

#[cfg(test)]
mod tests {
    use super::SubjectBucket;
    use crate::store::tests::store as test_store;

    #[tokio::test]
    async fn a_subject_takes_its_burst_then_waits_and_each_bucket_is_its_own() {
        let store = test_store().await;
        let take = |bucket, subject| {
            let store = store.clone();
            async move {
                store
                    .take_subject_token(bucket, subject, 2, 1)
                    .await
                    .unwrap()
            }
        };
        assert_eq!(take(SubjectBucket::Starts, "user:ada").await, None);
        assert_eq!(take(SubjectBucket::Starts, "user:ada").await, None);
        let wait = take(SubjectBucket::Starts, "user:ada").await.unwrap();
        assert!(wait.as_secs() >= 50 && wait.as_secs() <= 60, "{wait:?}");
        assert_eq!(take(SubjectBucket::Submits, "user:ada").await, None);
        assert_eq!(take(SubjectBucket::Starts, "user:bob").await, None);
        // A subject with braces keeps its keys in one slot.
        assert_eq!(take(SubjectBucket::Starts, "user:{x}y").await, None);
    }
}
