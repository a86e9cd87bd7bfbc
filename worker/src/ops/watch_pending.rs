//! `GET /pending/stream`: the inbox as it changes. The page is read at once and again every
//! [`WATCH_EVERY`]; a read whose calls differ from the last one sent is the next event (a call's
//! age alone is no change: the client counts it from `awaitedSince`). The watch holds a place
//! under the follower caps, as a stream does, and ends with `unauthorized` soon after its token
//! is revoked.

use super::list_pending;
use crate::{
    auth::Principal,
    state::AppState,
    stream::{Credential, FollowerPermit, revocation::RevocationWatch},
};
use baton_core::{
    ApiError,
    search::{PendingPage, SessionSearch},
};
use std::time::Duration;

/// How often a watch reads the inbox again.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);

/// One open inbox watch.
pub struct PendingWatch {
    state: AppState,
    principal: Principal,
    search: SessionSearch,
    first: Option<PendingPage>,
    sent: Option<String>,
    revocation: Option<RevocationWatch>,
    _permit: FollowerPermit,
}

/// Opens a watch of the inbox `search` filters: refused as `/pending` would refuse it (its first
/// page is read here), or past the follower caps (`rate_limited`).
pub async fn watch_pending(
    state: &AppState,
    principal: &Principal,
    credential: &Credential,
    search: SessionSearch,
) -> Result<PendingWatch, ApiError> {
    let first = list_pending(state, principal, &search).await?;
    // Under the caps as a stream of a session named for the principal's inbox (a session id
    // never holds `:`), so each principal's watches are capped apart.
    let inbox = format!("inbox:{}", principal.name());
    let permit = super::admit_follower(state, &inbox, credential)?;
    Ok(PendingWatch {
        state: state.clone(),
        principal: principal.clone(),
        search,
        first: Some(first),
        sent: None,
        revocation: RevocationWatch::of(principal),
        _permit: permit,
    })
}

impl PendingWatch {
    /// The next page that differs from the last one sent (the first at once); an error ends
    /// the watch.
    pub async fn next(&mut self) -> Result<PendingPage, ApiError> {
        loop {
            let page = match self.first.take() {
                Some(page) => page,
                None => {
                    tokio::time::sleep(WATCH_EVERY).await;
                    if let Some(watch) = &mut self.revocation
                        && let Some(revoked) = watch.revoked(&self.state.store).await
                    {
                        return Err(revoked);
                    }
                    list_pending(&self.state, &self.principal, &self.search).await?
                }
            };
            let mut ageless = page.clone();
            ageless.calls.iter_mut().for_each(|call| call.age_ms = None);
            let seen = serde_json::to_string(&ageless).unwrap_or_default();
            if self.sent.as_ref() != Some(&seen) {
                self.sent = Some(seen);
                return Ok(page);
            }
        }
    }
}
