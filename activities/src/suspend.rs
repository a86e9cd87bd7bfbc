//! Suspending a run on the calls its step awaits (client tools, approvals, a tool's question): commit the step with
//! a pending entry per call, and tell the workflow when its deadline workflow should wake.

use crate::{
    AgentActivities,
    failure::Error,
    io::{StepInput, SuspendedRun},
    plan::{self, AfterInline, SortedCalls, SuspendAt},
};
use baton_core::{
    ErrorCode,
    message::{Message, ToolCall},
    observe::{self, CallIds, ClientCallEvent},
    store::{self, PendingCall, StagedSuspension, StagedTurn, StepProgress, Written},
    tool::ask::Asked,
};
use std::collections::HashMap;

impl AgentActivities {
    /// The body of the `commit_suspended_step` activity, after a step's tool activities.
    pub(crate) async fn suspend_after_tools(
        &self,
        input: &StepInput,
    ) -> Result<SuspendedRun, Error> {
        let progress = self.store.step_progress(input.step_ref()).await?;
        let turn = match progress {
            StepProgress::Suspended { tool_call_ids } => {
                return self.suspended_run(input, tool_call_ids).await;
            }
            StepProgress::Staged(turn) => turn,
            StepProgress::New | StepProgress::Committed => {
                return Err(Error::typed(
                    ErrorCode::Internal,
                    format!(
                        "step {} of run {} cannot suspend: {progress:?}",
                        input.step, input.run_id
                    ),
                ));
            }
        };
        let agent = self.agent(&input.agent_type)?;
        let Message::Assistant { tool_calls, .. } = &turn.message else {
            return self.suspend(input, &[], &HashMap::new()).await;
        };
        let sorted = SortedCalls::new(agent, tool_calls);
        // The tool calls that stopped to ask a person.
        let activity_ids: Vec<&str> = sorted.activities.iter().map(|c| c.id.as_str()).collect();
        let asks = self
            .store
            .staged_asks(input.step_ref(), &activity_ids)
            .await?;
        // Awaited: the client calls and approvals, the tool calls that asked, and the sub-agent
        // calls whose child suspended (they have no result yet), in call order.
        let mut awaited = Vec::with_capacity(sorted.awaited.len());
        for call in tool_calls {
            let waits = if asks.contains_key(&call.id) {
                true
            } else if sorted.sub_agents.iter().any(|(sub, _)| sub.id == call.id) {
                !self
                    .store
                    .has_staged_tool_result(input.step_ref(), &call.id)
                    .await?
            } else {
                sorted.awaited.iter().any(|held| held.id == call.id)
            };
            if waits {
                awaited.push(call);
            }
        }
        self.suspend(input, &awaited, &asks).await
    }

    /// Commits the step and suspends the run on its awaited calls, each with its deadline
    /// (those in `asks` on what they asked).
    pub(crate) async fn suspend(
        &self,
        input: &StepInput,
        awaited: &[&ToolCall],
        asks: &HashMap<String, Asked>,
    ) -> Result<SuspendedRun, Error> {
        let suspension = self.suspension(input, awaited, asks)?;
        // A far deadline is indexed in the commit's round trip, after it.
        let written = self
            .store
            .commit_suspended_step_indexing(
                input.step_ref(),
                &suspension.pending,
                suspension.far_deadline,
            )
            .await?;
        Ok(suspended(input, suspension, written))
    }

