//! The end of a step in the log: committing it, completing the run with its output, or failing
//! the run with a typed error.

use crate::{
    AgentActivities,
    failure::Error,
    io::{FailInput, StepInput},
    plan,
};
use baton_core::{
    ErrorCode,
    chunk::RunError,
    message::{Message, ToolCall, ToolOutcome, ToolResult},
    store::{self, Completion},
};

impl AgentActivities {
    /// Commits a staged step into the log (the `commit_step` activity).
    pub(crate) async fn commit(&self, step: &StepInput) -> Result<(), Error> {
        self.store.commit_step(step.step_ref(), None).await?;
        Ok(())
    }

    /// The body of the `complete_run` activity: says whether the run completed.
    pub(crate) async fn complete(&self, input: &StepInput) -> Result<bool, Error> {
        let address = &input.address;
        let Some(staged) = self.store.staged_turn(input.step_ref()).await? else {
            // Already committed by an earlier attempt (the commit drops the staged turn).
            return self.committed_outcome(input).await;
        };
        let Message::Assistant {
            content,
            tool_calls,
            ..
        } = &staged.message
        else {
            return Err(Error::typed(
                ErrorCode::Internal,
                "staged turn is not an assistant message",
            ));
        };
        let output = if tool_calls.is_empty() {
            Some(content.clone())
        } else {
            self.finishing_calls_output(input, tool_calls).await?
        };
        // The rollup as of this step: the step's model call and tool results are not in the
        // log yet.
        let mut usage = self.store.usage_rollup(address).await?.unwrap_or_default();
        usage.add_model_call(&staged.usage);
        for call in tool_calls {
            usage.add_tool_call(&call.name);
        }
        let completion = output.map(|output| Completion {
            output,
            usage: usage.clone(),
        });
        let completes = completion.is_some();
        self.store.commit_step(input.step_ref(), completion).await?;
        if !completes {
            return Ok(false);
        }
        tracing::info!(
            session = %address.session_id,
            run = %input.run_id,
            steps = input.step,
            input_tokens = usage.tokens.input_tokens,
            output_tokens = usage.tokens.output_tokens,
            "run completed"
        );
        Ok(true)
    }

    /// The output a step's finishing tools give: the result of the first such call (in call
    /// order) that succeeded.
    async fn finishing_calls_output(
        &self,
        input: &StepInput,
        tool_calls: &[ToolCall],
    ) -> Result<Option<String>, Error> {
        let agent = self.agent(&input.agent_type)?;
        for call in tool_calls
            .iter()
            .filter(|call| plan::finishes_run(agent, &call.name))
        {
            let staged = self
                .store
                .staged_tool_result(input.step_ref(), &call.id)
                .await?;
            if let Some(ToolResult {
                outcome: ToolOutcome::Result(value),
                ..
            }) = staged
            {
                return Ok(Some(plan::finishing_output(value)));
            }
        }
        Ok(None)
    }

    /// Whether an already committed final step completed the run (a step whose finishing tools
    /// all failed was committed without completing).
    async fn committed_outcome(&self, input: &StepInput) -> Result<bool, Error> {
        let state = self.store.session(&input.address).await?;
        match state {
            Some(state) if state.run_id == input.run_id && state.step_count >= input.step => {
                Ok(state.status == store::Status::Completed)
            }
            _ => Err(Error::typed(
                ErrorCode::Internal,
                format!(
                    "step {} of run {} was neither staged nor committed",
                    input.step, input.run_id
                ),
            )),
        }
    }

    /// The body of the `fail_run` activity.
    pub(crate) async fn record_failure(&self, input: FailInput) -> Result<(), Error> {
        let step = &input.step;
        tracing::warn!(
            session = %step.address.session_id,
            run = %step.run_id,
            step = step.step,
            code = %input.code,
            message = %input.message,
            "run failed"
        );
        // The failing step's model call counts too, though its turn never reaches the log.
        let mut usage = self
            .store
            .usage_rollup(&step.address)
            .await?
            .unwrap_or_default();
        if let Some(staged) = self.store.staged_turn(step.step_ref()).await? {
            usage.add_model_call(&staged.usage);
        }
        self.store
            .fail_run(
                step.run_ref(),
                &RunError {
                    code: input.code,
                    message: input.message,
                },
                usage,
            )
            .await?;
        Ok(())
    }
}
