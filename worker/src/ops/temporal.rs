//! What the operations ask of Temporal: starting a run's workflow (also a parent's that its ended
//! children's reports resume) or a suspended run's deadline workflow, and whether a workflow
//! exists or runs. Every workflow the server starts uses
//! [`start_options`].

use crate::state::AppState;
use baton_activities::io::{ActivityPolicy, DeadlineStart, ParentNext, RunInput};
use baton_core::{
    AgentRegistry, ApiError, ErrorCode, Store,
    chunk::RunError,
    store::{RunRef, SessionAddress, SessionState, Status},
};
use baton_workflows::AgentRunWorkflow;
use temporalio_client::{
    Client, WorkflowDescribeOptions, WorkflowExecutionStatus, WorkflowIdReusePolicy,
    WorkflowStartOptions,
    errors::{WorkflowInteractionError, WorkflowStartError},
};

/// The options of a workflow the server starts: on the server's task queue, and never a second
/// workflow of an id already used (its ids name one run each). Eager: where a worker of that
/// queue shares the server's Temporal client (`batond dev`), the start's answer carries the
/// run's first workflow task straight to it, without a trip through Temporal's matching; with
/// no such worker the start is an ordinary one.
fn start_options(task_queue: &str, workflow_id: &str) -> WorkflowStartOptions {
    WorkflowStartOptions::new(task_queue.to_owned(), workflow_id.to_owned())
        .id_reuse_policy(WorkflowIdReusePolicy::RejectDuplicate)
        .enable_eager_workflow_start(true)
        .build()
}

/// Starts the workflow of a run that Redis already holds; one of that id started already counts
/// as started (a run's workflow id names that run alone). If Temporal refuses, a resume's claim
/// of a suspended session is released (the session waits for its calls again and can be resumed
/// later); any other run is recorded as failed (`temporal_unavailable`) so status and stream say
/// why nothing runs.
pub(super) async fn start_run_workflow(
    state: &AppState,
    workflow_id: &str,
    input: RunInput,
) -> Result<(), ApiError> {
    start_stored_run(
        &state.temporal,
        &state.store,
        &state.task_queue,
        workflow_id,
        input,
    )
    .await
}

/// [`start_run_workflow`] for a caller without the server's state (the worker's zombie sweep,
/// resuming a parent its failed child answered).
pub(crate) async fn start_stored_run(
    temporal: &Client,
    store: &Store,
    task_queue: &str,
    workflow_id: &str,
    input: RunInput,
) -> Result<(), ApiError> {
    let options = start_options(task_queue, workflow_id);
    let (address, stream_id, run_id) = (
        input.address.clone(),
        input.stream_id.clone(),
        input.run_id.clone(),
    );
    let error = match temporal
        .start_workflow(AgentRunWorkflow::run, input, options)
        .await
    {
        // Its id names this one run: whoever started it first (the child's own report to its
        // parent racing a stop's or a sweep's) started the run wanted here. Releasing or failing
        // the claim now would take the running run's session from under it.
        Ok(_) | Err(WorkflowStartError::AlreadyStarted { .. }) => return Ok(()),
        Err(error) => error,
    };
    let session_id = &address.session_id;
    tracing::error!(%session_id, %error, "starting the run's workflow failed");
    let run = RunRef {
        address: &address,
        stream_id: &stream_id,
        run_id: &run_id,
    };
    match store.release_claim(run).await {
        Ok(true) => {
            tracing::info!(%session_id, %run_id, "the claim is released: the session waits again");
            return Err(ApiError::new(
                ErrorCode::TemporalUnavailable,
                format!("the resumed run could not be started; the session waits again: {error}"),
            ));
        }
        Ok(false) => {}
        Err(store_error) => {
            tracing::error!(%session_id, %store_error, "releasing the claim failed");
        }
    }
    let run_error = RunError {
        code: ErrorCode::TemporalUnavailable,
        message: "the run could not be started".to_owned(),
    };
    if let Err(store_error) = store.fail_run(run, &run_error, Default::default()).await {
        tracing::error!(%session_id, %store_error, "recording the failed start failed too");
    }
    Err(ApiError::new(
        run_error.code,
        format!("{}: {error}", run_error.message),
    ))
}

