//! The consumer's reconciliation of the remote children a rewind left without their call
//! (orphans): a child's call did not survive the rewind, so nothing will ever read its end.
//! Each orphan's producer is asked for the child's status; a child still running (or waiting
//! for people) is interrupted, best effort, to bound what it spends; one that ended is left as
//! it is. Its rollup is read and counted (an orphan's spend is spend), and what was done is
//! recorded in the caller's state (`Store::mark_remote_orphan`). A remote call that survived
//! the rewind is never one of them: its child is the call's, as before the rewind.

use crate::producer::{CallError, Producer};
use baton_core::{
    ErrorCode, Store,
    remote::Status,
    store::{OrphanOutcome, RemoteOrphan, SessionAddress, now_ms},
    subagent::RemoteAgent,
};

/// A remote child whose call a rewind cut.
#[derive(Debug, Clone)]
pub struct Orphan {
    pub child_session_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    /// The step that made the call.
    pub step: u32,
    /// The declaration of the call's tool: how to reach its producer.
    pub remote: RemoteAgent,
}

/// Reconciles the orphans of `address`'s rewind to `checkpoint_id`, one after the other. Never
/// fails: a producer that cannot be reached is recorded as such, a store error is logged.
pub async fn reconcile_orphans(
    store: &Store,
    http: &reqwest::Client,
    address: &SessionAddress,
    checkpoint_id: u32,
    orphans: Vec<Orphan>,
) {
    for orphan in orphans {
        let producer = Producer::new(http, &orphan.remote);
        let child = orphan.child_session_id.as_str();
        let Some((outcome, child_status, reason)) = reconcile_one(&producer, child).await else {
            // The producer has no such session: the call never started its child.
            continue;
        };
        let usage = producer.usage(child).await.ok();
        let record = RemoteOrphan {
            tool_call_id: orphan.tool_call_id.clone(),
            tool_name: orphan.tool_name.clone(),
            checkpoint_id,
            outcome,
            child_status,
            reason,
            at: now_ms(),
        };
        match store
            .mark_remote_orphan(address, child, &record, usage.as_ref())
            .await
        {
            Ok(_) => tracing::info!(
                session_id = %address.session_id,
                child_session_id = %child,
                tool_call_id = %orphan.tool_call_id,
                outcome = ?outcome,
                "a remote child the rewind left without its call was reconciled"
            ),
            Err(error) => tracing::warn!(
                session_id = %address.session_id,
                child_session_id = %child,
                %error,
                "an orphaned remote child's record was not written"
            ),
        }
    }
}

/// What reconciling one child did, its status and why it failed; `None` when the producer
/// has no such session.
async fn reconcile_one(
    producer: &Producer<'_>,
    child: &str,
) -> Option<(OrphanOutcome, Option<String>, Option<String>)> {
    let status = match producer.status(child).await {
        Ok(status) => status.status,
        Err(CallError::Refused(refused)) if refused.code == ErrorCode::NotFound => return None,
        // Unknown: an interrupt is still worth a try.
        Err(_) => Status::Running,
    };
    let word = serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned));
    if matches!(
        status,
        Status::Completed | Status::Failed | Status::Interrupted
    ) {
        return Some((OrphanOutcome::Ended, word, None));
    }
    match producer.stop(child, "interrupt").await {
        Ok(()) => Some((OrphanOutcome::Interrupted, word, None)),
        // It ended between the two requests.
        Err(CallError::Refused(refused)) if refused.code == ErrorCode::RunNotActive => {
            Some((OrphanOutcome::Ended, word, None))
        }
        Err(error) => Some((
            OrphanOutcome::InterruptFailed,
            word,
            Some(error.to_string()),
        )),
    }
}
