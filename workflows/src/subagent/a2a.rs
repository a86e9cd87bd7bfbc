//! The A2A transport of sub-agent calls in the step loop: one `follow_a2a_sub_agent` activity per
//! call, beside the step's tool activities, scheduled as a remote call's follow is (with a
//! heartbeat, so a lost worker's attempt is retried on another, which follows the task recorded
//! in Redis). The activity does every request; the workflow only schedules it.

use crate::{AgentRunWorkflow, subagent::remote::follow_options};
use baton_activities::{
    AgentActivities,
    io::{RunInput, SubAgentEnd, ToolInput},
};
use temporalio_sdk::{ActivityExecutionError, WorkflowContext};

/// Runs one A2A sub-agent call to its end (or its question).
pub(super) async fn run_call(
    ctx: &WorkflowContext<AgentRunWorkflow>,
    input: &RunInput,
    call: ToolInput,
) -> Result<SubAgentEnd, ActivityExecutionError> {
    ctx.execute_activity(
        AgentActivities::follow_a2a_sub_agent,
        call,
        follow_options(input),
    )
    .await
}