    /// For a fresh turn each of whose calls is awaited (nothing for the run to run first):
    /// stages it and suspends the run in one round trip. `None` when the turn is not one, or
    /// when the store wrote no suspension (an earlier attempt staged the step, a call id is
    /// taken in the tree): the step then stages and commits the usual way.
    pub(crate) async fn stage_and_suspend(
        &self,
        input: &StepInput,
        turn: &StagedTurn,
    ) -> Result<Option<SuspendedRun>, Error> {
        let Message::Assistant { tool_calls, .. } = &turn.message else {
            return Ok(None);
        };
        let calls = SortedCalls::new(self.agent(&input.agent_type)?, tool_calls);
        if !calls.inline.is_empty() || !matches!(calls.after_inline(), AfterInline::Suspend) {
            return Ok(None);
        }
        let suspension = self.suspension(input, &calls.awaited, &HashMap::new())?;
        let staged = self
            .store
            .stage_turn_and_suspend(
                input.step_ref(),
                turn,
                &suspension.pending,
                suspension.far_deadline,
            )
            .await?;
        Ok(match staged {
            StagedSuspension::Suspended => Some(suspended(input, suspension, Written::New)),
            StagedSuspension::UsualWay => None,
        })
    }

    /// The pending entry of each awaited call, in call order, and when the run should wake.
    fn suspension(
        &self,
        input: &StepInput,
        awaited: &[&ToolCall],
        asks: &HashMap<String, Asked>,
    ) -> Result<Suspension, Error> {
        let agent = self.agent(&input.agent_type)?;
        let at = SuspendAt {
            run_id: &input.run_id,
            step: input.step,
            now: store::now_ms(),
        };
        let pending = plan::pending_calls(agent, at, awaited, asks);
        let wake_at = plan::wake_at(agent, &pending);
        Ok(Suspension {
            far_deadline: self.far_deadline(wake_at),
            wake_at,
            pending,
        })
    }

    /// The suspension of a run whose step is already committed (a retried activity).
    pub(crate) async fn suspended_run(
        &self,
        input: &StepInput,
        tool_call_ids: Vec<String>,
    ) -> Result<SuspendedRun, Error> {
        let agent = self.agent(&input.agent_type)?;
        let pending: Vec<PendingCall> = self
            .store
            .pending_calls(&input.address)
            .await?
            .into_iter()
            .filter(|call| tool_call_ids.contains(&call.tool_call_id))
            .collect();
        let wake_at = plan::wake_at(agent, &pending);
        Ok(SuspendedRun {
            deadline_indexed: self
                .index_far_deadline(&input.address, &input.run_id, wake_at)
                .await?,
            wake_at,
            tool_call_ids,
        })
    }
}

/// A step's suspension before it is written: its pending calls and its deadline.
struct Suspension {
    pending: Vec<PendingCall>,
    wake_at: Option<u64>,
    /// The deadline the suspension indexes itself, beyond the deadline horizon.
    far_deadline: Option<u64>,
}

/// The run suspended as `suspension`, `written` by this attempt or found written by another:
/// a new suspension's calls are registered (observed), and the suspension logged.
fn suspended(input: &StepInput, suspension: Suspension, written: Written) -> SuspendedRun {
    let Suspension {
        pending,
        wake_at,
        far_deadline,
    } = suspension;
    // A retried attempt that finds the step committed registered nothing new.
    if written == Written::New {
        for call in &pending {
            observe::client_call(
                ClientCallEvent::Registered,
                call_ids(input, &call.tool_call_id, &call.tool_name),
                None,
                None,
            );
        }
    }
    tracing::info!(
        session = %input.address.session_id,
        run = %input.run_id,
        step = input.step,
        calls = pending.len(),
        "run suspended on client calls"
    );
    SuspendedRun {
        deadline_indexed: far_deadline.is_some(),
        wake_at,
        tool_call_ids: pending.into_iter().map(|p| p.tool_call_id).collect(),
    }
}

/// The ids of call `tool_call_id` (of tool `tool`) of `input`'s run, for a client-call event.
pub(crate) fn call_ids<'a>(
    input: &'a StepInput,
    tool_call_id: &'a str,
    tool: &'a str,
) -> CallIds<'a> {
    CallIds {
        session_id: &input.address.session_id,
        root_session_id: &input.address.root_session_id,
        run_id: &input.run_id,
        tool_call_id,
        tool,
    }
}
