//! The drain at the start of a resumed run: each awaited call of the suspended step becomes a
//! `tool` message in the log (its answer, an approved call's result, a tool's result once the
//! person it asked answered, or the reason it has none),
//! then the resume's user message is appended.

use crate::{
    AgentActivities,
    failure::Error,
    io::StepInput,
    plan::{self, DrainedOutcome, Resumption},
    suspend::call_ids,
    tools::Invocation,
};
use baton_core::{
    ErrorCode,
    message::{ToolOutcome, ToolResult, codes},
    observe::{self, ClientCallEvent},
    store::{self, Applied, DrainedCall, PendingCall, StepRef, StepStart, Written},
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
        let read = self.drain_read(&input.address).await?;
        self.drain(ctx, input, read, None, None).await?;
        Ok(())
    }

    /// What a drain reads, in one round trip (its three reads go together, and a caller may add
    /// its own); the claim fixed it (a submit to a claimed session stores nothing).
    pub(crate) async fn drain_read(
        &self,
        address: &store::SessionAddress,
    ) -> Result<DrainRead, store::Error> {
        let (state, pending, answers) = futures::try_join!(
            self.store.session(address),
            self.store.pending_calls(address),
            self.store.answers(address)
        )?;
        Ok(DrainRead {
            state,
            pending,
            answers,
        })
    }

    /// Drains what `read` found: see [`Self::drain_answers`]. With `step_start`, the drain's
    /// script also writes the resumed step's `step_start` when it applies; with
    /// `read_log_from`, the log from that message on is read right after the script, in its
    /// round trip. Answers what the drain wrote and read.
    pub(crate) async fn drain(
        &self,
        ctx: &ActivityContext,
        input: &StepInput,
        read: DrainRead,
        step_start: Option<StepStart>,
        read_log_from: Option<usize>,
    ) -> Result<Applied, Error> {
        let address = &input.address;
        let DrainRead {
            state,
            pending,
            mut answers,
        } = read;
        let state =
            state.ok_or_else(|| Error::typed(ErrorCode::SessionNotFound, "the session is gone"))?;
        // With no suspension (a new turn on an ended session) only the message is appended.
        let (suspended_run, awaited) = state
            .suspension
            .map(|s| (Some(s.run_id), s.tool_call_ids))
            .unwrap_or_default();
        let pending: HashMap<String, PendingCall> = pending
            .into_iter()
            .map(|call| (call.tool_call_id.clone(), call))
            .collect();
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
            // A tool's question answers the model's call that stopped on it.
            let (call_id, tool_name) = match &call.asked {
                Some(ask) => (ask.tool_call_id.as_str(), ask.tool_name.as_str()),
                None => (id.as_str(), call.tool_name.as_str()),
            };
            let mut data = Vec::new();
            let invocation = match drain.outcome {
                DrainedOutcome::Known(outcome) => Err(outcome),
                DrainedOutcome::RunApproved(arguments) => Ok(Invocation::Call(arguments)),
                DrainedOutcome::Continue {
                    arguments,
                    continuation,
                    answer,
                } => Ok(Invocation::Continue {
                    arguments,
                    continuation,
                    answer,
                }),
            };
            let outcome = match invocation {
                Err(outcome) => outcome,
                Ok(invocation) => {
                    // The suspended step is committed: an at-most-once tool's start marker goes
                    // with the resumed run's next step, whose commit clears it.
                    let marker = StepRef {
                        step: input.step + 1,
                        ..input.step_ref()
                    };
                    // What it emits for the chat goes with its result: kept with it in the
                    // log, and its tool_data chunks after its tool_end, in the drain's script.
                    let (ran, state_patch, emitted) = self
                        .invoke(ctx, input, marker, (call_id, tool_name), invocation)
                        .await?;
                    let outcome = ran.into_outcome();
                    self.stage_drained_state_patch(marker, call_id, state_patch)
                        .await?;
                    data = emitted;
                    outcome
                }
            };
            if let store::PendingKind::SubAgent(transport) = call.kind {
                let next_step = StepRef {
                    step: input.step + 1,
                    ..input.step_ref()
                };
                let state_patch = self
                    .fold_answered_child(transport, input, id, &call.tool_name)
                    .await?;
                self.stage_drained_state_patch(next_step, id, state_patch)
                    .await?;
            }
            let mut result = ToolResult::new(call_id, tool_name, outcome);
            let then = crate::tools::chat_data(call.step, &mut result, data);
            drained.push(DrainedCall {
                result,
                step: call.step,
                marker_expiry: drain.marker_expiry,
                wait_ms: drain.wait_ms,
                then,
                pending_id: call.asked.is_some().then(|| id.clone()),
            });
        }
        // The suspended runs leave the deadline index (a deadline far away has no workflow yet,
        // and now needs none), in the same round trip as the drain. Best effort: a member left
        // behind only costs the deadline sweep a look at the session when it comes due.
        let suspended: Vec<&str> = suspended_run.iter().map(String::as_str).collect();
        let (applied, unindexed) = futures::join!(
            self.store
                .apply_answers(input.run_ref(), &drained, step_start, read_log_from),
            self.store.unindex_deadlines(address, &suspended),
        );
        if let Err(error) = unindexed {
            tracing::warn!(session = %address.session_id, %error, "the deadline index keeps a resumed run");
        }
        // A retried attempt that finds the answers applied drained nothing new.
        let applied = applied?;
        if applied.written == Written::New {
            log_drained(input, &drained);
        }
        Ok(applied)
    }

    /// Stages the change of the custom state a drained call made (an approved tool's, or a
    /// parent's fold of its sub-agent's end) with the resumed run's next step, whose commit
    /// applies it: the drain itself writes no checkpoint, and the state changes only with one.
    async fn stage_drained_state_patch(
        &self,
        next_step: StepRef<'_>,
        tool_call_id: &str,
        state_patch: Option<json_patch::Patch>,
    ) -> Result<(), Error> {
        if let Some(patch) = state_patch {
            self.store
                .stage_state_patch(next_step, tool_call_id, &patch)
                .await?;
        }
        Ok(())
    }
}

/// The session as a drain finds it: its state, its pending calls and the answers stored for
/// them.
pub(crate) struct DrainRead {
    state: Option<store::SessionState>,
    pending: Vec<PendingCall>,
    answers: HashMap<String, store::StoredAnswer>,
}

impl DrainRead {
    /// The run whose suspension the drain ends: the run that held the session when it was
    /// claimed (a rewind makes its restored suspension the new run's).
    pub(crate) fn suspended_run(&self) -> Option<String> {
        let suspension = self.state.as_ref()?.suspension.as_ref()?;
        Some(suspension.run_id.clone())
    }
}

/// Logs each drained call, and its timeout or abandonment (see `baton_core::observe`).
fn log_drained(input: &StepInput, drained: &[DrainedCall]) {
    for call in drained {
        let result = &call.result;
        let ids = call_ids(input, &result.tool_call_id, &result.tool_name);
        let lapse = match &result.outcome {
            ToolOutcome::Error(error) if error.code == codes::CLIENT_TOOL_TIMEOUT => {
                Some(ClientCallEvent::TimedOut)
            }
            ToolOutcome::Error(error) if error.code == codes::CLIENT_TOOL_ABANDONED => {
                Some(ClientCallEvent::Abandoned)
            }
            _ => None,
        };
        if let Some(lapse) = lapse {
            observe::client_call(lapse, ids, None, None);
        }
        observe::client_call(ClientCallEvent::Drained, ids, None, Some(call.wait_ms));
    }
}
