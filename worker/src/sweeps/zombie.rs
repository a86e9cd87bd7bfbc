//! The zombie sweep: a session left `active` by a run whose workflow is gone (a crash between
//! the session's write and its workflow's start, a terminated workflow) is failed with
//! `run_lost`, so it ends instead of staying active forever. A claimed run whose workflow never
//! started (a resume whose claim was applied but whose reply was lost, so its caller got a 503
//! and started nothing) is started instead: the claim holds all its input, its workflow id names
//! that run alone, and the answers it drains were accepted. Every worker sweeps on its own:
//! the failure is one fenced script (`fail_run`, on the run read), so two workers sweeping the
//! same session write one `end`, and a session that moved on is left alone. A failed child of a
//! session tree answers its parent's sub-agent call with that failure (its workflow, gone, cannot),
//! which resumes the parent when it completes the parent's batch. The candidates come from the
//! search index (`Store::quiet_active_runs`): a pass costs the active sessions, never the
//! suspended or ended ones, however many there are.

use super::{Cascade, repeat_until};
use baton_activities::io::RunInput;
use baton_core::{
    ErrorCode,
    chunk::RunError,
    store::{ClaimedRun, QuietRun, RunRef, Store, Written},
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
        let workflow = match &run.workflow_id {
            Some(workflow_id) => workflow_now(temporal, workflow_id).await,
            None => Workflow::Never,
        };
        match workflow {
            // Running: not a zombie. Unknown (Temporal did not answer): the next pass looks
            // again.
            Workflow::Running | Workflow::Unknown => continue,
            Workflow::Never
                if run.is_claimed() && start_claimed(store, temporal, cascade, &run).await =>
            {
                continue;
            }
            Workflow::Never | Workflow::Closed => {}
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

/// What Temporal knows of a run's workflow.
enum Workflow {
    Running,
    /// It ran and ended (completed, failed, terminated) without ending the session's run.
    Closed,
    /// Temporal has no workflow of that id: it was never started.
    Never,
    /// Temporal did not answer.
    Unknown,
}

async fn workflow_now(temporal: &Client, workflow_id: &str) -> Workflow {
    let handle = temporal.get_workflow_handle::<AgentRunWorkflow>(workflow_id.to_owned());
    match handle.describe(WorkflowDescribeOptions::default()).await {
        Ok(description) if description.status() == WorkflowExecutionStatus::Running => {
            Workflow::Running
        }
        Ok(_) => Workflow::Closed,
        Err(WorkflowInteractionError::NotFound(_)) => Workflow::Never,
        Err(error) => {
            tracing::debug!(%workflow_id, %error, "the sweep cannot ask Temporal");
            Workflow::Unknown
        }
    }
}

/// Starts the workflow of a claimed run that never started, from the claim (as the server
/// starts a resumed run: a start Temporal refuses gives the claim back or fails the run).
/// Whether the sweep took care of it; not for an agent type this worker lacks (failed then).
async fn start_claimed(
    store: &Store,
    temporal: &Client,
    cascade: &Cascade,
    run: &QuietRun,
) -> bool {
    let (Some(agent), Some(workflow_id)) = (
        run.agent_type
            .as_deref()
            .and_then(|agent| cascade.registry.get(agent)),
        run.workflow_id.as_deref(),
    ) else {
        return false;
    };
    let claimed = ClaimedRun {
        run_id: run.run_id.clone(),
        workflow_id: workflow_id.to_owned(),
        step_count: run.step_count,
    };
    let input = RunInput::resumed(
        run.address.clone(),
        agent,
        &claimed,
        &run.stream_id,
        cascade.policy.clone(),
    );
    let session_id = &run.address.session_id;
    match crate::ops::temporal::start_stored_run(
        temporal,
        store,
        &cascade.task_queue,
        workflow_id,
        input,
    )
    .await
    {
        Ok(()) => {
            tracing::warn!(event = "session.claim_started", %session_id, run_id = %run.run_id,
                %workflow_id, "a claimed run whose workflow never started was started");
        }
        Err(error) => {
            tracing::warn!(%session_id, run_id = %run.run_id, %workflow_id,
                error = %baton_core::escape::bounded(&error.error),
                "the sweep could not start a claimed run's workflow");
        }
    }
    true
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
