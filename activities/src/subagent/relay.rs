//! A remote child that waits for a person, across the boundary. When its turn ends `paused`, the
//! calls it waits on (its producer's `status` lists them, `pendingCalls`) are recorded in its
//! caller under tree-unique ids (`relay_remote_calls.lua`) and the caller's step suspends awaiting
//! the remote call; the caller's root lists and takes their answers, which the consumer relays to
//! the producer. The root's resume then starts `RemoteFollowWorkflow`, whose one activity (the
//! body here) resumes the child on its producer, follows it on from the durable cursor and, at
//! its next turn end, records its next pause or answers the caller's call, resuming the caller
//! when that completes its batch: the same path as a local child's end.

use super::ending::{Ending, TurnEnd};
use super::remote::Followed;
use crate::{
    AgentActivities,
    failure::Error,
    io::{ParentNext, RemoteFollowInput},
};
use baton_core::{
    ErrorCode,
    message::ToolCall,
    search::PersonCallKind,
    store::{
        self, Answer, ChildEnd, FollowMode, PendingCall, PendingKind, Recorded, RelayedCall,
        Status, StoredAnswer,
    },
    subagent,
};
use baton_remote::producer::CallError;
use temporalio_sdk::activities::ActivityContext;

impl Followed<'_> {
    /// The child's turn ended paused at its sequence `end_sequence`: records the calls its
    /// producer lists as awaited in the caller. `None` when the producer lists none (nothing
    /// can be relayed: the call then fails with `client_tool_unsupported`).
    pub(super) async fn record_pause(&self, end_sequence: u64) -> Result<Option<Recorded>, Error> {
        let status = match self.producer.status(&self.child).await {
            Ok(status) => status,
            Err(error) => {
                tracing::warn!(child = %self.child, %error, "a paused remote child's status cannot be read");
                return Err(Error::typed(
                    ErrorCode::RemoteUnavailable,
                    format!("the paused remote child's status cannot be read: {error}"),
                ));
            }
        };
        if status.pending_calls.is_empty() {
            return Ok(None);
        }
        let now = store::now_ms();
        let calls: Vec<RelayedCall> = status
            .pending_calls
            .into_iter()
            .map(|detail| {
                let id = subagent::relayed_call_id(&self.child, &detail.tool_call_id);
                let (kind, approval_id) = match detail.kind {
                    PersonCallKind::ClientTool => (PendingKind::Client, None),
                    PersonCallKind::Approval => (
                        PendingKind::Approval,
                        Some(store::approval_id(&self.step.run_id, &id)),
                    ),
                };
                RelayedCall {
                    call: PendingCall {
                        tool_call_id: id,
                        tool_name: detail.tool_name,
                        input: detail.input,
                        kind,
                        step: self.step.step,
                        deadline_at: detail.deadline_at,
                        completed_retention_ms: 0,
                        approval_id,
                        awaited_since: detail.awaited_since.min(now),
                        asked: None,
                    },
                    via_call_id: self.call.id.clone(),
                    child_session_id: self.child.clone(),
                    producer_call_id: detail.tool_call_id,
                    producer_approval_id: detail.approval_id,
                    render: detail.render,
                    a2a: None,
                }
            })
            .collect();
        let recorded = self
            .activities
            .store
            .record_relayed_calls(
                self.mode,
                self.step.step_ref(),
                &self.child,
                end_sequence,
                &self.call.id,
                &calls,
            )
            .await?;
        tracing::info!(
            session = %self.step.address.session_id,
            child = %self.child,
            calls = calls.len(),
            ?recorded,
            "a remote child's calls are relayed to its caller's tree"
        );
        Ok(Some(recorded))
    }
}

