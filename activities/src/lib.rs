//! Baton's Temporal activities. They do the I/O of a run: call the model, run server tools and
//! commit steps to Redis. Each is idempotent per (run, step): a retried activity finds its earlier
//! work in Redis and neither repeats a message nor a stream chunk.
//!
//! Their inputs and outputs (module [`io`]) are what Temporal history stores, so they hold ids and
//! counts, never conversation bodies.

pub mod io;

use baton_core::{
    Agent, AgentRegistry, ErrorCode, Store,
    agent::AgentTool,
    chunk::{ChunkKind, RunError},
    ids,
    message::{Message, ToolCall, ToolOutcome, ToolResult},
    model::{self, ModelRequest},
    store::{
        self, Answer, Claim, Completion, DrainedCall, NewRun, PendingCall, PendingKind,
        ResumeEntry, StagedTurn, StepProgress, StoredAnswer, UsageRecord, Written,
    },
    tool::{ToolExecution, codes},
};
use io::{
    DeadlineCheck, DeadlineInput, FailInput, RunInput, StepInput, StepPlan, SuspendedRun, ToolInput,
};
use std::{collections::HashMap, future::Future, sync::Arc, time::Duration};
use temporalio_common::ActivityError;
use temporalio_macros::activities;
use temporalio_sdk::{ApplicationFailure, activities::ActivityContext};
use tokio::sync::mpsc;

/// The activities of the agent-run workflow, sharing one store and one registry.
pub struct AgentActivities {
    store: Store,
    registry: AgentRegistry,
    heartbeat_every: Duration,
}

impl AgentActivities {
    /// `heartbeat_every` should be well under the heartbeat timeout the workflow sets.
    pub fn new(store: Store, registry: AgentRegistry, heartbeat_every: Duration) -> Self {
        Self {
            store,
            registry,
            heartbeat_every,
        }
    }
}

#[activities]
impl AgentActivities {
    /// Plays one step up to its tools: calls the model (streaming `step_start` and text
    /// deltas), stages its turn with a `tool_start` chunk per call, runs the inline tools and, when
    /// no tool is left for activities, commits the step. A retry picks up where the last attempt
    /// stopped: a staged turn is not asked of the model again, a staged result not run again, a
    /// committed step not touched.
    #[activity]
    pub async fn model_step(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: StepInput,
    ) -> Result<StepPlan, ActivityError> {
        let progress = self
            .store
            .step_progress(input.step_ref())
            .await
            .map_err(store_error)?;
        let (turn, fresh) = match progress {
            StepProgress::Committed => return Ok(StepPlan::Committed),
            StepProgress::Suspended { tool_call_ids } => {
                return Ok(StepPlan::Suspended(
                    self.suspended_run(&input, tool_call_ids).await?,
                ));
            }
            StepProgress::Staged(turn) => (turn, false),
            StepProgress::New => match self.call_model(&ctx, &input).await? {
                Some(turn) => (turn, true),
                None => return Ok(StepPlan::Committed),
            },
        };
        let plan = self
            .run_inline_tools(&ctx, &input, &turn.message, fresh)
            .await?;
        tracing::debug!(
            session = %input.address.session_id,
            run = %input.run_id,
            step = input.step,
            attempt = ctx.info().attempt,
            ?plan,
            "model step done"
        );
        Ok(plan)
    }

    /// Runs one server tool call of a staged step and stages its result (or error) with its
    /// `tool_end` chunk. Tool failures are results the model sees, not activity failures.
    #[activity]
    pub async fn execute_tool(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ToolInput,
    ) -> Result<(), ActivityError> {
        let step = &input.step;
        if self
            .store
            .has_staged_tool_result(step.step_ref(), &input.tool_call_id)
            .await
            .map_err(store_error)?
        {
            return Ok(());
        }
        let call = self.staged_call(step, &input.tool_call_id).await?;
        self.run_call(&ctx, step, &call).await
    }

    /// Commits a staged step with tool results into the log.
    #[activity]
    pub async fn commit_step(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StepInput,
    ) -> Result<(), ActivityError> {
        self.commit(&input).await
    }

