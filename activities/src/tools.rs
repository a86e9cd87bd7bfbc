//! Server tool calls: running one (inline in the model step, as an `execute_tool` activity, or
//! once approved during a resume) and staging its result with its `tool_end` chunk.

use crate::{
    AgentActivities,
    failure::Error,
    heartbeat::with_heartbeats,
    io::{StepInput, ToolAsked, ToolInput},
};
use baton_core::{
    ChunkKind, ErrorCode, ToolError,
    message::{KeptData, Message, ToolCall, ToolOutcome, ToolResult},
    store::{StepRef, Written},
    tool::{
        ToolContext, ToolData,
        ask::{Asked, Called, PersonAnswer},
        codes,
    },
};
use json_patch::Patch;
use temporalio_sdk::activities::ActivityContext;

impl AgentActivities {
    /// The body of the `execute_tool` activity: runs the call unless an earlier attempt staged
    /// its result already. A call that stops to ask a person stages what it asked instead: the
    /// step suspends on it (a retried attempt finds it staged).
    pub(crate) async fn execute_staged_call(
        &self,
        ctx: &ActivityContext,
        input: &ToolInput,
    ) -> Result<Option<ToolAsked>, Error> {
        let step = &input.step;
        let asked = || ToolAsked {
            tool_call_id: input.tool_call_id.clone(),
        };
        let staged = self
            .store
            .staged_call(step.step_ref(), &input.tool_call_id)
            .await?;
        if staged.has_result {
            return Ok(None);
        }
        if staged.asked.is_some() {
            return Ok(Some(asked()));
        }
        let call = self.staged_call(step, &input.tool_call_id).await?;
        let (ran, state_patch, data) = self
            .invoke(
                ctx,
                step,
                step.step_ref(),
                (&call.id, &call.name),
                Invocation::CallOrAsk(call.arguments.clone()),
            )
            .await?;
        let outcome = match ran {
            Ran::Outcome(outcome) => outcome,
            Ran::Asked(question) => {
                self.store
                    .stage_tool_asks(step.step_ref(), &call.id, &question)
                    .await?;
                return Ok(Some(asked()));
            }
        };
        let (result, data) = result_of(step, &call, outcome, data);
        self.store
            .stage_tool_result_reporting(step.step_ref(), &result, state_patch.as_ref(), &data)
            .await?;
        Ok(None)
    }

    /// Runs one tool call and stages its result or error with its `tool_end` chunk.
    pub(crate) async fn run_call(
        &self,
        ctx: &ActivityContext,
        step: &StepInput,
        call: &ToolCall,
    ) -> Result<(), Error> {
        let (result, state_patch, data) = self.call_result(ctx, step, call).await?;
        self.store
            .stage_tool_result_reporting(step.step_ref(), &result, state_patch.as_ref(), &data)
            .await?;
        Ok(())
    }

    /// Runs one call of a staged step: its result, its change of the custom state, and the
    /// `tool_data` chunks of what it emitted for the chat.
    pub(crate) async fn call_result(
        &self,
        ctx: &ActivityContext,
        step: &StepInput,
        call: &ToolCall,
    ) -> Result<(ToolResult, Option<Patch>, Vec<ChunkKind>), Error> {
        let (outcome, state_patch, data) = self
            .outcome_and_state_of(
                ctx,
                step,
                step.step_ref(),
                &call.id,
                &call.name,
                call.arguments.clone(),
            )
            .await?;
        let (result, data) = result_of(step, call, outcome, data);
        Ok((result, state_patch, data))
    }

    /// Stages the outcome of a call with its `tool_end` chunk.
    pub(crate) async fn stage_outcome(
        &self,
        step: &StepInput,
        call: &ToolCall,
        outcome: ToolOutcome,
    ) -> Result<(), Error> {
        self.store
            .stage_tool_result(
                step.step_ref(),
                &ToolResult::new(&call.id, &call.name, outcome),
            )
            .await?;
        Ok(())
    }