impl AgentActivities {
    /// The body of `follow_resumed_remote_sub_agent`.
    pub(crate) async fn follow_resumed_remote_child_of(
        &self,
        ctx: &ActivityContext,
        input: &RemoteFollowInput,
    ) -> Result<ParentNext, Error> {
        let step = &input.call.step;
        let Some(caller) = self.store.session(&step.address).await? else {
            return Ok(ParentNext::Nothing);
        };
        if caller.status != Status::SuspendedClientTool || caller.run_id != step.run_id {
            return Ok(ParentNext::Nothing);
        }
        let pending = self.store.pending_calls(&step.address).await?;
        let Some(pending) = pending
            .into_iter()
            .find(|call| call.tool_call_id == input.call.tool_call_id)
        else {
            return Ok(ParentNext::Nothing);
        };
        let call = ToolCall {
            id: pending.tool_call_id,
            name: pending.tool_name,
            arguments: pending.input,
            provider_id: None,
        };
        if let Ok((sub_agent, agent)) = self.a2a_sub_agent(&step.agent_type, &call.name) {
            return self
                .follow_resumed_a2a_child(ctx, input, &caller, &call, (sub_agent, agent))
                .await;
        }
        let (sub_agent, remote) = self.remote_sub_agent(&step.agent_type, &call.name)?;
        let mut followed = Followed::new(self, remote, step, &call, FollowMode::Suspended).await?;
        // A child resumed already (a retried attempt) or ended answers a refusal: read on. A
        // child that ran past its window is followed on without a resume.
        let resumed = if input.resume_child {
            followed.producer.resume(&followed.child).await
        } else {
            Ok(())
        };
        match resumed {
            Ok(()) => {}
            Err(CallError::Refused(body)) => {
                tracing::info!(child = %followed.child, code = %body.code, "the remote child's resume was refused; following it");
            }
            Err(CallError::Unavailable(reason)) => {
                return Err(Error::typed(
                    ErrorCode::RemoteUnavailable,
                    format!("the remote child cannot be resumed: {reason}"),
                ));
            }
        }
        let end = followed.bounded(ctx, None).await?;
        let Ending {
            status,
            outcome,
            output,
            state,
            ..
        } = match followed.turn_end(sub_agent, end).await? {
            TurnEnd::Paused | TurnEnd::Waiting => return Ok(ParentNext::Nothing),
            TurnEnd::Stale => {
                // The caller moved on: a stop of its tree is passed on to the child.
                followed.pass_stop_on().await;
                return Ok(ParentNext::Nothing);
            }
            TurnEnd::Ended(ending) => ending,
        };
        let fold = match status {
            baton_core::chunk::EndStatus::Completed => {
                followed.fold(state, output.as_deref()).await?
            }
            _ => None,
        };
        self.answer_followed_call(
            input,
            &caller,
            &followed.child,
            Ending {
                status,
                outcome,
                output,
                state: None,
                usage: None,
            },
            fold,
        )
        .await
    }

    /// A followed child's end (of either remote transport) answers its caller's call `input`,
    /// and resumes the caller when that completes its batch.
    pub(super) async fn answer_followed_call(
        &self,
        input: &RemoteFollowInput,
        caller: &store::SessionState,
        child: &str,
        ending: Ending,
        fold: Option<json_patch::Patch>,
    ) -> Result<ParentNext, Error> {
        let step = &input.call.step;
        let Ending {
            status,
            outcome,
            output,
            ..
        } = ending;
        let answer = StoredAnswer {
            answer: Answer::Outcome { outcome },
            submitted_at: store::now_ms(),
        };
        let report = self
            .store
            .answer_remote_call(
                &step.address,
                &step.run_id,
                &answer,
                ChildEnd {
                    child_session_id: child,
                    tool_call_id: &input.call.tool_call_id,
                    status,
                    output: output.as_deref(),
                },
                fold.as_ref(),
            )
            .await?;
        tracing::info!(
            session = %step.address.session_id,
            %child,
            ?status,
            "a resumed remote child ended; its end answers the caller's call"
        );
        self.resume_answered_parent(&step.address, caller, report, &input.policy)
            .await
    }
}
