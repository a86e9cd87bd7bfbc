//! The follow of an A2A task after its caller's resume: once a person answered every question
//! the task asked (each answer already sent to the agent as a message on the task), the root's
//! resume starts `RemoteFollowWorkflow`, whose activity comes here for an A2A call. It follows
//! the same task on (a task still showing an answered question has not moved on yet, and is read
//! again), and at its next stop records its next question (the caller stays suspended) or
//! answers the caller's call, resuming the caller when that completes its batch.

use super::a2a::A2aFollow;
use super::ending::TurnEnd;
use crate::{
    AgentActivities,
    failure::Error,
    io::{ParentNext, RemoteFollowInput},
};
use baton_core::{
    chunk::EndStatus,
    message::ToolCall,
    store::{FollowMode, SessionState},
    subagent::{A2aAgent, SubAgent},
};
use temporalio_sdk::activities::ActivityContext;

impl AgentActivities {
    /// The A2A arm of `follow_resumed_remote_sub_agent`: `call` of the suspended `caller`.
    pub(super) async fn follow_resumed_a2a_child(
        &self,
        ctx: &ActivityContext,
        input: &RemoteFollowInput,
        caller: &SessionState,
        call: &ToolCall,
        (sub_agent, agent): (&SubAgent, &A2aAgent),
    ) -> Result<ParentNext, Error> {
        let step = &input.call.step;
        let mut follow =
            A2aFollow::new(self, agent, sub_agent, step, call, FollowMode::Suspended).await?;
        follow.answered = self
            .store
            .relayed_groups(&step.address)
            .await?
            .into_iter()
            .filter(|group| group.via_call_id == call.id)
            .flat_map(|group| group.calls)
            .map(|(relayed, _)| relayed.producer_call_id)
            .collect();
        let stop = follow.bounded(ctx, None).await?;
        let ending = match follow.turn_end(stop).await? {
            TurnEnd::Paused | TurnEnd::Waiting => return Ok(ParentNext::Nothing),
            TurnEnd::Stale => {
                follow.cancel_task().await;
                return Ok(ParentNext::Nothing);
            }
            TurnEnd::Ended(ending) => ending,
        };
        let fold = match ending.status {
            EndStatus::Completed => follow.fold(ending.output.as_deref()).await?,
            _ => None,
        };
        let child = follow.child.clone();
        self.answer_followed_call(input, caller, &child, ending, fold)
            .await
    }
}
