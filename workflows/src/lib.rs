//! The agent-run workflow: one run segment of a session, ordering the activities of each step.
//! It does no I/O and holds no conversation: activities load and commit everything in Redis, and
//! history holds only ids, counts and small plans.
//!
//! A step is one `model_step` activity (the model call, then the inline tools it called and, when
//! no tool is left, the commit), then the step's other server tools as `execute_tool` activities
//! in parallel and a `commit_step` local activity (one Lua script, no matching round trip). Runs
//! of today's shape take the model step as a local activity too, so a step whose tools are all
//! inline costs no activity task and no workflow task of its own.

use baton_activities::{
    AgentActivities,
    io::{
        ActivityPolicy, DeadlineCheck, DeadlineInput, DeadlineOutcome, DeadlineStart, FailInput,
        RunInput, RunOutcome, RunShape, StepInput, StepPlan, SubAgentEnd, SuspendedRun, ToolInput,
    },
};
use baton_core::ErrorCode;

mod remote_follow;
mod subagent;
mod tree;
pub use remote_follow::RemoteFollowWorkflow;
use std::time::{Duration, UNIX_EPOCH};
use temporalio_common::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityExecutionError, ActivityOptions, ApplicationFailure, ChildWorkflowOptions,
    LocalActivityOptions, ParentClosePolicy, WorkflowContext, WorkflowResult, WorkflowTermination,
    workflows::{join, join_all},
};

/// The patch that made a human-in-the-loop round cheaper in Temporal operations: a resumed run
/// drains its answers in its first model step (no activity of its own), and a suspended run's
/// deadline workflow is a delayed start made by a local activity (no child workflow, so no
/// workflow task to learn of its start, and none in the deadline workflow before its deadline).
/// Runs whose history predates it (no marker) take the old paths. Runs started since carry the
/// shape in their input ([`RunShape`]) and never record the patch (see [`fewer_tasks_per_round`]).
const FEWER_TASKS_PER_ROUND: &str = "fewer-tasks-per-round";

/// Whether this run takes the `fewer-tasks-per-round` paths: said by its input, or, for an input
/// that does not say (a run started before shapes were chosen by the starter), by the patch.
fn fewer_tasks_per_round(ctx: &WorkflowContext<AgentRunWorkflow>, input: &RunInput) -> bool {
    input.shape >= RunShape::FewerTasksPerRound || ctx.patched(FEWER_TASKS_PER_ROUND)
}

/// The agent-run workflow. Its id is `agent__<agentType>__<sessionId>` for a session's first run.
#[workflow]
#[derive(Default)]
pub struct AgentRunWorkflow;

#[workflow_methods]
impl AgentRunWorkflow {
    #[run]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: RunInput,
    ) -> WorkflowResult<RunOutcome> {
        let outcome = match run_steps(ctx, &input).await {
            Ok(outcome) => Ok(outcome),
            Err(failure) => fail(ctx, &input, failure).await,
        };
        // A child's end answers its parent if the parent is suspended on it (a suspended child
        // is answered later, by its own resumed run).
        let is_child = input.address.session_id != input.address.root_session_id;
        if is_child && !matches!(outcome, Ok(RunOutcome::Suspended { .. })) {
            tree::report_to_parent(ctx, &input).await;
        }
        outcome
    }
}

/// Why a run stopped short: the step it was at, a code and a message.
struct Failure {
    step: StepInput,
    code: ErrorCode,
    message: String,
}

impl Failure {
    /// The failure of an activity of `step`; `fallback` is the code when the activity set none.
    fn of_activity(step: &StepInput, error: &ActivityExecutionError, fallback: ErrorCode) -> Self {
        let (code, message) = activity_failure(error, fallback);
        Self {
            step: step.clone(),
            code,
            message,
        }
    }
}