    /// Runs a server tool for call `tool_call_id` of `step`'s run and turns whatever happens into
    /// the outcome the model sees. An at-most-once tool first records its start in the staged
    /// hash of `marker` (a step not committed yet); if an earlier attempt recorded it, the tool
    /// does not run again and the outcome is `tool_outcome_unknown`. For an agent with custom
    /// state, the tool reads the committed state through its context; what it changed comes
    /// back as a patch, kept only with a successful result (a failed call changes nothing), and
    /// a refused change makes the outcome an `invalid_state_patch` error.
    pub(crate) async fn outcome_and_state_of(
        &self,
        ctx: &ActivityContext,
        step: &StepInput,
        marker: StepRef<'_>,
        tool_call_id: &str,
        tool_name: &str,
        arguments: serde_json::Value,
    ) -> Result<(ToolOutcome, Option<Patch>, Vec<ToolData>), Error> {
        let call = (tool_call_id, tool_name);
        let (ran, state_patch, data) = self
            .invoke(ctx, step, marker, call, Invocation::Call(arguments))
            .await?;
        Ok((ran.into_outcome(), state_patch, data))
    }

    /// Runs `invocation` of the tool of `call` (its id and tool name), as
    /// [`Self::outcome_and_state_of`] says; a call that may ask answers what it asked.
    pub(crate) async fn invoke(
        &self,
        ctx: &ActivityContext,
        step: &StepInput,
        marker: StepRef<'_>,
        (tool_call_id, tool_name): (&str, &str),
        invocation: Invocation,
    ) -> Result<(Ran, Option<Patch>, Vec<ToolData>), Error> {
        let agent = self.registry.get(&step.agent_type);
        let Some(tool) = agent.and_then(|agent| agent.tool(tool_name)) else {
            // A client tool's call runs here only when its input failed the tool's schema.
            let client = agent.and_then(|agent| agent.client_tool(tool_name));
            if let Some(Err(error)) = client.map(|tool| tool.check_input(invocation.arguments())) {
                return Ok((Ran::Outcome(ToolOutcome::Error(error)), None, Vec::new()));
            }
            return Ok((
                Ran::Outcome(ToolOutcome::Error(ToolError::new(
                    codes::UNKNOWN_TOOL,
                    format!("there is no tool named {tool_name:?}"),
                ))),
                None,
                Vec::new(),
            ));
        };
        if tool.at_most_once()
            && self.store.mark_tool_started(marker, tool_call_id).await? == Written::AlreadyDone
        {
            tracing::warn!(
                event = "tool_outcome_unknown",
                session_id = %step.address.session_id,
                root_session_id = %step.address.root_session_id,
                run_id = %step.run_id,
                tool_call_id,
                tool = tool_name,
                "an at-most-once tool call was started by a lost attempt; it is not run again"
            );
            return Ok((
                Ran::Outcome(ToolOutcome::Error(ToolError::new(
                    codes::TOOL_OUTCOME_UNKNOWN,
                    "an earlier attempt of this call started and was lost before its result was \
                     recorded; the tool runs at most once, so it may or may not have taken effect",
                ))),
                None,
                Vec::new(),
            ));
        }
        let mut context = tool_context(step, tool_call_id).with_asker(std::sync::Arc::new(
            crate::ask::StoreAsker::new(self.store.clone(), step.step_ref()),
        ));
        if let Some(schema) = agent.and_then(|agent| agent.state_schema()) {
            let committed = self
                .store
                .custom_state(&step.address)
                .await?
                .unwrap_or_else(|| schema.defaults());
            context = context.with_state(schema.clone(), committed);
        }
        let called = async {
            match invocation {
                Invocation::Call(arguments) => {
                    tool.call(&context, arguments).await.map(Called::Done)
                }
                Invocation::CallOrAsk(arguments) => tool.call_or_ask(&context, arguments).await,
                Invocation::Continue {
                    arguments,
                    continuation,
                    answer,
                } => tool
                    .continue_call(&context, arguments, continuation, answer)
                    .await
                    .map(Called::Done),
            }
        };
        let answer = with_heartbeats(ctx, self.heartbeat_every, called).await;
        let (ran, state_patch) = match (answer, context.state_changes()) {
            (Err(error), _) => (Ran::Outcome(ToolOutcome::Error(error)), None),
            // A call that asked has changed nothing yet: it goes on once answered.
            (Ok(Called::Asked(asked)), _) => return Ok((Ran::Asked(asked), None, Vec::new())),
            (Ok(_), Err(refused)) => (
                Ran::Outcome(ToolOutcome::Error(ToolError::new(
                    codes::INVALID_STATE_PATCH,
                    refused.to_string(),
                ))),
                None,
            ),
            (Ok(Called::Done(value)), Ok(state_patch)) => {
                (Ran::Outcome(ToolOutcome::Result(value)), state_patch)
            }
        };
        Ok((ran, state_patch, context.emitted_data()))
    }

