//! Why a remote call's follower was cancelled or fenced, and what it passes on. Temporal cancels
//! an activity both when its workflow is cancelled (the caller was interrupted or aborted: the
//! child must be stopped too) and when the attempt is taken away from this worker (its heartbeat
//! timed out under load, or the worker shuts down: another attempt attaches to the same child and
//! reads on, so the child must NOT be stopped). The SDK gives no reason, so the caller's session
//! says which. A follower fenced by its caller's stop before the cancellation reaches it (its
//! next forward refused by the caller's run guard, or the call's end `Stale`) passes the stop on
//! the same way: the child ends as its caller did, interrupted or aborted.

use super::remote::Followed;
use crate::{AgentActivities, io::StepInput};
use baton_core::{
    ErrorCode,
    session::{SessionState, StopKind},
    store::SessionAddress,
};

impl AgentActivities {
    /// How the caller of `step` was stopped, if it was (or another run took its session): only
    /// then does a cancelled or fenced follower pass the stop on to the child. A child's caller
    /// fenced by its root's stop reads as stopped as the root was. A session that cannot be read
    /// counts as not stopped: a child wrongly interrupted fails a live call, a child left running
    /// after a stop only spends until its producer ends it.
    pub(super) async fn caller_stop(&self, step: &StepInput) -> Option<StopKind> {
        let caller = self.read_for_stop(&step.address).await?;
        let stopped = match &caller {
            // Terminal, not "not active": a resumed follow's caller is suspended on the run it
            // follows for.
            Some(session) if session.run_id == step.run_id => stop_of(session),
            Some(session) => Some(stop_of(session).unwrap_or(StopKind::Interrupt)),
            None => Some(StopKind::Interrupt),
        };
        let root = &step.address.root_session_id;
        if stopped.is_some() || *root == step.address.session_id {
            return stopped;
        }
        // The root's stop fences its tree before it reaches each of its sessions.
        match self.read_for_stop(&SessionAddress::root(root)).await? {
            Some(session) => stop_of(&session),
            None => Some(StopKind::Interrupt),
        }
    }

    /// The session at `address` (`None`: gone); `None` outright when it cannot be read.
    async fn read_for_stop(&self, address: &SessionAddress) -> Option<Option<SessionState>> {
        match self.store.session(address).await {
            Ok(session) => Some(session),
            Err(error) => {
                tracing::warn!(
                    session_id = %address.session_id,
                    %error,
                    "the caller of a stopped remote call could not be read; its child is left \
                     running"
                );
                None
            }
        }
    }
}

/// How a session was stopped: its stop record's kind, else its end (an abort ends `failed`
/// with `framework_cancelled`, any other end counts as an interrupt); `None` while it lives on.
fn stop_of(session: &SessionState) -> Option<StopKind> {
    if let Some(stop) = &session.stop {
        return Some(stop.kind);
    }
    if !session.status.is_terminal() {
        return None;
    }
    let aborted = session
        .error
        .as_ref()
        .is_some_and(|error| error.code == ErrorCode::FrameworkCancelled);
    Some(if aborted {
        StopKind::Abort
    } else {
        StopKind::Interrupt
    })
}

impl Followed<'_> {
    /// Passes the caller's stop on to the child, as the caller was stopped, if it was: once per
    /// follower's end (its cancellation, or its fence: never both).
    pub(super) async fn pass_stop_on(&self) {
        if let Some(kind) = self.activities.caller_stop(self.step).await {
            self.stop_child(kind.into()).await;
        }
    }
}
