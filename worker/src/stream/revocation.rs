//! A follower's credential, watched while its stream is open: a token revoked after the stream
//! was opened ends it within [`RECHECK_EVERY`], on every transport (each frames the follower's
//! last error its own way). An operator key is never revoked, so its followers are not watched.

use crate::auth::Principal;
use baton_core::{ApiError, Store};
use std::time::Duration;
use tokio::time::Instant;

/// How often an open stream re-reads its token's revocation: one Redis read per follower.
pub const RECHECK_EVERY: Duration = Duration::from_secs(2);

/// The credential of one follower and when to look at its revocation next.
pub(crate) struct RevocationWatch {
    principal: Principal,
    next_check: Instant,
}

impl RevocationWatch {
    /// The watch of `principal`'s credential, checked first [`RECHECK_EVERY`] from now (it was
    /// checked when the stream opened); none for an operator.
    pub(crate) fn of(principal: &Principal) -> Option<Self> {
        (!matches!(principal, Principal::Operator { .. })).then(|| Self {
            principal: principal.clone(),
            next_check: Instant::now() + RECHECK_EVERY,
        })
    }

    /// How long until the next check is due.
    pub(crate) fn due_in(&self) -> Duration {
        self.next_check.saturating_duration_since(Instant::now())
    }

    /// The stream's last error once the credential is revoked; `None` while it holds, or
    /// before the next check is due. A failed read keeps the stream open (the next check
    /// reads again).
    pub(crate) async fn revoked(&mut self, store: &Store) -> Option<ApiError> {
        if Instant::now() < self.next_check {
            return None;
        }
        self.next_check = Instant::now() + RECHECK_EVERY;
        match self.principal.check_not_revoked(store).await {
            Ok(()) => None,
            Err(error) if error.code == baton_core::ErrorCode::Unauthorized => Some(error),
            Err(error) => {
                tracing::warn!(code = %error.code, "a follower's revocation could not be read");
                None
            }
        }
    }
}