    /// The call `tool_call_id` of a step's staged turn.
    pub(crate) async fn staged_call(
        &self,
        step: &StepInput,
        tool_call_id: &str,
    ) -> Result<ToolCall, Error> {
        let staged = self
            .store
            .staged_turn(step.step_ref())
            .await?
            .ok_or_else(|| {
                Error::typed(
                    ErrorCode::Internal,
                    format!(
                        "step {} of run {} has no staged turn",
                        step.step, step.run_id
                    ),
                )
            })?;
        match staged.message {
            Message::Assistant { tool_calls, .. } => tool_calls
                .into_iter()
                .find(|call| call.id == tool_call_id)
                .ok_or_else(|| {
                    Error::typed(
                        ErrorCode::Internal,
                        format!("step {} has no tool call {tool_call_id}", step.step),
                    )
                }),
            _ => Err(Error::typed(
                ErrorCode::Internal,
                "staged turn is not an assistant message",
            )),
        }
    }
}

/// The context a server tool gets for call `tool_call_id` of `step`'s run.
pub(crate) fn tool_context(step: &StepInput, tool_call_id: &str) -> ToolContext {
    ToolContext::new(step.address.clone(), step.run_id.clone(), tool_call_id)
}

/// The result of `call` of `step` with `outcome`, and the `tool_data` chunks of what it emitted
/// (see [`chat_data`]).
fn result_of(
    step: &StepInput,
    call: &ToolCall,
    outcome: ToolOutcome,
    data: Vec<ToolData>,
) -> (ToolResult, Vec<ChunkKind>) {
    let mut result = ToolResult::new(&call.id, &call.name, outcome);
    let data = chat_data(step.step, &mut result, data);
    (result, data)
}

/// The `tool_data` chunks of what a call of step `step` emitted for the chat, its kept items also
/// stored with its result (so the log holds them for a reload; transient ones are stream-only).
pub(crate) fn chat_data(step: u32, result: &mut ToolResult, data: Vec<ToolData>) -> Vec<ChunkKind> {
    result.chat_data = data
        .iter()
        .filter(|item| !item.transient)
        .map(|item| KeptData {
            name: item.name.clone(),
            data: item.data.clone(),
        })
        .collect();
    data.into_iter()
        .map(|item| ChunkKind::ToolData {
            step,
            tool_call_id: result.tool_call_id.clone(),
            name: item.name,
            data: item.data,
            transient: item.transient,
        })
        .collect()
}

/// How a server tool is run for a call.
pub(crate) enum Invocation {
    /// With these arguments, where the run cannot suspend (inline, or a resume's drain).
    Call(serde_json::Value),
    /// With these arguments, where the run may suspend on what the call asks (its own activity).
    CallOrAsk(serde_json::Value),
    /// Going on with a call that asked, given the person's answer.
    Continue {
        arguments: serde_json::Value,
        continuation: serde_json::Value,
        answer: PersonAnswer,
    },
}

impl Invocation {
    fn arguments(&self) -> &serde_json::Value {
        match self {
            Self::Call(arguments) | Self::CallOrAsk(arguments) => arguments,
            Self::Continue { arguments, .. } => arguments,
        }
    }
}

/// What running a tool came to: the outcome the model sees, or a question for a person.
pub(crate) enum Ran {
    Outcome(ToolOutcome),
    Asked(Asked),
}

impl Ran {
    /// The outcome, where the call could not ask (a tool that asks anyway is an error).
    pub(crate) fn into_outcome(self) -> ToolOutcome {
        match self {
            Self::Outcome(outcome) => outcome,
            Self::Asked(_) => ToolOutcome::Error(ToolError::new(
                codes::TOOL_FAILED,
                "the tool stopped to ask a person where the run cannot suspend",
            )),
        }
    }
}
