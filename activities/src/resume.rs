//! The drain at the start of a resumed run: each awaited call of the suspended step becomes a
//! `tool` message in the log (its answer, an approved call's result, or the reason it has none),
//! then the resume's user message is appended.

use crate::{
    AgentActivities,
    failure::Error,
    io::StepInput,
    plan::{self, DrainedOutcome, Resumption},
    tools,
};
use baton_core::{
    ErrorCode,
    message::ToolResult,
    store::{self, DrainedCall, PendingCall},
};
use std::collections::HashMap;
use temporalio_sdk::activities::ActivityContext;

impl AgentActivities {
    /// The body of the `apply_results_and_reload` activity.
    pub(crate) async fn drain_answers(
        &self,
        ctx: &ActivityContext,
        input: &StepInput,
    ) -> Result<(), Error> {
        let address = &input.address;
        let state = self
            .store
            .session(address)
            .await?
            .ok_or_else(|| Error::typed(ErrorCode::SessionNotFound, "the session is gone"))?;
        // With no suspension (a new turn on an ended session) only the message is appended.
        let awaited = state
            .suspension
            .map(|s| s.tool_call_ids)
            .unwrap_or_default();
        let pending: HashMap<String, PendingCall> = self
            .store
            .pending_calls(address)
            .await?
            .into_iter()
            .map(|(call, _run)| (call.tool_call_id.clone(), call))
            .collect();
        let mut answers = self.store.answers(address).await?;
        let resumption = Resumption::of(state.stop.is_some(), state.abandon_pending);
        let now = store::now_ms();
        let mut drained = Vec::with_capacity(awaited.len());
        for id in &awaited {
            let call = pending.get(id).ok_or_else(|| {
                Error::typed(
                    ErrorCode::Internal,
                    format!("awaited call {id} has no pending entry"),
                )
            })?;
            let drain = plan::drain(call, answers.remove(id), resumption, now);
            let outcome = match drain.outcome {
                DrainedOutcome::Known(outcome) => outcome,
                DrainedOutcome::RunApproved(arguments) => {
                    let context = tools::tool_context(input, id);
                    self.outcome_of(ctx, &input.agent_type, &context, &call.tool_name, arguments)
                        .await
                }
            };
            drained.push(DrainedCall {
                result: ToolResult {
                    tool_call_id: id.clone(),
                    tool_name: call.tool_name.clone(),
                    outcome,
                },
                step: call.step,
                marker_expiry: drain.marker_expiry,
                wait_ms: drain.wait_ms,
            });
        }
        self.store.apply_answers(input.run_ref(), &drained).await?;
        Ok(())
    }
}