/// The step loop: model call, tools, commit, until the model answers or `max_steps` is reached.
async fn run_steps(
    ctx: &mut WorkflowContext<AgentRunWorkflow>,
    input: &RunInput,
) -> Result<RunOutcome, Failure> {
    // A resumed run drains its answers in its first model step; runs started before that change
    // (their history has no marker) drain in an activity of their own, as they did then.
    let drain_in_model_step = input.resume && fewer_tasks_per_round(ctx, input);
    if input.resume && !drain_in_model_step {
        let suspended_step = input.step(input.first_step);
        // A regular activity: an approved call runs its tool here.
        ctx.execute_activity(
            AgentActivities::apply_results_and_reload,
            suspended_step.clone(),
            tool_options(input),
        )
        .await
        .map_err(|e| Failure::of_activity(&suspended_step, &e, ErrorCode::Internal))?;
    }
    for taken in 0..input.max_steps {
        let step = input.step(input.first_step + taken + 1);
        let model_input = StepInput {
            drain_first: drain_in_model_step && taken == 0,
            ..step.clone()
        };
        let plan = if input.shape >= RunShape::LocalModelStep {
            ctx.execute_local_activity(
                AgentActivities::model_step,
                model_input,
                local_model_options(input),
            )
            .await
        } else {
            ctx.execute_activity(
                AgentActivities::model_step,
                model_input,
                model_options(input),
            )
            .await
        }
        .map_err(|e| Failure::of_activity(&step, &e, ErrorCode::ModelFailed))?;
        match plan {
            StepPlan::Answered => {
                if complete(ctx, input, &step).await? {
                    return Ok(RunOutcome::Completed { steps: taken + 1 });
                }
            }
            StepPlan::Committed => {}
            StepPlan::Suspended(suspended) => {
                return suspend(ctx, input, &step, suspended).await;
            }
            StepPlan::RunTools {
                tool_call_ids,
                sub_agents,
                then_suspend,
                then_finish,
            } => {
                let shared: &WorkflowContext<AgentRunWorkflow> = ctx;
                let calls = tool_call_ids.into_iter().map(|tool_call_id| {
                    shared.execute_activity(
                        AgentActivities::execute_tool,
                        ToolInput {
                            step: step.clone(),
                            tool_call_id,
                        },
                        tool_options(input),
                    )
                });
                let children = sub_agents
                    .into_calls()
                    .map(|call| subagent::run_call(shared, input, &step, call));
                let (tools, children) = join!(join_all(calls), join_all(children));
                // A call that stopped to ask a person suspends the step on it.
                let mut asked = false;
                for tool in tools {
                    match tool {
                        Ok(ran) => asked |= ran.is_some(),
                        Err(error) => {
                            return Err(Failure::of_activity(&step, &error, ErrorCode::ToolFailed));
                        }
                    }
                }
                let mut awaiting_child = false;
                for child in children {
                    match child {
                        Ok(end) => awaiting_child |= end == SubAgentEnd::AwaitingChild,
                        Err(error) => {
                            return Err(Failure::of_activity(&step, &error, ErrorCode::Internal));
                        }
                    }
                }
                // A suspended child suspends the parent's step too, awaiting it.
                let then_finish = then_finish && !awaiting_child && !asked;
                if then_suspend || awaiting_child || asked {
                    let suspended = ctx
                        .execute_local_activity(
                            AgentActivities::commit_suspended_step,
                            step.clone(),
                            commit_options(input),
                        )
                        .await
                        .map_err(|e| Failure::of_activity(&step, &e, ErrorCode::Internal))?;
                    if awaiting_child {
                        tree::recheck_children(ctx, input).await;
                    }
                    return suspend(ctx, input, &step, suspended).await;
                }
                if then_finish {
                    if complete(ctx, input, &step).await? {
                        return Ok(RunOutcome::Completed { steps: taken + 1 });
                    }
                    continue;
                }
                ctx.execute_local_activity(
                    AgentActivities::commit_step,
                    step.clone(),
                    commit_options(input),
                )
                .await
                .map_err(|e| Failure::of_activity(&step, &e, ErrorCode::Internal))?;
            }
        }
    }
    Err(Failure {
        step: input.step(input.first_step + input.max_steps),
        code: ErrorCode::MaxStepsExceeded,
        message: format!(
            "the model was still calling tools after max_steps ({}) steps",
            input.max_steps
        ),
    })
}

