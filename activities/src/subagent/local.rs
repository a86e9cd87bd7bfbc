//! The local transport of sub-agent calls: starting the child session of a call in the caller's
//! tree (the workflow then runs the child as a child workflow, see `workflows/src/subagent/`)
//! and, once the child's workflow has ended, turning how the child ended into the call's result.
//! The parent reads nothing of the child but its status, output, error and state.

use crate::{
    AgentActivities,
    failure::Error,
    io::{ChildStart, SubAgentEnd, SubAgentStart, ToolInput},
};
use baton_core::{
    ErrorCode, Message, ToolError,
    chunk::EndStatus,
    ids,
    message::{ToolOutcome, ToolResult},
    store::{ChildEnd, NewChild, SessionAddress, SessionState, Status},
    subagent::{self, SubAgent},
    tool::codes,
};

impl AgentActivities {
    /// The body of `start_sub_agent`, the local transport's start: creates the child session of the call (once), or stages
    /// the call's error when its input is bad.
    pub(crate) async fn start_child_of(&self, input: &ToolInput) -> Result<SubAgentStart, Error> {
        let step = &input.step;
        let Some(call) = self.unanswered_call(input).await? else {
            return Ok(SubAgentStart::Answered);
        };
        let agent = self.agent(&step.agent_type)?;
        let Some(sub_agent) = agent.sub_agent(&call.name) else {
            let error = ToolError::new(
                codes::UNKNOWN_TOOL,
                format!("there is no tool named {:?}", call.name),
            );
            self.stage_outcome(step, &call, ToolOutcome::Error(error))
                .await?;
            return Ok(SubAgentStart::Answered);
        };
        let message = match sub_agent.first_message(&call.arguments) {
            Ok(message) => message,
            Err(error) => {
                self.stage_outcome(step, &call, ToolOutcome::Error(error))
                    .await?;
                return Ok(SubAgentStart::Answered);
            }
        };
        let child_agent = self.agent(sub_agent.agent_type())?;
        let child = subagent::child_address(&step.address, &call.id);
        let workflow_id = ids::first_run_workflow_id(child_agent.name(), &child.session_id);
        let mut messages = Vec::with_capacity(2);
        if !child_agent.system_prompt().is_empty() {
            messages.push(Message::system(child_agent.system_prompt()));
        }
        messages.push(Message::user(message));
        // A child starts from its agent's defaults: a sub-agent call's input carries no state.
        let child_state = child_agent.state_schema().map(|schema| schema.defaults());
        let run = self
            .store
            .start_child(NewChild {
                parent: step.step_ref(),
                tool_call_id: &call.id,
                child: &child,
                agent_type: child_agent.name(),
                run_id: &ids::new_run_id(),
                stream_id: &ids::new_session_id(),
                workflow_id: &workflow_id,
                messages: &messages,
                custom_state: child_state.as_ref(),
            })
            .await?;
        tracing::info!(
            session = %step.address.session_id,
            child = %child.session_id,
            agent = child_agent.name(),
            created = run.created,
            "sub-agent started"
        );
        Ok(SubAgentStart::Started(ChildStart {
            address: child,
            agent_type: child_agent.name().to_owned(),
            run_id: run.run_id,
            stream_id: run.stream_id,
            max_steps: child_agent.max_steps(),
            workflow_id,
        }))
    }

    /// The body of `finish_sub_agent`, the local transport's end: stages the call's result from how the child ended (its
    /// output, checked against the sub-agent's output schema, or its error), or says that the
    /// child is suspended.
    pub(crate) async fn finish_child_of(&self, input: &ToolInput) -> Result<SubAgentEnd, Error> {
        let step = &input.step;
        let Some(call) = self.unanswered_call(input).await? else {
            return Ok(SubAgentEnd::Answered);
        };
        let children = self.store.children(&step.address).await?;
        let child_id = children.get(&call.id).ok_or_else(|| {
            Error::typed(
                ErrorCode::Internal,
                format!("sub-agent call {} started no child", call.id),
            )
        })?;
        let child = SessionAddress {
            root_session_id: step.address.root_session_id.clone(),
            session_id: child_id.clone(),
        };
        let state =
            self.store.session(&child).await?.ok_or_else(|| {
                Error::typed(ErrorCode::SessionNotFound, "the child session is gone")
            })?;
        let agent = self.agent(&step.agent_type)?;
        let sub_agent = agent.sub_agent(&call.name).ok_or_else(|| {
            Error::typed(
                ErrorCode::Internal,
                format!("{} is not a sub-agent", call.name),
            )
        })?;
        let Some((status, outcome)) = child_outcome(sub_agent, &state) else {
            return Ok(SubAgentEnd::AwaitingChild);
        };
        let result = ToolResult::new(&call.id, &call.name, outcome);
        let output = match status {
            EndStatus::Completed => state.output.as_deref(),
            _ => None,
        };
        let state_patch = self
            .fold_child_state(step, agent, &call.id, &state, status, output)
            .await?;
        self.store
            .stage_sub_agent_result(
                step.step_ref(),
                &result,
                ChildEnd {
                    child_session_id: &child.session_id,
                    tool_call_id: &call.id,
                    status,
                    output,
                },
                state_patch.as_ref(),
            )
            .await?;
        Ok(SubAgentEnd::Answered)
    }