    /// After a step's tool activities: commits the step and suspends the run on its client
    /// calls. Returns the awaited call ids and when the deadline workflow should wake.
    #[activity]
    pub async fn commit_suspended_step(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StepInput,
    ) -> Result<SuspendedRun, ActivityError> {
        let progress = self
            .store
            .step_progress(input.step_ref())
            .await
            .map_err(store_error)?;
        let turn = match progress {
            StepProgress::Suspended { tool_call_ids } => {
                return self.suspended_run(&input, tool_call_ids).await;
            }
            StepProgress::Staged(turn) => turn,
            StepProgress::New | StepProgress::Committed => {
                return Err(failure(
                    ErrorCode::Internal,
                    format!(
                        "step {} of run {} cannot suspend: {progress:?}",
                        input.step, input.run_id
                    ),
                ));
            }
        };
        let agent = self.agent(&input.agent_type)?;
        let awaited: Vec<&ToolCall> = match &turn.message {
            Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .filter(|call| awaits_answer(agent, &call.name))
                .collect(),
            _ => Vec::new(),
        };
        self.suspend(&input, &awaited).await
    }

    /// The first activity of a resumed run: appends the answers of the suspended step's client
    /// calls to the log in the order the model made them (an unanswered call as
    /// `client_tool_abandoned` when the resume abandoned it, else as `client_tool_timeout`), with
    /// their `tool_end` chunks, ends the suspension, then appends the resume's user message.
    /// Idempotent: a retry finds nothing left to drain and appends nothing.
    #[activity]
    pub async fn apply_results_and_reload(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: StepInput,
    ) -> Result<(), ActivityError> {
        let address = &input.address;
        let state = self
            .store
            .session(address)
            .await
            .map_err(store_error)?
            .ok_or_else(|| failure(ErrorCode::SessionNotFound, "the session is gone"))?;
        // With no suspension (a new turn on an ended session) only the message is appended.
        let awaited = state
            .suspension
            .map(|s| s.tool_call_ids)
            .unwrap_or_default();
        let pending: HashMap<String, PendingCall> = self
            .store
            .pending_calls(address)
            .await
            .map_err(store_error)?
            .into_iter()
            .map(|(call, _run)| (call.tool_call_id.clone(), call))
            .collect();
        let mut answers = self.store.answers(address).await.map_err(store_error)?;
        let now = store::now_ms();
        let mut drained = Vec::with_capacity(awaited.len());
        for id in &awaited {
            let call = pending.get(id).ok_or_else(|| {
                failure(
                    ErrorCode::Internal,
                    format!("awaited call {id} has no pending entry"),
                )
            })?;
            let answer = answers.remove(id);
            // The client's wait: to its answer, or to the deadline that lapsed.
            let waited_until = match (&answer, state.stop.is_some() || state.abandon_pending) {
                (Some(answer), _) => answer.submitted_at,
                (None, false) => call.deadline_at.min(now),
                (None, true) => call.awaited_since,
            };
            let wait_ms = match call.awaited_since {
                0 => 0,
                since => waited_until.saturating_sub(since),
            };
            let outcome = match answer {
                // A stopped run's calls were never carried on, answered or not.
                _ if state.stop.is_some() => ToolOutcome::Error(baton_core::ToolError::new(
                    codes::NOT_EXECUTED,
                    "the run was stopped before this call was carried on",
                )),
                Some(StoredAnswer {
                    answer: Answer::Outcome { outcome },
                    ..
                }) => outcome,
                Some(StoredAnswer {
                    answer: Answer::Approval(decision),
                    ..
                }) => {
                    if decision.approved {
                        let arguments = decision.arguments.unwrap_or_else(|| call.input.clone());
                        self.outcome_of(&ctx, &input.agent_type, &call.tool_name, arguments)
                            .await
                    } else {
                        ToolOutcome::Error(baton_core::ToolError::new(
                            codes::TOOL_DENIED,
                            decision
                                .reason
                                .unwrap_or_else(|| "the call was not approved".to_owned()),
                        ))
                    }
                }
                None if state.abandon_pending => ToolOutcome::Error(baton_core::ToolError::new(
                    codes::CLIENT_TOOL_ABANDONED,
                    "the user moved on with a new message before answering",
                )),
                None => ToolOutcome::Error(baton_core::ToolError::new(
                    codes::CLIENT_TOOL_TIMEOUT,
                    format!("no answer to {} before its deadline", call.tool_name),
                )),
            };
            drained.push(DrainedCall {
                result: ToolResult {
                    tool_call_id: id.clone(),
                    tool_name: call.tool_name.clone(),
                    outcome,
                },
                step: call.step,
                marker_expiry: now + call.completed_retention_ms,
                wait_ms,
            });
        }
        self.store
            .apply_answers(input.run_ref(), &drained)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    /// Run by the deadline workflow when the earliest open deadline of a suspended run's batch
    /// has lapsed: claims the session for a new run if that run still waits and every call is
    /// now answered or lapsed; says when to look again if some are still open; else nothing.
    #[activity]
    pub async fn check_deadline(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: DeadlineInput,
    ) -> Result<DeadlineCheck, ActivityError> {
        let suspended = &input.run;
        let address = &suspended.address;
        let Some(state) = self.store.session(address).await.map_err(store_error)? else {
            return Ok(DeadlineCheck::Nothing);
        };
        if state.run_id != suspended.run_id || state.status != store::Status::SuspendedClientTool {
            return Ok(DeadlineCheck::Nothing);
        }
        let agent = self.agent(&suspended.agent_type)?;
        let run_id = ids::new_run_id();
        let workflow_id = ids::resume_workflow_id(agent.name(), &address.session_id, &run_id);
        let entry = ResumeEntry {
            expected_run_id: Some(suspended.run_id.clone()),
            ..ResumeEntry::default()
        };
        let claim = self
            .store
            .claim_resume(
                address,
                NewRun {
                    agent_type: agent.name(),
                    stream_id: &state.stream_id,
                    run_id: &run_id,
                    workflow_id: &workflow_id,
                },
                &entry,
            )
            .await
            .map_err(store_error)?;
        Ok(match claim {
            Claim::Claimed { step_count } => {
                tracing::info!(session = %address.session_id, %run_id, "deadline lapsed: resuming");
                DeadlineCheck::Resume {
                    run: Box::new(RunInput {
                        run_id,
                        first_step: step_count,
                        max_steps: agent.max_steps(),
                        resume: true,
                        ..suspended.clone()
                    }),
                    workflow_id,
                }
            }
            Claim::Awaiting { tool_call_ids } => {
                let pending = self
                    .store
                    .pending_calls(address)
                    .await
                    .map_err(store_error)?;
                let next = pending
                    .iter()
                    .filter(|(call, _)| tool_call_ids.contains(&call.tool_call_id))
                    .map(|(call, _)| call.deadline_at)
                    .min()
                    .unwrap_or_default();
                DeadlineCheck::WaitUntil {
                    wake_at: next.max(store::now_ms() + 1),
                }
            }
            _ => DeadlineCheck::Nothing,
        })
    }

    /// Commits the final step and completes the run: an answer without tool calls (its text is
    /// the output), or a step that called a tool that ends the run (the first such call that
    /// succeeded gives the output). When every such call failed, the step is committed without
    /// completing and `false` says the run goes on: the model sees the errors.
    #[activity]
    pub async fn complete_run(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StepInput,
    ) -> Result<bool, ActivityError> {
        let address = &input.address;
        let Some(staged) = self
            .store
            .staged_turn(input.step_ref())
            .await
            .map_err(store_error)?
        else {
            // Already committed by an earlier attempt (the commit drops the staged turn).
            return self.committed_outcome(&input).await;
        };
        let Message::Assistant {
            content,
            tool_calls,
        } = &staged.message
        else {
            return Err(failure(
                ErrorCode::Internal,
                "staged turn is not an assistant message",
            ));
        };
        let output = if tool_calls.is_empty() {
            Some(content.clone())
        } else {
            self.finishing_output(&input, tool_calls).await?
        };
        // The rollup as of this step: the step's model call and tool results are not in the
        // log yet.
        let mut usage = self
            .store
            .usage_rollup(address)
            .await
            .map_err(store_error)?
            .unwrap_or_default();
        usage.add_model_call(&staged.usage);
        for call in tool_calls {
            usage.add_tool_call(&call.name);
        }
        let completion = output.map(|output| Completion {
            output,
            usage: usage.clone(),
        });
        let completes = completion.is_some();
        self.store
            .commit_step(input.step_ref(), completion)
            .await
            .map_err(store_error)?;
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
    /// order) that succeeded, a string as it is and anything else as JSON text.
    async fn finishing_output(
        &self,
        input: &StepInput,
        tool_calls: &[ToolCall],
    ) -> Result<Option<String>, ActivityError> {
        let agent = self.agent(&input.agent_type)?;
        for call in tool_calls.iter().filter(|c| finishes_run(agent, &c.name)) {
            let staged = self
                .store
                .staged_tool_result(input.step_ref(), &call.id)
                .await
                .map_err(store_error)?;
            if let Some(ToolResult {
                outcome: ToolOutcome::Result(value),
                ..
            }) = staged
            {
                return Ok(Some(match value {
                    serde_json::Value::String(text) => text,
                    other => other.to_string(),
                }));
            }
        }
        Ok(None)
    }

    /// Ends the run as failed with a typed error.
    #[activity]
    pub async fn fail_run(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: FailInput,
    ) -> Result<(), ActivityError> {
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
            .await
            .map_err(store_error)?
            .unwrap_or_default();
        if let Some(staged) = self
            .store
            .staged_turn(step.step_ref())
            .await
            .map_err(store_error)?
        {
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
            .await
            .map_err(store_error)?;
        Ok(())
    }
}

impl AgentActivities {
    /// Calls the model for a step that has no staged turn and stages the answer. Returns the
    /// staged turn (another attempt's, if it staged first), or `None` if the step got committed
    /// meanwhile.
    async fn call_model(
        &self,
        ctx: &ActivityContext,
        input: &StepInput,
    ) -> Result<Option<StagedTurn>, ActivityError> {
        let address = &input.address;
        let agent = self.agent(&input.agent_type)?;
        let messages = self.store.messages(address).await.map_err(store_error)?;
        self.store
            .emit_model_chunks(
                input.step_ref(),
                0,
                &[ChunkKind::StepStart { step: input.step }],
            )
            .await
            .map_err(store_error)?;

        let (delta_sender, mut delta_receiver) = mpsc::unbounded_channel::<String>();
        let generate = agent.model().generate(
            ModelRequest {
                messages: &messages,
                tools: agent.tool_specs(),
            },
            delta_sender,
        );
        // Deltas are written as they come, batched by what is waiting, while the model runs.
        let stream_deltas = async {
            let mut index = 1;
            while let Some(first) = delta_receiver.recv().await {
                let mut batch = vec![ChunkKind::TextDelta {
                    step: input.step,
                    delta: first,
                }];
                while let Ok(delta) = delta_receiver.try_recv() {
                    batch.push(ChunkKind::TextDelta {
                        step: input.step,
                        delta,
                    });
                }
                self.store
                    .emit_model_chunks(input.step_ref(), index, &batch)
                    .await?;
                index += batch.len() as u32;
            }
            Ok::<_, store::Error>(())
        };
        let call = with_heartbeats(ctx, self.heartbeat_every, async {
            futures::join!(generate, stream_deltas)
        });
        // An interrupt or abort cancels the workflow; Temporal passes the cancellation on with
        // the answer to a heartbeat. Dropping the call then closes the model's HTTP stream at
        // once instead of letting it run to its end.
        let (turn, streamed) = tokio::select! {
            biased;
            _ = ctx.cancelled() => {
                tracing::info!(
                    session = %address.session_id,
                    run = %input.run_id,
                    step = input.step,
                    "model call cancelled"
                );
                return Err(ActivityError::cancelled());
            }
            outcome = call => outcome,
        };
        streamed.map_err(store_error)?;
        let turn = turn.map_err(model_error)?;

        let staged = StagedTurn {
            message: Message::assistant(turn.text, turn.tool_calls),
            usage: UsageRecord {
                run_id: input.run_id.clone(),
                step: input.step,
                model: agent.model().name().to_owned(),
                usage: turn.usage,
            },
        };
        let written = self
            .store
            .stage_turn(input.step_ref(), &staged)
            .await
            .map_err(store_error)?;
        match written {
            Written::New => Ok(Some(staged)),
            // A concurrent attempt staged first: its turn is the step's turn.
            Written::AlreadyDone => self
                .store
                .staged_turn(input.step_ref())
                .await
                .map_err(store_error),
        }
    }

    /// Runs the inline tool calls of a staged turn (in parallel) and says what is left. When no
    /// call needs an activity, commits the step here.
    async fn run_inline_tools(
        &self,
        ctx: &ActivityContext,
        input: &StepInput,
        message: &Message,
        fresh: bool,
    ) -> Result<StepPlan, ActivityError> {
        let Message::Assistant { tool_calls, .. } = message else {
            return Err(failure(
                ErrorCode::Internal,
                "staged turn is not an assistant message",
            ));
        };
        if tool_calls.is_empty() {
            return Ok(StepPlan::Answered);
        }
        let agent = self.agent(&input.agent_type)?;
        let mut inline = Vec::new();
        let mut remote = Vec::new();
        let mut awaited = Vec::new();
        for call in tool_calls {
            match agent.any_tool(&call.name) {
                Some(AgentTool::Client(_)) => awaited.push(call),
                Some(AgentTool::Server(tool)) if tool.requires_approval() => awaited.push(call),
                Some(AgentTool::Server(tool)) if tool.execution() == ToolExecution::Activity => {
                    remote.push(call)
                }
                // Inline tools, and unknown ones: those only need their error recorded.
                Some(AgentTool::Server(_)) | None => inline.push(call),
            }
        }
        let runs = inline.into_iter().map(|call| async move {
            // Results staged by an earlier attempt stand; a fresh turn has none.
            if !fresh
                && self
                    .store
                    .has_staged_tool_result(input.step_ref(), &call.id)
                    .await
                    .map_err(store_error)?
            {
                return Ok(());
            }
            self.run_call(ctx, input, call).await
        });
        for outcome in futures::future::join_all(runs).await {
            outcome?;
        }
        // A step that waits for answers goes back to the model with them, finishing tool or not.
        let then_finish = awaited.is_empty()
            && tool_calls
                .iter()
                .any(|call| finishes_run(agent, &call.name));
        if !remote.is_empty() {
            return Ok(StepPlan::RunTools {
                tool_call_ids: remote.into_iter().map(|call| call.id.clone()).collect(),
                then_suspend: !awaited.is_empty(),
                then_finish,
            });
        }
        if !awaited.is_empty() {
            return Ok(StepPlan::Suspended(self.suspend(input, &awaited).await?));
        }
        if then_finish {
            return Ok(StepPlan::Answered);
        }
        self.commit(input).await?;
        Ok(StepPlan::Committed)
    }

    /// Commits the step and suspends the run on its client calls, each with its deadline.
    async fn suspend(
        &self,
        input: &StepInput,
        awaited: &[&ToolCall],
    ) -> Result<SuspendedRun, ActivityError> {
        let agent = self.agent(&input.agent_type)?;
        let now = store::now_ms();
        let pending: Vec<PendingCall> = awaited
            .iter()
            .map(|call| {
                let (kind, approval_id) = match agent.client_tool(&call.name) {
                    Some(_) => (PendingKind::Client, None),
                    None => (
                        PendingKind::Approval,
                        Some(store::approval_id(&input.run_id, &call.id)),
                    ),
                };
                PendingCall {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    input: call.arguments.clone(),
                    kind,
                    step: input.step,
                    deadline_at: now + agent.answer_timeout(&call.name).as_millis() as u64,
                    completed_retention_ms: agent.completed_retention().as_millis() as u64,
                    approval_id,
                    awaited_since: now,
                }
            })
            .collect();
        self.store
            .commit_suspended_step(input.step_ref(), &pending)
            .await
            .map_err(store_error)?;
        tracing::info!(
            session = %input.address.session_id,
            run = %input.run_id,
            step = input.step,
            calls = pending.len(),
            "run suspended on client calls"
        );
        Ok(SuspendedRun {
            wake_at: wake_at(agent, &pending),
            tool_call_ids: pending.into_iter().map(|p| p.tool_call_id).collect(),
        })
    }

    /// The suspension of a run whose step is already committed (a retried activity).
    async fn suspended_run(
        &self,
        input: &StepInput,
        tool_call_ids: Vec<String>,
    ) -> Result<SuspendedRun, ActivityError> {
        let agent = self.agent(&input.agent_type)?;
        let pending: Vec<PendingCall> = self
            .store
            .pending_calls(&input.address)
            .await
            .map_err(store_error)?
            .into_iter()
            .map(|(call, _run)| call)
            .filter(|call| tool_call_ids.contains(&call.tool_call_id))
            .collect();
        Ok(SuspendedRun {
            wake_at: wake_at(agent, &pending),
            tool_call_ids,
        })
    }

    fn agent(&self, agent_type: &str) -> Result<&Arc<Agent>, ActivityError> {
        self.registry.get(agent_type).ok_or_else(|| {
            failure(
                ErrorCode::UnknownAgentType,
                format!("this worker has no agent type {agent_type:?}"),
            )
        })
    }

    /// Runs one tool call and stages its result or error with its `tool_end` chunk.
    async fn run_call(
        &self,
        ctx: &ActivityContext,
        step: &StepInput,
        call: &ToolCall,
    ) -> Result<(), ActivityError> {
        let outcome = self
            .outcome_of(ctx, &step.agent_type, &call.name, call.arguments.clone())
            .await;
        self.store
            .stage_tool_result(
                step.step_ref(),
                &ToolResult {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    outcome,
                },
            )
            .await
            .map_err(store_error)?;
        Ok(())
    }

    /// Runs a server tool and turns whatever happens into the outcome the model sees.
    async fn outcome_of(
        &self,
        ctx: &ActivityContext,
        agent_type: &str,
        tool_name: &str,
        arguments: serde_json::Value,
    ) -> ToolOutcome {
        let Some(tool) = self
            .registry
            .get(agent_type)
            .and_then(|agent| agent.tool(tool_name))
        else {
            return ToolOutcome::Error(baton_core::ToolError::new(
                codes::UNKNOWN_TOOL,
                format!("there is no tool named {tool_name:?}"),
            ));
        };
        match with_heartbeats(ctx, self.heartbeat_every, tool.call(arguments)).await {
            Ok(value) => ToolOutcome::Result(value),
            Err(error) => ToolOutcome::Error(error),
        }
    }

    async fn commit(&self, step: &StepInput) -> Result<(), ActivityError> {
        self.store
            .commit_step(step.step_ref(), None)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    async fn staged_call(
        &self,
        step: &StepInput,
        tool_call_id: &str,
    ) -> Result<ToolCall, ActivityError> {
        let staged = self
            .store
            .staged_turn(step.step_ref())
            .await
            .map_err(store_error)?
            .ok_or_else(|| {
                failure(
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
                    failure(
                        ErrorCode::Internal,
                        format!("step {} has no tool call {tool_call_id}", step.step),
                    )
                }),
            _ => Err(failure(
                ErrorCode::Internal,
                "staged turn is not an assistant message",
            )),
        }
    }

    /// Whether an already committed final step completed the run (a step whose finishing tools
    /// all failed was committed without completing).
    async fn committed_outcome(&self, input: &StepInput) -> Result<bool, ActivityError> {
        let state = self
            .store
            .session(&input.address)
            .await
            .map_err(store_error)?;
        match state {
            Some(state) if state.run_id == input.run_id && state.step_count >= input.step => {
                Ok(state.status == store::Status::Completed)
            }
            _ => Err(failure(
                ErrorCode::Internal,
                format!(
                    "step {} of run {} was neither staged nor committed",
                    input.step, input.run_id
                ),
            )),
        }
    }
}

/// Whether a successful call of `tool_name` ends the run (a server tool marked so).
fn finishes_run(agent: &Agent, tool_name: &str) -> bool {
    matches!(agent.any_tool(tool_name), Some(AgentTool::Server(tool)) if tool.finishes_run())
}

/// Whether a call of `tool_name` makes the run wait for an answer: a client tool, or a server
/// tool that requires approval.
fn awaits_answer(agent: &Agent, tool_name: &str) -> bool {
    match agent.any_tool(tool_name) {
        Some(AgentTool::Client(_)) => true,
        Some(AgentTool::Server(tool)) => tool.requires_approval(),
        None => false,
    }
}

/// When a deadline workflow should wake for these pending calls: the earliest deadline, if the
/// agent resumes sessions by itself.
fn wake_at(agent: &Agent, pending: &[PendingCall]) -> Option<u64> {
    if !agent.resume_on_deadline() {
        return None;
    }
    pending.iter().map(|call| call.deadline_at).min()
}

/// Runs `work`, recording a heartbeat every `every` so Temporal notices a lost worker quickly
/// and a cancellation reaches the activity.
async fn with_heartbeats<T>(
    ctx: &ActivityContext,
    every: Duration,
    work: impl Future<Output = T>,
) -> T {
    let mut work = std::pin::pin!(work);
    let mut ticker = tokio::time::interval(every);
    ticker.tick().await;
    loop {
        tokio::select! {
            output = &mut work => return output,
            _ = ticker.tick() => {
                // A heartbeat that cannot be encoded is impossible for `()`; ignore the result.
                let _ = ctx.record_heartbeat(()).await;
            }
        }
    }
}

/// A non-retryable failure whose Temporal type is the error code.
fn failure(code: ErrorCode, message: impl Into<String>) -> ActivityError {
    ActivityError::application(
        ApplicationFailure::builder(message.into())
            .type_name(code.as_str().to_owned())
            .non_retryable(true)
            .build(),
    )
}

/// A failed model call as an activity failure typed with its error code: retried (after the
/// provider's `retry-after`, when it gave one) if the kind says so, final otherwise.
fn model_error(error: model::Error) -> ActivityError {
    let retryable = error.retryable();
    ActivityError::application(
        ApplicationFailure::builder(error.to_string())
            .type_name(error.kind.code().as_str().to_owned())
            .non_retryable(!retryable)
            // Temporal does not retry at all after a zero delay; then the policy's backoff
            // decides.
            .maybe_next_retry_delay(error.retry_after.filter(|d| retryable && !d.is_zero()))
            .build(),
    )
}

/// A failure worth retrying (Redis trouble).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Transient(String);

/// Redis trouble is retried; a refused or corrupt write is not.
fn store_error(error: store::Error) -> ActivityError {
    match error {
        store::Error::Redis(_) => ActivityError::from(Transient(error.to_string())),
        store::Error::RunRefused { .. } => failure(ErrorCode::RunNotActive, error.to_string()),
        store::Error::SessionNotFound(_) => failure(ErrorCode::SessionNotFound, error.to_string()),
        store::Error::SessionExists(_) | store::Error::Corrupt { .. } => {
            failure(ErrorCode::Internal, error.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::ErrorKind;

    #[test]
    fn model_errors_become_typed_failures_with_the_providers_delay() {
        let application = |error: model::Error| match model_error(error) {
            ActivityError::Application(failure) => failure,
            other => panic!("not an application failure: {other:?}"),
        };
        let throttled = application(
            model::Error::new(ErrorKind::RateLimited, "slow down")
                .with_retry_after(Some(Duration::from_millis(343))),
        );
        assert_eq!(throttled.type_name(), Some("model_rate_limited"));
        assert!(!throttled.is_non_retryable());
        assert_eq!(
            throttled.next_retry_delay(),
            Some(Duration::from_millis(343))
        );

        let now = application(
            model::Error::new(ErrorKind::Unavailable, "overloaded")
                .with_retry_after(Some(Duration::ZERO)),
        );
        assert_eq!(now.type_name(), Some("model_unavailable"));
        assert_eq!(now.next_retry_delay(), None);

        let refused = application(
            model::Error::new(ErrorKind::Authentication, "bad key")
                .with_retry_after(Some(Duration::from_secs(5))),
        );
        assert_eq!(refused.type_name(), Some("model_auth_failed"));
        assert!(refused.is_non_retryable());
        assert_eq!(refused.next_retry_delay(), None);
        assert_eq!(refused.to_string(), "authentication failed: bad key");
    }
}
