//! Who may open one more follower: a cap per session and per credential, counted on this
//! server. Every follower (`/sse`, gRPC `Subscribe`, the chat routes' streams) is admitted in
//! [`crate::stream::Follow::open`], and its [`FollowerPermit`] lives as long as the stream.

use baton_core::{ApiError, ErrorCode, Refusal};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// How long a refused follower is told to wait, in seconds (`Retry-After`).
const RETRY_AFTER_SECS: u64 = 5;

/// The follower caps; 0 is no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerCaps {
    /// Open streams of one session on this server.
    pub per_session: usize,
    /// Open streams of one credential (one bearer value) on this server, over all sessions.
    pub per_credential: usize,
}

/// Which credential a request came with: a digest of its bearer value, so that no secret is
/// kept; `None` without one (an open server), which only the session cap bounds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Credential(Option<String>);

impl Credential {
    /// The credential of a request's `Authorization` header: its scheme in lower case and its
    /// credential trimmed, so that `bearer  x` is the same credential as `Bearer x`.
    pub fn of(headers: &axum::http::HeaderMap) -> Self {
        let digest = headers
            .get(axum::http::header::AUTHORIZATION)
            .map(|value| {
                let value = String::from_utf8_lossy(value.as_bytes());
                let (scheme, credential) = value.trim().split_once(' ').unwrap_or(("", &value));
                format!("{} {}", scheme.to_ascii_lowercase(), credential.trim())
            })
            .map(|value| ring::digest::digest(&ring::digest::SHA256, value.as_bytes()));
        Self(digest.map(|digest| {
            digest.as_ref()[..16]
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect()
        }))
    }
}

/// The open followers of this server, by session and by credential. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Followers {
    counts: Arc<Mutex<Counts>>,
}

#[derive(Debug, Default)]
struct Counts {
    by_session: HashMap<String, usize>,
    by_credential: HashMap<String, usize>,
}

/// One admitted follower; dropping it (the stream ended or its client left) frees its place.
#[derive(Debug)]
pub struct FollowerPermit {
    followers: Followers,
    session_id: String,
    credential: Option<String>,
}

impl Followers {
    /// Admits one more follower of `session_id` from `credential`, or refuses it (429
    /// `rate_limited` with `retryAfter`) when either cap is reached. Nothing is counted for a
    /// refused follower.
    pub fn admit(
        &self,
        caps: FollowerCaps,
        session_id: &str,
        credential: &Credential,
    ) -> Result<FollowerPermit, ApiError> {
        let mut counts = self.lock();
        let session_count = counts.by_session.get(session_id).copied().unwrap_or(0);
        if caps.per_session > 0 && session_count >= caps.per_session {
            return Err(too_many(format!(
                "this session has {} open streams on this server, its cap",
                caps.per_session
            )));
        }
        if let Some(credential) = &credential.0 {
            let credential_count = counts.by_credential.get(credential).copied().unwrap_or(0);
            if caps.per_credential > 0 && credential_count >= caps.per_credential {
                return Err(too_many(format!(
                    "this credential has {} open streams on this server, its cap",
                    caps.per_credential
                )));
            }
            *counts.by_credential.entry(credential.clone()).or_default() += 1;
        }
        *counts.by_session.entry(session_id.to_owned()).or_default() += 1;
        Ok(FollowerPermit {
            followers: self.clone(),
            session_id: session_id.to_owned(),
            credential: credential.0.clone(),
        })
    }

    /// Open followers of one session on this server.
    pub fn of_session(&self, session_id: &str) -> usize {
        self.lock().by_session.get(session_id).copied().unwrap_or(0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        // A panic while counting leaves counts that are still counts.
        self.counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for FollowerPermit {
    fn drop(&mut self) {
        let mut counts = self.followers.lock();
        release(&mut counts.by_session, &self.session_id);
        if let Some(credential) = &self.credential {
            release(&mut counts.by_credential, credential);
        }
    }
}

/// One place less under `key`; an empty entry is removed, so the maps hold only what is open.
fn release(counts: &mut HashMap<String, usize>, key: &str) {
    if let Some(count) = counts.get_mut(key) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(key);
        }
    }
}

fn too_many(message: String) -> ApiError {
    ApiError::new(ErrorCode::RateLimited, message).with(Refusal::RetryAfter {
        retry_after: RETRY_AFTER_SECS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(bearer: &str) -> Credential {
        header_credential(&format!("Bearer {bearer}"))
    }

    fn header_credential(authorization: &str) -> Credential {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            axum::http::header::AUTHORIZATION,
            authorization.parse().unwrap(),
        );
        Credential::of(&headers)
    }

    #[test]
    fn each_cap_refuses_the_follower_past_it_and_a_closed_one_frees_its_place() {
        let followers = Followers::default();
        let caps = FollowerCaps {
            per_session: 2,
            per_credential: 3,
        };
        let token = credential("token");
        let first = followers.admit(caps, "s1", &token).unwrap();
        let _second = followers.admit(caps, "s1", &token).unwrap();
        let refused = followers
            .admit(caps, "s1", &credential("other"))
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::RateLimited);
        assert_eq!(
            refused.refusal(),
            Some(Refusal::RetryAfter {
                retry_after: RETRY_AFTER_SECS
            })
        );
        let _third = followers.admit(caps, "s2", &token).unwrap();
        let refused = followers.admit(caps, "s3", &token).unwrap_err();
        assert!(refused.error.contains("credential"), "{refused:?}");
        assert_eq!(followers.of_session("s3"), 0, "a refusal counts nothing");
        drop(first);
        assert_eq!(followers.of_session("s1"), 1);
        followers.admit(caps, "s3", &token).unwrap();
        // No credential (an open server): only the session cap applies.
        let anonymous = Credential::default();
        let open = FollowerCaps {
            per_session: 0,
            per_credential: 1,
        };
        let held: Vec<_> = (0..5)
            .map(|_| followers.admit(open, "s4", &anonymous).unwrap())
            .collect();
        assert_eq!(followers.of_session("s4"), 5);
        drop(held);
        assert_eq!(followers.of_session("s4"), 0);
        assert_ne!(credential("a"), credential("b"));
        // The scheme's case and the spaces around the credential make no other credential.
        for same in ["bearer a", "BEARER  a ", " Bearer a"] {
            assert_eq!(header_credential(same), credential("a"), "{same:?}");
        }
    }
}
