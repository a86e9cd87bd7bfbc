//! Arranging a suspended run's deadline. A deadline within the horizon gets its deadline workflow
//! now, as a delayed start: Temporal holds the start until the deadline, so no workflow task and
//! no timer runs for it before then. A deadline further away only goes into the deadline index
//! (`Store::index_deadline`), and a worker's deadline sweep starts its workflow the same way once
//! it comes within the horizon; a session answered and resumed before then (most are) never costs
//! Temporal a second workflow. A child workflow would cost the suspending run a workflow task (the
//! child's start is confirmed to the parent) and the deadline workflow one more for its timer.
//! The activity that suspends the run indexes a far deadline itself, in its commit's round trip
//! (`Store::commit_suspended_step_indexing`); the `start_deadline` local activity of the
//! suspending run arranges the rest; the server starts a rewind's deadline workflow itself,
//! always at once.

use crate::{AgentActivities, failure::Error, io::DeadlineStart};
use baton_core::{
    ErrorCode,
    store::{self, SessionAddress},
};
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
    /// The body of the `start_deadline` local activity: a deadline beyond the horizon goes into
    /// the deadline index (a result recorded before the suspending activity indexed deadlines
    /// itself), a nearer one starts its deadline workflow on `task_queue` now, delayed until
    /// then. Both are idempotent, so a retried arrangement is harmless.
    pub(crate) async fn arrange_suspended_deadline(
        &self,
        task_queue: &str,
        deadline: &DeadlineStart,
    ) -> Result<(), Error> {
        let run = &deadline.input.run;
        let wake_at = Some(deadline.input.wake_at);
        if self
            .index_far_deadline(&run.address, &run.run_id, wake_at)
            .await?
        {
            return Ok(());
        }
        let Some(client) = &self.temporal else {
            return Err(Error::typed(
                ErrorCode::Internal,
                "these activities were built without a Temporal client",
            ));
        };
        start_delayed_deadline(client, task_queue, deadline)
            .await
            .map_err(|error| match error {
                DeadlineStartError::Encode(message) => Error::typed(ErrorCode::Internal, message),
                DeadlineStartError::Temporal(message) => Error::Temporal(message),
            })
    }

    /// Puts suspended run `run_id`'s deadline in the deadline index if it lies beyond the
    /// horizon (then no deadline workflow is needed yet); says whether it did. The decision is
    /// [`Self::far_deadline`]'s alone: the suspending activity sends the index write with its
    /// commit (so its workflow needs no local activity for a far deadline), a retried one and
    /// `start_deadline` call this.
    pub(crate) async fn index_far_deadline(
        &self,
        address: &SessionAddress,
        run_id: &str,
        wake_at: Option<u64>,
    ) -> Result<bool, Error> {
        let Some(wake_at) = self.far_deadline(wake_at) else {
            return Ok(false);
        };
        self.store.index_deadline(address, run_id, wake_at).await?;
        Ok(true)
    }

    /// `wake_at` if it lies beyond the deadline horizon (the index takes it), else `None`.
    pub(crate) fn far_deadline(&self, wake_at: Option<u64>) -> Option<u64> {
        let (Some(wake_at), Some(horizon)) = (wake_at, self.deadline_horizon) else {
            return None;
        };
        let horizon_ms = u64::try_from(horizon.as_millis()).unwrap_or(u64::MAX);
        (wake_at > store::now_ms().saturating_add(horizon_ms)).then_some(wake_at)
    }
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
}

/// Starts `deadline`'s workflow on `task_queue`, held by Temporal until its wake time (no
/// workflow task and no timer before then). The same request id for every attempt, and an id
/// already used counts as started: a retried start is harmless. Used by the `start_deadline`
/// local activity, the deadline sweep and the server for a rewind to a suspension.
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
