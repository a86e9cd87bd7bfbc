//! Why a remote call's follower was cancelled. Temporal cancels an activity both when its
//! workflow is cancelled (the caller was interrupted or aborted: the child must be stopped too)
//! and when the attempt is taken away from this worker (its heartbeat timed out under load, or
//! the worker shuts down: another attempt attaches to the same child and reads on, so the child
//! must NOT be stopped). The SDK gives no reason, so the caller's session says which.

use crate::{AgentActivities, io::StepInput};

impl AgentActivities {
    /// Whether the caller of `step` was stopped (or another run took its session): only then
    /// does a cancelled follower pass the stop on to the child. A session that cannot be read
    /// counts as not stopped: a child wrongly interrupted fails a live call, a child left
    /// running after a stop only spends until its producer ends it.
    pub(super) async fn caller_stopped(&self, step: &StepInput) -> bool {
        match self.store.session(&step.address).await {
            Ok(Some(session)) => {
                // Terminal, not "not active": a resumed follow's caller is suspended on the
                // run it follows for.
                session.status.is_terminal()
                    || session.stop.is_some()
                    || session.run_id != step.run_id
            }
            Ok(None) => true,
            Err(error) => {
                tracing::warn!(
                    session_id = %step.address.session_id,
                    %error,
                    "the caller of a cancelled remote call could not be read; its child is \
                     left running"
                );
                false
            }
        }
    }
}
