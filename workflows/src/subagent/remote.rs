//! The remote transport of sub-agent calls in the step loop: one `follow_remote_sub_agent`
//! activity per call, beside the step's tool activities. The activity does every HTTP call
//! (start or attach, the child's stream, its end) and stages the call's result; the workflow
//! only schedules it, with a heartbeat so a lost worker's attempt is retried on another, which
//! resumes from the cursor the caller's state keeps.

use crate::{AgentRunWorkflow, retries};
use baton_activities::{
    AgentActivities,
    io::{RunInput, SubAgentEnd, ToolInput},
};
use std::time::Duration;
use temporalio_sdk::{ActivityExecutionError, ActivityOptions, WorkflowContext};

/// Longest one attempt may run: the declaration's own `timeout` (enforced by the activity,
/// which then stages a tool error) is the real bound; this only catches a runaway attempt.
pub(crate) const ATTEMPT_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// Runs one remote sub-agent call to its end.
pub(super) async fn run_call(
    ctx: &WorkflowContext<AgentRunWorkflow>,
    input: &RunInput,
    call: ToolInput,
) -> Result<SubAgentEnd, ActivityExecutionError> {
    ctx.execute_activity(
        AgentActivities::follow_remote_sub_agent,
        call,
        follow_options(input),
    )
    .await
}

pub(super) fn follow_options(input: &RunInput) -> ActivityOptions {
    let policy = &input.policy;
    ActivityOptions::with_start_to_close_timeout(ATTEMPT_LIMIT)
        .heartbeat_timeout(policy.heartbeat_timeout)
        .retry_policy(retries(policy, policy.tool_attempts))
        .build()
}
