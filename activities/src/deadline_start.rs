//! Starting a suspended run's deadline workflow as a delayed start: Temporal holds the start until
//! the deadline, so no workflow task and no timer runs for it before then. A child workflow
//! would cost the suspending run a workflow task (the child's start is confirmed to the parent)
//! and the deadline workflow one more for its timer; this costs one start request, made by a
//! local activity of the suspending run (or by the server, for a rewind to a suspension).

use crate::{AgentActivities, failure::Error, io::DeadlineStart};
use baton_core::{ErrorCode, store};
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

impl AgentActivities {
    /// The body of the `start_deadline` local activity: starts `deadline` on `task_queue`,
    /// delayed until its wake time (see [`start_delayed_deadline`]).
    pub(crate) async fn start_delayed_deadline(
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
        start_delayed_deadline(client, task_queue, deadline)
            .await
            .map_err(|error| match error {
                DeadlineStartError::Encode(message) => Error::typed(ErrorCode::Internal, message),
                DeadlineStartError::Temporal(message) => Error::Temporal(message),
            })
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
/// already used counts as started: a retried start is harmless. Used by the suspending run's
/// `start_deadline` local activity and by the server for a rewind to a suspension.
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