/// Reports the children of `parent` that ended while it awaited them (the idempotent report a
/// child's workflow makes, `baton_activities::report_ended_children`) and, when that completes
/// the parent's batch, starts the parent's resumed run as [`start_stored_run`] does. Answers that
/// run's (run id, workflow id). For whoever acts outside the children's workflows: a rewind that
/// gave a parent its sub-agent calls back, the zombie sweep that failed a child.
pub(crate) async fn start_parent_of_ended_children(
    temporal: &Client,
    store: &Store,
    registry: &AgentRegistry,
    task_queue: &str,
    policy: &ActivityPolicy,
    parent: &SessionAddress,
) -> Result<Option<(String, String)>, ApiError> {
    let next = baton_activities::report_ended_children(store, registry, parent, policy).await?;
    let ParentNext::Resume { run, workflow_id } = next else {
        return Ok(None);
    };
    let run_id = run.run_id.clone();
    start_stored_run(temporal, store, task_queue, &workflow_id, *run).await?;
    Ok(Some((run_id, workflow_id)))
}

/// [`start_parent_of_ended_children`] with the server's own Temporal client, store, registry,
/// task queue and run policy: for the operations (a rewind, a child's stop, a tree's resume).
pub(super) async fn resume_parent_of_ended_children(
    state: &AppState,
    parent: &SessionAddress,
) -> Result<Option<(String, String)>, ApiError> {
    start_parent_of_ended_children(
        &state.temporal,
        &state.store,
        &state.registry,
        &state.task_queue,
        &state.policy,
        parent,
    )
    .await
}

/// Starts the deadline workflow of a run that suspended without a workflow of its own (a rewind
/// to a suspension); id and input are the ones the run's workflow gives its own (see
/// [`DeadlineStart`]). The suspension is already durable, so a failure here is reported but
/// nothing is undone: the calls can still be answered and the session resumed by hand.
pub(super) async fn start_deadline_workflow(
    state: &AppState,
    run: RunInput,
    wake_at: u64,
) -> Result<(), ApiError> {
    let deadline = DeadlineStart::new(run, wake_at);
    // A delayed start, as a suspending run makes it: nothing runs in Temporal until the deadline.
    baton_activities::start_delayed_deadline(&state.temporal, &state.task_queue, &deadline)
        .await
        .map_err(|error| {
            let workflow_id = &deadline.workflow_id;
            tracing::error!(%workflow_id, %error, "starting the deadline workflow failed");
            ApiError::new(ErrorCode::TemporalUnavailable, error.to_string())
        })
}

/// Whether Temporal knows a workflow of this id, in any state.
pub(super) async fn workflow_exists(state: &AppState, workflow_id: &str) -> Result<bool, ApiError> {
    Ok(workflow_status(state, workflow_id).await?.is_some())
}

/// Whether Temporal is running the workflow of the session's current run. A suspended or ended
/// run has none; a run whose workflow is gone (or never started) is not executing.
pub(super) async fn is_executing(
    state: &AppState,
    session: &SessionState,
) -> Result<bool, ApiError> {
    let Some(workflow_id) = session
        .workflow_id
        .as_ref()
        .filter(|_| session.status == Status::Active)
    else {
        return Ok(false);
    };
    Ok(workflow_status(state, workflow_id).await? == Some(WorkflowExecutionStatus::Running))
}

/// Cancels the workflow of a stopped run, if it still runs. A suspended run has no workflow left;
/// any other outcome is logged, not fatal: the stop is recorded, so the run's own writes are
/// refused from now on.
pub(super) async fn cancel_run_workflow(state: &AppState, workflow_id: &str) {
    let handle = state
        .temporal
        .get_workflow_handle::<AgentRunWorkflow>(workflow_id.to_owned());
    if let Err(error) = handle.cancel(Default::default()).await {
        tracing::debug!(%workflow_id, %error, "cancelling the stopped run's workflow");
    }
}

/// The status of a workflow, `None` if Temporal has none of that id.
async fn workflow_status(
    state: &AppState,
    workflow_id: &str,
) -> Result<Option<WorkflowExecutionStatus>, ApiError> {
    let handle = state
        .temporal
        .get_workflow_handle::<AgentRunWorkflow>(workflow_id.to_owned());
    match handle.describe(WorkflowDescribeOptions::default()).await {
        Ok(description) => Ok(Some(description.status())),
        Err(WorkflowInteractionError::NotFound(_)) => Ok(None),
        Err(error) => Err(ApiError::new(
            ErrorCode::TemporalUnavailable,
            format!("cannot ask Temporal about workflow {workflow_id}: {error}"),
        )),
    }
}
