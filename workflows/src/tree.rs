//! Sub-agent calls in the step loop: each call's child session runs as a child workflow
//! (`agent__<type>__<childSession>`) beside the step's tool activities. The parent learns how the
//! child ended from Redis, through `finish_sub_agent`, never from the child's workflow result, so
//! the child boundary is a session id and an agent type and could one day be crossed over HTTP.

use super::{AgentRunWorkflow, commit_options};
use baton_activities::{
    AgentActivities,
    io::{ParentNext, RunInput, StepInput, SubAgentEnd, SubAgentStart, ToolInput},
};
use temporalio_sdk::{
    ActivityExecutionError, ChildWorkflowOptions, ParentClosePolicy, WorkflowContext,
};

/// After a child's run has ended: answers the parent's call if the parent is suspended on it
/// and, when that completes the parent's batch, starts the parent's resumed run (abandoned, so it
/// outlives this workflow, which ends at once). A failure here leaves the parent suspended with
/// the answer stored or not; a resume on the root picks it up.
pub(crate) async fn report_to_parent(ctx: &WorkflowContext<AgentRunWorkflow>, input: &RunInput) {
    let next = ctx
        .execute_local_activity(
            AgentActivities::report_to_parent,
            input.clone(),
            commit_options(input),
        )
        .await;
    start_parent(ctx, next).await;
}

/// After this run suspended awaiting children: reports those that ended before the suspension
/// was committed (they found no call to answer), which may resume this session at once.
pub(crate) async fn recheck_children(ctx: &WorkflowContext<AgentRunWorkflow>, input: &RunInput) {
    let next = ctx
        .execute_local_activity(
            AgentActivities::recheck_children,
            input.clone(),
            commit_options(input),
        )
        .await;
    start_parent(ctx, next).await;
}

/// Starts the resumed run a report claimed, abandoned so that it outlives this workflow.
async fn start_parent(
    ctx: &WorkflowContext<AgentRunWorkflow>,
    next: Result<ParentNext, ActivityExecutionError>,
) {
    if let Ok(ParentNext::Resume { run, workflow_id }) = next {
        let options = ChildWorkflowOptions::builder()
            .workflow_id(workflow_id)
            .parent_close_policy(ParentClosePolicy::Abandon)
            .build();
        // A start refused because the run's workflow exists (a retried report) is what we want.
        let _started = ctx
            .start_child_workflow(AgentRunWorkflow::run, *run, options)
            .await;
    }
}

/// Runs one sub-agent call of `step` to its end: starts the child session (once), runs its
/// workflow and stages the call's result, or says the child suspended.
pub(crate) async fn run_sub_agent(
    ctx: &WorkflowContext<AgentRunWorkflow>,
    input: &RunInput,
    step: &StepInput,
    tool_call_id: String,
) -> Result<SubAgentEnd, ActivityExecutionError> {
    let call = ToolInput {
        step: step.clone(),
        tool_call_id,
    };
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
