//! Arranging a suspended run's deadline. A deadline within the horizon gets its deadline workflow
//! now, as a delayed start: Temporal holds the start until the deadline, so no workflow task and
//! no timer runs for it before then. A deadline further away only goes into the deadline index
//! (`Store::index_deadline`), and a worker's deadline sweep starts its workflow the same way once
//! it comes within the horizon; a session answered and resumed before then (most are) never costs
//! Temporal a second workflow. A child workflow would cost the suspending run a workflow task (the
//! child's start is confirmed to the parent) and the deadline workflow one more for its timer.
//! The arranging is the `start_deadline` local activity of the suspending run; the server starts
//! a rewind's deadline workflow itself, always at once.

use crate::{AgentActivities, failure::Error, io::DeadlineStart};
use baton_core::{ErrorCode, Store, store};
use std::time::Duration;
use temporalio_client::{NamespacedClient, grpc::WorkflowService, tonic};
use temporalio_common::protos::{
    coresdk::AsJsonPayloadExt,
    temporal::api::{
        common::v1::{Payloads, WorkflowType},
        enums::v1::{TaskQueueKind, WorkflowIdConflictPolicy, WorkflowIdReusePolicy},
        taskqueue::v1::TaskQueue,
        workflowservice::v1::StartWorkflowExecutionRequest,
    },
};

/// The deadline workflow's type name, as its `#[workflow]` struct registers it.
pub(crate) const DEADLINE_WORKFLOW_TYPE: &str = "DeadlineWorkflow";

/// The default deadline horizon (see [`AgentActivities::deadline_horizon`]).
pub const DEFAULT_DEADLINE_HORIZON: Duration = Duration::from_secs(120);

impl AgentActivities {
    /// The body of the `start_deadline` local activity: arranges `deadline` (see
    /// [`arrange_deadline`]), a workflow started on `task_queue` if it is within the horizon.
    pub(crate) async fn arrange_suspended_deadline(
        &self,
        task_queue: &str,
        deadline: &DeadlineStart,
    ) -> Result<(), Error> {
        let Some(client) = &self.temporal else {
            return Err(Error::typed(
                ErrorCode::Internal,
                "these activities were built without a Temporal client",
            ));
        };
        let horizon = self.deadline_horizon;
        arrange_deadline(client, &self.store, task_queue, horizon, deadline)
            .await
            .map(|_| ())
            .map_err(|error| match error {
                DeadlineStartError::Encode(message) => Error::typed(ErrorCode::Internal, message),
                DeadlineStartError::Temporal(message) => Error::Temporal(message),
                DeadlineStartError::Store(error) => Error::Store(error),
            })
    }
}

/// Whether `wake_at` (ms since the epoch) lies further than `horizon` from now.
pub(crate) fn beyond_horizon(wake_at: u64, horizon: Duration) -> bool {
    let horizon_ms = u64::try_from(horizon.as_millis()).unwrap_or(u64::MAX);
    wake_at > store::now_ms().saturating_add(horizon_ms)
}

/// How a suspended run's deadline was arranged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineArranged {
    /// Its deadline workflow was started, delayed until the deadline.
    Started,
    /// It went into the deadline index, for a deadline sweep to start later.
    Indexed,
}

/// Arranges `deadline`: a wake time more than `horizon` away goes into the deadline index (no
/// Temporal request; `None` never indexes), a nearer one starts the deadline workflow on
/// `task_queue` now, delayed until then. Both are idempotent, so a retried arrangement is
/// harmless. A worker whose horizon is set must run the deadline sweep with it (the runner
/// does), or indexed deadlines would wait for another worker's sweep.
pub async fn arrange_deadline(
    client: &temporalio_client::Client,
    store: &Store,
    task_queue: &str,
    horizon: Option<Duration>,
    deadline: &DeadlineStart,
) -> Result<DeadlineArranged, DeadlineStartError> {
    let wake_at = deadline.input.wake_at;
    if horizon.is_some_and(|horizon| beyond_horizon(wake_at, horizon)) {
        let run = &deadline.input.run;
        store
            .index_deadline(&run.address, &run.run_id, wake_at)
            .await?;
        return Ok(DeadlineArranged::Indexed);
    }
    start_delayed_deadline(client, task_queue, deadline).await?;
    Ok(DeadlineArranged::Started)
}

/// Why a deadline workflow did not start.
#[derive(Debug, thiserror::Error)]
pub enum DeadlineStartError {
    /// The deadline's input did not encode (a bug, not a condition to retry).
    #[error("the deadline input does not encode: {0}")]
    Encode(String),
    /// Temporal refused or did not answer; retrying may help.
    #[error("the deadline workflow did not start: {0}")]
    Temporal(String),
    /// The deadline index could not be written; retrying may help.
    #[error("the deadline could not be indexed: {0}")]
    Store(#[from] store::Error),
}

/// Starts `deadline`'s workflow on `task_queue`, held by Temporal until its wake time (no
/// workflow task and no timer before then). The same request id for every attempt, and an id
/// already used counts as started: a retried start is harmless. Used by [`arrange_deadline`], the
/// deadline sweep and the server for a rewind to a suspension.
pub async fn start_delayed_deadline(
    client: &temporalio_client::Client,
    task_queue: &str,
    deadline: &DeadlineStart,
) -> Result<(), DeadlineStartError> {
    let delay = Duration::from_millis(deadline.input.wake_at.saturating_sub(store::now_ms()));
    let input = deadline
        .input
        .as_json_payload()
        .map_err(|error| DeadlineStartError::Encode(error.to_string()))?;
    let mut client = client.clone();
    let request = StartWorkflowExecutionRequest {
        namespace: client.namespace(),
        workflow_id: deadline.workflow_id.clone(),
        workflow_type: Some(WorkflowType {
            name: DEADLINE_WORKFLOW_TYPE.to_owned(),
        }),
        task_queue: Some(TaskQueue {
            name: task_queue.to_owned(),
            kind: TaskQueueKind::Normal as i32,
            normal_name: String::new(),
        }),
        input: Some(Payloads {
            payloads: vec![input],
        }),
        identity: client.identity(),
        // The same request id for every attempt: Temporal answers a repeated request with the
        // workflow it already started.
        request_id: deadline.workflow_id.clone(),
        workflow_id_reuse_policy: WorkflowIdReusePolicy::RejectDuplicate as i32,
        workflow_id_conflict_policy: WorkflowIdConflictPolicy::Fail as i32,
        workflow_start_delay: (!delay.is_zero()).then(|| delay.try_into().ok()).flatten(),
        ..Default::default()
    };
    match WorkflowService::start_workflow_execution(
        &mut client,
        tonic::IntoRequest::into_request(request),
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(status) if status.code() == tonic::Code::AlreadyExists => Ok(()),
        Err(status) => Err(DeadlineStartError::Temporal(status.message().to_owned())),
    }
}
