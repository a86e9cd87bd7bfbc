//! `RemoteFollowWorkflow`: the follow of a remote child that paused for a person, once its
//! caller's root was resumed with every relayed call answered. Its one heartbeating activity
//! resumes the child on its producer, forwards its chunks onto the caller's stream from the
//! durable cursor and, at the child's next turn end, records its next pause (the caller stays
//! suspended, holding no workflow) or answers the caller's remote call; when that completes the
//! caller's batch the caller's resumed run is started here (abandoned, so it outlives this
//! workflow), as a local child's end starts its parent's. A workflow type of its own, so the
//! agent-run workflow's histories are unchanged. Id: `remote_follow__<caller>__<relayed id>`,
//! one per pause of the child, so a second resume of the same pause attaches to it.

use crate::{retries, subagent::remote::ATTEMPT_LIMIT};
use baton_activities::{
    AgentActivities,
    io::{ParentNext, RemoteFollowInput},
};
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityOptions, ChildWorkflowOptions, ParentClosePolicy, WorkflowContext, WorkflowResult,
};

/// The follow of a resumed remote child (see the module).
#[workflow]
#[derive(Default)]
pub struct RemoteFollowWorkflow;

#[workflow_methods]
impl RemoteFollowWorkflow {
    /// Answers whether the child's end resumed its caller.
    #[run]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: RemoteFollowInput,
    ) -> WorkflowResult<bool> {
        let policy = &input.policy;
        let options = ActivityOptions::with_start_to_close_timeout(ATTEMPT_LIMIT)
            .heartbeat_timeout(policy.heartbeat_timeout)
            .retry_policy(retries(policy, policy.tool_attempts))
            .build();
        let next = ctx
            .execute_activity(
                AgentActivities::follow_resumed_remote_sub_agent,
                input.clone(),
                options,
            )
            .await?;
        let ParentNext::Resume { run, workflow_id } = next else {
            return Ok(false);
        };
        let options = ChildWorkflowOptions::builder()
            .workflow_id(workflow_id)
            .parent_close_policy(ParentClosePolicy::Abandon)
            .build();
        // A start refused because the run's workflow exists (a retried attempt) is what we want.
        let _started = ctx
            .start_child_workflow(crate::AgentRunWorkflow::run, *run, options)
            .await;
        Ok(true)
    }
}
