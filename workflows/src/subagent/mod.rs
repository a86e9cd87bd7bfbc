//! Sub-agent calls in the step loop, by transport: the one place in the workflow where a call's
//! transport is matched. The plan says which transport each call takes (`SubAgentCalls`); each
//! transport has a module that runs one call to its end: `local.rs` runs the child as a child
//! workflow, `remote.rs` follows a child another service runs in one heartbeating activity, and
//! `a2a.rs` a task of an agent served over A2A, likewise.
//! Each answers the same way: the call's result staged for the step
//! ([`SubAgentEnd::Answered`]), or the child suspended, so the step suspends awaiting it
//! ([`SubAgentEnd::AwaitingChild`]).

mod a2a;
mod local;
pub(crate) mod remote;

use crate::AgentRunWorkflow;
use baton_activities::io::{RunInput, StepInput, SubAgentCall, SubAgentEnd, ToolInput};
use baton_core::subagent::SubAgentTransport;
use temporalio_sdk::{ActivityExecutionError, WorkflowContext};

/// Runs one sub-agent call of `step` to its end by its transport.
pub(crate) async fn run_call(
    ctx: &WorkflowContext<AgentRunWorkflow>,
    input: &RunInput,
    step: &StepInput,
    call: SubAgentCall,
) -> Result<SubAgentEnd, ActivityExecutionError> {
    let tool = ToolInput {
        step: step.clone(),
        tool_call_id: call.tool_call_id,
    };
    match call.transport {
        SubAgentTransport::Local => local::run_call(ctx, input, tool).await,
        SubAgentTransport::Remote => remote::run_call(ctx, input, tool).await,
        SubAgentTransport::A2a => a2a::run_call(ctx, input, tool).await,
    }
}