/// Commits the final step; says whether the run completed (a step whose finishing tools all
/// failed goes on to the next model call).
async fn complete(
    ctx: &mut WorkflowContext<AgentRunWorkflow>,
    input: &RunInput,
    step: &StepInput,
) -> Result<bool, Failure> {
    ctx.execute_local_activity(
        AgentActivities::complete_run,
        step.clone(),
        commit_options(input),
    )
    .await
    .map_err(|e| Failure::of_activity(step, &e, ErrorCode::Internal))
}

/// Ends a run that has suspended (its state is committed): when the agent resumes sessions by
/// itself and the activity did not index the deadline (a near one, or a result recorded before
/// the index), arranges it with the `start_deadline` local activity, then returns. Nothing waits
/// in this workflow.
async fn suspend(
    ctx: &mut WorkflowContext<AgentRunWorkflow>,
    input: &RunInput,
    step: &StepInput,
    suspended: SuspendedRun,
) -> Result<RunOutcome, Failure> {
    // A deadline the activity put in the deadline index needs nothing more here.
    let wake_at = suspended.wake_at.filter(|_| !suspended.deadline_indexed);
    if let Some(wake_at) = wake_at {
        let deadline = DeadlineStart::new(input.clone(), wake_at);
        if fewer_tasks_per_round(ctx, input) {
            ctx.execute_local_activity(
                AgentActivities::start_deadline,
                deadline,
                commit_options(input),
            )
            .await
            .map_err(|error| {
                let (_, message) = activity_failure(&error, ErrorCode::TemporalUnavailable);
                Failure {
                    step: step.clone(),
                    code: ErrorCode::TemporalUnavailable,
                    message,
                }
            })?;
            return Ok(RunOutcome::Suspended {
                tool_call_ids: suspended.tool_call_ids,
            });
        }
        let options = deadline.child_options();
        ctx.start_child_workflow(DeadlineWorkflow::run, deadline.input, options)
            .await
            .map_err(|error| Failure {
                step: step.clone(),
                code: ErrorCode::TemporalUnavailable,
                message: format!("the deadline workflow did not start: {error}"),
            })?;
    }
    Ok(RunOutcome::Suspended {
        tool_call_ids: suspended.tool_call_ids,
    })
}

/// Waits (a durable timer, nothing in memory) until the earliest open deadline of a suspended
/// run's batch, then resumes the session if that run still waits: the lapsed calls count as
/// answered (`client_tool_timeout`), so an abandoned session still finishes. A session resumed
/// earlier makes it a no-op. Id: `deadline__<session>__<suspended run>`.
#[workflow]
#[derive(Default)]
pub struct DeadlineWorkflow;

#[workflow_methods]
impl DeadlineWorkflow {
    #[run]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: DeadlineInput,
    ) -> WorkflowResult<DeadlineOutcome> {
        let mut wake_at = input.wake_at;
        loop {
            let now = ctx
                .workflow_time()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as u64);
            if wake_at > now {
                // A cancelled timer (the workflow was cancelled) just checks early.
                ctx.timer(Duration::from_millis(wake_at - now)).await;
            }
            let check = ctx
                .execute_local_activity(
                    AgentActivities::check_deadline,
                    input.clone(),
                    commit_options(&input.run),
                )
                .await?;
            match check {
                DeadlineCheck::Resume { run, workflow_id } => {
                    let run_id = run.run_id.clone();
                    let options = ChildWorkflowOptions::builder()
                        .workflow_id(workflow_id.clone())
                        .parent_close_policy(ParentClosePolicy::Abandon)
                        .build();
                    ctx.start_child_workflow(AgentRunWorkflow::run, *run, options)
                        .await?;
                    return Ok(DeadlineOutcome::Resumed {
                        run_id,
                        workflow_id,
                    });
                }
                DeadlineCheck::WaitUntil { wake_at: next } => wake_at = next,
                DeadlineCheck::Nothing => return Ok(DeadlineOutcome::Nothing),
            }
        }
    }
}

