//! The one start of a remote child's follow (`RemoteFollowWorkflow`): its workflow id and its
//! input, whoever starts it (the root's resume of a paused child, a callback of a child its
//! caller holds nothing for, the remote-wait sweep). The id is the caller's session and the first
//! call the child relayed (the caller's own call when it relayed none), so the three never start
//! two follows of one pause.

use baton_activities::io::{ActivityPolicy, RemoteFollowInput, StepInput, ToolInput};
use baton_core::{
    ApiError, ErrorCode,
    store::{PendingCall, SessionAddress, SessionState},
};
use baton_workflows::RemoteFollowWorkflow;
use temporalio_client::{
    Client, WorkflowIdReusePolicy, WorkflowStartOptions, errors::WorkflowStartError,
};

/// The follow of the remote child a caller's pending `call` waits on.
pub(crate) struct ChildFollow<'a> {
    pub(crate) address: &'a SessionAddress,
    pub(crate) caller: &'a SessionState,
    pub(crate) call: &'a PendingCall,
    /// The first call the child relayed to people through the caller, if it paused.
    pub(crate) first_relayed: Option<&'a str>,
    /// Whether the follow resumes the child on its producer first (the root's resume of a
    /// paused child), or only reads it on (its turn ended without us).
    pub(crate) resume_child: bool,
}

/// Where a follow is started, and with what.
pub(crate) struct FollowTargets<'a> {
    pub(crate) temporal: &'a Client,
    pub(crate) task_queue: &'a str,
    pub(crate) policy: &'a ActivityPolicy,
}

impl ChildFollow<'_> {
    /// The follow's workflow id.
    pub(crate) fn workflow_id(&self) -> String {
        let followed = self.first_relayed.unwrap_or(&self.call.tool_call_id);
        format!("remote_follow__{}__{followed}", self.address.session_id)
    }

    fn input(&self, policy: &ActivityPolicy) -> RemoteFollowInput {
        RemoteFollowInput {
            call: ToolInput {
                step: StepInput {
                    address: self.address.clone(),
                    agent_type: self.caller.agent_type.clone(),
                    run_id: self.caller.run_id.clone(),
                    stream_id: self.caller.stream_id.clone(),
                    step: self.call.step,
                    drain_first: false,
                },
                tool_call_id: self.call.tool_call_id.clone(),
            },
            policy: policy.clone(),
            resume_child: self.resume_child,
        }
    }

    /// Starts the follow and answers its workflow id. One already running under the id (a
    /// second resume of the same pause) is attached to; one that closed (its activity gave up:
    /// the producer was down) may be started again, since the activity does nothing for a call
    /// that is answered already.
    pub(crate) async fn start(&self, on: FollowTargets<'_>) -> Result<String, ApiError> {
        let workflow_id = self.workflow_id();
        let options = WorkflowStartOptions::new(on.task_queue.to_owned(), workflow_id.clone())
            .id_reuse_policy(WorkflowIdReusePolicy::AllowDuplicate)
            .build();
        match on
            .temporal
            .start_workflow(RemoteFollowWorkflow::run, self.input(on.policy), options)
            .await
        {
            Ok(_) | Err(WorkflowStartError::AlreadyStarted { .. }) => Ok(workflow_id),
            Err(error) => {
                tracing::error!(%workflow_id, %error, "starting a remote child's follow failed");
                Err(ApiError::new(
                    ErrorCode::TemporalUnavailable,
                    format!("the remote child's follow could not be started: {error}"),
                ))
            }
        }
    }
}
