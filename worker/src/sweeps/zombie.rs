//! The zombie sweep: a session left `active` by a run whose workflow is gone (a crash between
//! the session's write and its workflow's start, a terminated workflow) is failed with
//! `run_lost`, so it ends instead of staying active forever. Every worker sweeps on its own:
//! the failure is one fenced script (`fail_run`, on the run read), so two workers sweeping the
//! same session write one `end`, and a session that moved on is left alone. A failed child of a
//! session tree answers its parent's sub-agent call with that failure (its workflow, gone, cannot),
//! which resumes the parent when it completes the parent's batch. The candidates come from the
//! search index (`Store::quiet_active_runs`): a pass costs the active sessions, never the
//! suspended or ended ones, however many there are.

use super::{Cascade, repeat_until};
use baton_core::{
    ErrorCode,
    chunk::RunError,
    store::{QuietRun, RunRef, Store, Written},
};
use baton_workflows::AgentRunWorkflow;
use std::time::Duration;
use temporalio_client::{
    Client, WorkflowDescribeOptions, WorkflowExecutionStatus, errors::WorkflowInteractionError,
};
use tokio_util::sync::CancellationToken;

/// Sweeps every `grace / 2` until `shutdown`, failing the sessions that have been active and
/// quiet for `grace` with no running workflow.
pub async fn sweep_zombies(
    store: Store,
    temporal: Client,
    cascade: Cascade,
    grace: Duration,
    shutdown: CancellationToken,
) {
    let every = (grace / 2).max(Duration::from_secs(1));
    repeat_until(every, &shutdown, "zombie", || {
        sweep_once(&store, &temporal, &cascade, grace)
    })
    .await;
}

/// One pass: the sessions failed.
pub async fn sweep_once(
    store: &Store,
    temporal: &Client,
    cascade: &Cascade,
    grace: Duration,
) -> Result<Vec<QuietRun>, baton_core::store::Error> {
    let quiet_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
    let mut failed = Vec::new();
    for run in store.quiet_active_runs(quiet_ms).await? {
        let running = match &run.workflow_id {
            Some(workflow_id) => match workflow_running(temporal, workflow_id).await {
                Some(running) => running,
                // Temporal did not answer: nothing is known, the next pass looks again.
                None => continue,
            },
            None => false,
        };
        if running {
            continue;
        }
        let error = RunError {
            code: ErrorCode::RunLost,
            message: "the run's workflow is gone; the session was left active".to_owned(),
        };
        let usage = store.usage_rollup(&run.address).await?.unwrap_or_default();
        let ended = RunRef {
            address: &run.address,
            stream_id: &run.stream_id,
            run_id: &run.run_id,
        };
        // Fenced on the run read: a session another run took meanwhile is left alone.
        match store.fail_run(ended, &error, usage).await {
            Ok(Written::New) => {
                tracing::warn!(
                    event = "session.run_lost",
                    session_id = %run.address.session_id,
                    root_session_id = %run.address.root_session_id,
                    run_id = %run.run_id,
                    workflow_id = run.workflow_id.as_deref().unwrap_or(""),
                    "a session active without a running workflow was failed"
                );
                report_to_parent(store, temporal, cascade, &run).await;
                failed.push(run);
            }
            Ok(Written::AlreadyDone) | Err(baton_core::store::Error::RunRefused { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(failed)
}

/// Whether Temporal runs the workflow; `None` when it cannot say.
async fn workflow_running(temporal: &Client, workflow_id: &str) -> Option<bool> {
    let handle = temporal.get_workflow_handle::<AgentRunWorkflow>(workflow_id.to_owned());
    match handle.describe(WorkflowDescribeOptions::default()).await {
        Ok(description) => Some(description.status() == WorkflowExecutionStatus::Running),
        Err(WorkflowInteractionError::NotFound(_)) => Some(false),
        Err(error) => {
            tracing::debug!(%workflow_id, %error, "the sweep cannot ask Temporal");
            None
        }
    }
}

/// Answers the parent's sub-agent call of a child the sweep failed, and starts the parent's
/// resumed run when that answer completes its batch (as the server starts a run: a start
/// Temporal refuses gives the claim back). Failures are logged.
async fn report_to_parent(store: &Store, temporal: &Client, cascade: &Cascade, run: &QuietRun) {
    if run.address.session_id == run.address.root_session_id {
        return;
    }
    let session_id = &run.address.session_id;
    let parent = match store.parent_of(&run.address).await {
        Ok(Some((parent, _call))) => parent,
        Ok(None) => return,
        Err(error) => {
            tracing::warn!(%session_id, %error, "the sweep cannot read the failed child's parent");
            return;
        }
    };
    match crate::ops::temporal::start_parent_of_ended_children(
        temporal,
        store,
        &cascade.registry,
        &cascade.task_queue,
        &cascade.policy,
        &parent,
    )
    .await
    {
        Ok(Some((_run_id, workflow_id))) => {
            tracing::info!(parent = %parent.session_id, %workflow_id, "a failed child's end resumes its parent");
        }
        Ok(None) => {}
        Err(error) => {
            tracing::warn!(%session_id, parent = %parent.session_id,
                error = %baton_core::escape::bounded(&error.error),
                "the sweep could not report the failed child to its parent, or start the parent's resumed run");
        }
    }
}