    /// The parent's `after_sub_agent` fold of the local child that answered its call
    /// `tool_call_id` while the parent was suspended (the resumed parent drains the answer): as
    /// [`Self::fold_child_state`], from the child's state read now.
    pub(super) async fn fold_answered_local_child(
        &self,
        step: &crate::io::StepInput,
        tool_call_id: &str,
        tool_name: &str,
    ) -> Result<Option<json_patch::Patch>, Error> {
        let agent = self.agent(&step.agent_type)?;
        let Some(sub_agent) = agent.sub_agent(tool_name) else {
            return Ok(None);
        };
        if !agent.has_after_sub_agent() {
            return Ok(None);
        }
        let children = self.store.children(&step.address).await?;
        let Some(child_id) = children.get(tool_call_id) else {
            return Ok(None);
        };
        let child = SessionAddress {
            root_session_id: step.address.root_session_id.clone(),
            session_id: child_id.clone(),
        };
        let Some(state) = self.store.session(&child).await? else {
            return Ok(None);
        };
        let Some((status, _)) = child_outcome(sub_agent, &state) else {
            return Ok(None);
        };
        let output = match status {
            EndStatus::Completed => state.output.as_deref(),
            _ => None,
        };
        self.fold_child_state(step, agent, tool_call_id, &state, status, output)
            .await
    }

    /// The parent's `after_sub_agent` hook run on how the local child ended, from the child's
    /// state read now (see [`Self::fold_ended_child`]).
    async fn fold_child_state(
        &self,
        step: &crate::io::StepInput,
        agent: &baton_core::Agent,
        tool_call_id: &str,
        child: &SessionState,
        status: EndStatus,
        output: Option<&str>,
    ) -> Result<Option<json_patch::Patch>, Error> {
        if agent.state_schema().is_none() || !agent.has_after_sub_agent() {
            return Ok(None);
        }
        let child_address = SessionAddress {
            root_session_id: step.address.root_session_id.clone(),
            session_id: child.session_id.clone(),
        };
        let child_state = self.store.custom_state(&child_address).await?;
        self.fold_ended_child(
            step,
            agent,
            tool_call_id,
            &child.agent_type,
            child_state.as_ref(),
            status,
            output,
        )
        .await
    }
}

/// How a child's state answers its parent's call: its output (checked against the sub-agent's
/// output schema) or its error, with the status `subagent_end` reports; `None` while the child
/// has not ended (suspended, or resumed by its deadline).
pub(crate) fn child_outcome(
    sub_agent: &SubAgent,
    state: &SessionState,
) -> Option<(EndStatus, ToolOutcome)> {
    Some(match state.status {
        Status::SuspendedClientTool => return None,
        Status::Completed => {
            let output = state.output.as_deref().unwrap_or_default();
            let outcome = match sub_agent.result_of(output) {
                Ok(value) => ToolOutcome::Result(value),
                Err(error) => ToolOutcome::Error(error),
            };
            (EndStatus::Completed, outcome)
        }
        // An aborted child (failed, framework_cancelled) was stopped as an interrupted one was:
        // its parent hears the same.
        Status::Failed
            if state
                .error
                .as_ref()
                .is_some_and(|error| error.code == ErrorCode::FrameworkCancelled) =>
        {
            (
                EndStatus::Failed,
                ToolOutcome::Error(ToolError::new(
                    codes::SUB_AGENT_INTERRUPTED,
                    "the sub-agent was aborted before it answered",
                )),
            )
        }
        Status::Failed => {
            let error = state.error.clone().map_or_else(
                || ToolError::new(codes::TOOL_FAILED, "the sub-agent failed"),
                |error| ToolError::new(error.code.as_str(), error.message),
            );
            (EndStatus::Failed, ToolOutcome::Error(error))
        }
        Status::Interrupted => (
            EndStatus::Interrupted,
            ToolOutcome::Error(ToolError::new(
                codes::SUB_AGENT_INTERRUPTED,
                "the sub-agent was interrupted before it answered",
            )),
        ),
        // Its first workflow has ended, yet a run holds it: a deadline resumed it already. Its
        // end answers the parent, like a suspended child's.
        Status::Active => return None,
    })
}