/// Records the failure in Redis, then fails the workflow with the error code as failure type.
async fn fail(
    ctx: &mut WorkflowContext<AgentRunWorkflow>,
    input: &RunInput,
    failure: Failure,
) -> WorkflowResult<RunOutcome> {
    let Failure {
        step,
        code,
        message,
    } = failure;
    // The run had already ended (a stop found by its step): there is nothing left to record,
    // and the script would refuse it. Earlier shapes recorded the attempt: their histories
    // replay only if they still make it.
    if code == ErrorCode::RunNotActive && input.shape >= RunShape::LocalModelStep {
        return Err(typed_failure(code, message));
    }
    let recorded = ctx
        .execute_local_activity(
            AgentActivities::fail_run,
            FailInput {
                step,
                code,
                message: message.clone(),
            },
            commit_options(input),
        )
        .await;
    if let Err(error) = recorded {
        // Nothing more can be done from here; the workflow failure below still carries the code.
        let (_, detail) = activity_failure(&error, ErrorCode::Internal);
        return Err(typed_failure(
            ErrorCode::StoreUnavailable,
            format!("{message} (and recording the failure failed: {detail})"),
        ));
    }
    Err(typed_failure(code, message))
}

fn typed_failure(code: ErrorCode, message: String) -> WorkflowTermination {
    ApplicationFailure::builder(message)
        .type_name(code.as_str().to_owned())
        .non_retryable(true)
        .build()
        .into()
}

/// The error code and message an activity failed with: the code is the application failure's
/// type when an activity set one, else `fallback`.
fn activity_failure(error: &ActivityExecutionError, fallback: ErrorCode) -> (ErrorCode, String) {
    use temporalio_common::protos::temporal::api::failure::v1::failure::FailureInfo;
    let mut failure = error.failure();
    let mut message = error.to_string();
    // Walk to the innermost cause: the outer failure only says "activity failed".
    while let Some(current) = failure {
        if let Some(FailureInfo::ApplicationFailureInfo(info)) = &current.failure_info {
            let code = serde_json::from_value(serde_json::Value::String(info.r#type.clone()))
                .unwrap_or(fallback);
            return (code, current.message.clone());
        }
        message = current.message.clone();
        failure = current.cause.as_deref();
    }
    (fallback, message)
}

fn model_options(input: &RunInput) -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(input.policy.model_timeout)
        .heartbeat_timeout(input.policy.heartbeat_timeout)
        .retry_policy(retries(&input.policy, input.policy.model_attempts))
        .build()
}

/// A model step run as a local activity (runs of shape [`RunShape::LocalModelStep`]): the same
/// time-out and retries as the regular one. It has no heartbeat: a lost worker is noticed by the
/// workflow task's time-out, and the step watches its run for a stop itself.
fn local_model_options(input: &RunInput) -> LocalActivityOptions {
    LocalActivityOptions::builder()
        .start_to_close_timeout(input.policy.model_timeout)
        .retry_policy(retries(&input.policy, input.policy.model_attempts))
        .build()
}

fn tool_options(input: &RunInput) -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(input.policy.tool_timeout)
        .heartbeat_timeout(input.policy.heartbeat_timeout)
        .retry_policy(retries(&input.policy, input.policy.tool_attempts))
        .build()
}

pub(crate) fn commit_options(input: &RunInput) -> LocalActivityOptions {
    LocalActivityOptions::builder()
        .start_to_close_timeout(input.policy.commit_timeout)
        .retry_policy(retries(&input.policy, input.policy.commit_attempts))
        .build()
}

pub(crate) fn retries(policy: &ActivityPolicy, maximum_attempts: u32) -> RetryPolicy {
    RetryPolicy::builder()
        .initial_interval(policy.retry_initial_interval)
        .maximum_interval(policy.retry_maximum_interval)
        .maximum_attempts(maximum_attempts)
        .build()
}
