//! The local transport of sub-agent calls in the step loop: each call's child session runs as a
//! child workflow (`agent__<type>__<childSession>`) beside the step's tool activities. The parent
//! learns how the child ended from Redis, through `finish_sub_agent`, never from the child's
//! workflow result, so the child boundary is a session id and an agent type.

use crate::{AgentRunWorkflow, commit_options};
use baton_activities::{
    AgentActivities,
    io::{RunInput, SubAgentEnd, SubAgentStart, ToolInput},
};
use temporalio_sdk::{
    ActivityExecutionError, ChildWorkflowOptions, ParentClosePolicy, WorkflowContext,
};

/// Runs one sub-agent call to its end: starts the child session (once), runs its
/// workflow and stages the call's result, or says the child suspended.
pub(super) async fn run_call(
    ctx: &WorkflowContext<AgentRunWorkflow>,
    input: &RunInput,
    call: ToolInput,
) -> Result<SubAgentEnd, ActivityExecutionError> {
    let start = ctx
        .execute_local_activity(
            AgentActivities::start_sub_agent,
            call.clone(),
            commit_options(input),
        )
        .await?;
    if let SubAgentStart::Started(child) = start {
        // Cancelling the parent (an interrupt or abort of the tree) cancels the child too.
        let options = ChildWorkflowOptions::builder()
            .workflow_id(child.workflow_id.clone())
            .parent_close_policy(ParentClosePolicy::RequestCancel)
            .build();
        let started = ctx
            .start_child_workflow(
                AgentRunWorkflow::run,
                child.run_input(input.policy.clone()),
                options,
            )
            .await;
        // How the child ended is in Redis (a failure is recorded there before its workflow
        // fails), so the workflow's own result only says when to look.
        if let Ok(started) = started {
            let _ended = started.result().await;
        }
    }
    ctx.execute_local_activity(
        AgentActivities::finish_sub_agent,
        call,
        commit_options(input),
    )
    .await
}
