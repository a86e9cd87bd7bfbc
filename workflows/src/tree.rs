//! A session tree's cascade, as the workflow drives it: a child's end answers its parent (and
//! may resume it), and a run that suspended awaiting children reports those that ended before
//! its suspension was committed. How a call's child is run is `subagent/`.

use super::{AgentRunWorkflow, commit_options};
use baton_activities::{
    AgentActivities,
    io::{ParentNext, RunInput},
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
