//! Sub-agent calls, by transport: the one place in the activities where a call's transport is
//! matched. Each transport has a module: `local.rs` runs the child as a session of the caller's
//! tree (its activities `start_sub_agent` and `finish_sub_agent`, declared in `lib.rs`);
//! `remote.rs` follows a child served by another service over HTTP (its activity
//! `follow_remote_sub_agent`), through the producer client of `baton_remote::producer`; `relay.rs` a
//! remote child paused for a person: its calls recorded in the caller, and its follow after the
//! caller's resume continued it (`follow_resumed_remote_sub_agent`); `a2a.rs` follows a task of
//! an agent served over A2A (its activity `follow_a2a_sub_agent`), `a2a_end.rs` reads how its
//! task ended, `a2a_question.rs` relays its questions and `a2a_resume.rs` follows it on after
//! its caller's resume.

mod a2a;
mod a2a_end;
mod a2a_question;
mod a2a_resume;
mod cancel;
mod ending;
mod local;
mod relay;
mod remote;
pub(crate) use local::child_outcome;

use crate::{
    AgentActivities,
    failure::Error,
    io::{StepInput, ToolInput},
};
use baton_core::{
    ToolCall,
    chunk::EndStatus,
    state::{ChildEnded, patch_of_sets},
    subagent::SubAgentTransport,
};
use serde_json::Value;

impl AgentActivities {
    /// The staged call a sub-agent activity works on, unless its result is staged already (a
    /// retried or stale attempt: nothing to do).
    pub(crate) async fn unanswered_call(
        &self,
        input: &ToolInput,
    ) -> Result<Option<ToolCall>, Error> {
        let step = input.step.step_ref();
        if self
            .store
            .has_staged_tool_result(step, &input.tool_call_id)
            .await?
        {
            return Ok(None);
        }
        Ok(Some(
            self.staged_call(&input.step, &input.tool_call_id).await?,
        ))
    }

    /// The parent's `after_sub_agent` fold of the child that answered its call `tool_call_id`
    /// (of tool `tool_name`) while the parent was suspended, as the resumed parent drains the
    /// answer: the patch of the parent's state, if the hook sets anything.
    pub(crate) async fn fold_answered_child(
        &self,
        transport: SubAgentTransport,
        step: &StepInput,
        tool_call_id: &str,
        tool_name: &str,
    ) -> Result<Option<json_patch::Patch>, Error> {
        match transport {
            SubAgentTransport::Local => {
                self.fold_answered_local_child(step, tool_call_id, tool_name)
                    .await
            }
            // A remote child that ended after its caller suspended (it had paused for a person)
            // left the caller's fold beside its answer.
            SubAgentTransport::Remote | SubAgentTransport::A2a => {
                Ok(self.store.remote_fold(&step.address, tool_call_id).await?)
            }
        }
    }

    /// The parent's `after_sub_agent` hook run on how a child ended (of either transport): the
    /// fields it sets, as a patch of the parent's committed state checked against the parent's
    /// schema. A hook whose sets do not fit the schema is logged and changes nothing (the
    /// call's result stands).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn fold_ended_child(
        &self,
        step: &StepInput,
        agent: &baton_core::Agent,
        tool_call_id: &str,
        agent_type: &str,
        child_state: Option<&Value>,
        status: EndStatus,
        output: Option<&str>,
    ) -> Result<Option<json_patch::Patch>, Error> {
        let Some(schema) = agent.state_schema().filter(|_| agent.has_after_sub_agent()) else {
            return Ok(None);
        };
        let parent_state = self
            .store
            .custom_state(&step.address)
            .await?
            .unwrap_or_else(|| schema.defaults());
        let sets = agent.after_sub_agent(&ChildEnded {
            tool_call_id,
            agent_type,
            status,
            output,
            state: child_state,
            parent_state: &parent_state,
        });
        if sets.is_empty() {
            return Ok(None);
        }
        match patch_of_sets(schema, &parent_state, sets) {
            Ok(patch) => Ok(Some(patch)),
            Err(error) => {
                tracing::warn!(
                    session_id = %step.address.session_id,
                    tool_call_id,
                    %error,
                    "the after_sub_agent hook set fields the state schema refuses; nothing is set"
                );
                Ok(None)
            }
        }
    }

    /// Stages the result of `call` of `step` from how its remote child `child` (of either remote
    /// transport) ended, with the caller's fold of a completed one.
    async fn stage_remote_end(
        &self,
        step: &StepInput,
        call: &ToolCall,
        child: &str,
        ending: ending::Ending,
        state_patch: Option<json_patch::Patch>,
    ) -> Result<(), Error> {
        let result = baton_core::message::ToolResult::new(&call.id, &call.name, ending.outcome);
        self.store
            .stage_sub_agent_result(
                step.step_ref(),
                &result,
                baton_core::store::ChildEnd {
                    child_session_id: child,
                    tool_call_id: &call.id,
                    status: ending.status,
                    output: ending.output.as_deref(),
                },
                state_patch.as_ref(),
            )
            .await?;
        Ok(())
    }

    /// The child's first message for `call` of `step` (by either remote transport), or `None`
    /// when its arguments do not fit the sub-agent's input: that tool error is then staged as
    /// the call's result.
    async fn first_message_or_staged(
        &self,
        step: &StepInput,
        call: &ToolCall,
        sub_agent: &baton_core::subagent::SubAgent,
    ) -> Result<Option<String>, Error> {
        match sub_agent.first_message(&call.arguments) {
            Ok(message) => Ok(Some(message)),
            Err(error) => {
                self.stage_outcome(step, call, baton_core::message::ToolOutcome::Error(error))
                    .await?;
                Ok(None)
            }
        }
    }
}
