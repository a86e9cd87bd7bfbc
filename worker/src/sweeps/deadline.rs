//! The deadline sweep: starts the deadline workflows of suspended runs whose deadline was too far
//! away for one when they suspended (they went into the deadline index instead; see
//! `activities/src/deadline_start.rs`), once that deadline comes within the horizon. Every
//! worker sweeps on its own, every quarter of the horizon, so a deadline's workflow starts at
//! least half the horizon before it lapses, even with one pass lost. Two workers starting the same
//! deadline workflow start one (its id and request id are the suspended run's). A member whose
//! session is no longer suspended on that run (answered and resumed, stopped) is dropped.

use super::{Cascade, repeat_until};
use baton_activities::{
    io::{DeadlineStart, RunInput},
    start_delayed_deadline,
};
use baton_core::store::{self, IndexedDeadline, Status, Store};
use std::time::Duration;
use temporalio_client::Client;
use tokio_util::sync::CancellationToken;

/// Members read from the index per request.
const BATCH: usize = 200;

/// Sweeps every quarter of `horizon` until `shutdown`.
pub async fn sweep_deadlines(
    store: Store,
    temporal: Client,
    cascade: Cascade,
    horizon: Duration,
    shutdown: CancellationToken,
) {
    let every = (horizon / 4).max(Duration::from_millis(100));
    repeat_until(every, &shutdown, "deadline", || {
        sweep_deadlines_once(&store, &temporal, &cascade, horizon)
    })
    .await;
}

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineSweep {
    /// Deadline workflows started.
    pub started: u32,
    /// Members dropped because their session had moved on.
    pub dropped: u32,
}

/// One pass: every member due within `horizon` gets its deadline workflow (delayed until its
/// deadline) or, if its session moved on, is dropped. A start Temporal refuses keeps its member
/// for the next pass.
pub async fn sweep_deadlines_once(
    store: &Store,
    temporal: &Client,
    cascade: &Cascade,
    horizon: Duration,
) -> Result<DeadlineSweep, store::Error> {
    let horizon_ms = u64::try_from(horizon.as_millis()).unwrap_or(u64::MAX);
    let until = store::now_ms().saturating_add(horizon_ms);
    let mut done = DeadlineSweep::default();
    loop {
        let due = store.due_deadlines(until, BATCH).await?;
        let mut kept = 0;
        for deadline in &due {
            match suspended_run(store, cascade, deadline).await? {
                Some(run) => {
                    let start = DeadlineStart::new(run, deadline.wake_at);
                    if let Err(error) =
                        start_delayed_deadline(temporal, &cascade.task_queue, &start).await
                    {
                        tracing::warn!(
                            session_id = %deadline.address.session_id,
                            run_id = %deadline.run_id,
                            %error,
                            "the deadline sweep could not start a deadline workflow; next pass"
                        );
                        kept += 1;
                        continue;
                    }
                    tracing::debug!(
                        session_id = %deadline.address.session_id,
                        workflow_id = %start.workflow_id,
                        "the deadline sweep started a deadline workflow"
                    );
                    done.started += 1;
                }
                None => done.dropped += 1,
            }
            store.unindex_deadline(deadline).await?;
        }
        // A short batch was the last; a batch with members kept would come back the same.
        if due.len() < BATCH || kept > 0 {
            return Ok(done);
        }
    }
}

/// The input of the suspended run `deadline` names, if its session is still suspended on it:
/// what the deadline workflow reads of it (its ids, agent and stream; the rest mirrors what the
/// run that suspended had, from this worker's settings).
async fn suspended_run(
    store: &Store,
    cascade: &Cascade,
    deadline: &IndexedDeadline,
) -> Result<Option<RunInput>, store::Error> {
    let Some(state) = store.session(&deadline.address).await? else {
        return Ok(None);
    };
    if state.status != Status::SuspendedClientTool || state.run_id != deadline.run_id {
        return Ok(None);
    }
    Ok(Some(RunInput::of_session(
        deadline.address.clone(),
        &state,
        &cascade.registry,
        cascade.policy.clone(),
    )))
}
