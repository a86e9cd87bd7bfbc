//! Baton's Temporal activities. They do the I/O of a run: call the model, run server tools and
//! commit steps to Redis. Each is idempotent per (run, step): a retried activity finds its earlier
//! work in Redis and neither repeats a message nor a stream chunk.
//!
//! Their inputs and outputs (module [`io`]) are what Temporal history stores, so they hold ids and
//! counts, never conversation bodies. This file registers the activities; each one's body lives
//! in the module of its domain, the decisions they share in [`plan`] (no I/O) and the one
//! conversion of their errors into Temporal failures in `failure`.

pub mod io;

mod ask;
mod cascade;
pub use cascade::{ReportError, report_ended_children};
pub use deadline_start::{DEFAULT_DEADLINE_HORIZON, DeadlineStartError, start_delayed_deadline};
mod commit;
mod deadline;
mod deadline_start;
mod failure;
mod heartbeat;
mod log_cache;
pub use log_cache::LogCacheBounds;
mod model_step;
mod plan;
mod resume;
mod subagent;
mod suspend;
mod tools;
mod watch;

use baton_core::{Agent, AgentRegistry, ErrorCode, Store};
use failure::Error;
use io::{
    DeadlineCheck, DeadlineInput, DeadlineStart, FailInput, ParentNext, RemoteFollowInput,
    RunInput, StepInput, StepPlan, SubAgentEnd, SubAgentStart, SuspendedRun, ToolAsked, ToolInput,
};
use std::{sync::Arc, time::Duration};
use temporalio_common::ActivityError;
use temporalio_macros::activities;
use temporalio_sdk::activities::ActivityContext;

/// The activities of the agent-run workflow, sharing one store and one registry.
pub struct AgentActivities {
    store: Store,
    registry: AgentRegistry,
    heartbeat_every: Duration,
    /// The logs the last model steps read, so a run's next step reads only what is new.
    logs: log_cache::LogCache,
    /// Starts the deadline workflows of suspended runs (see `deadline_start.rs`); a worker
    /// sets it with [`AgentActivities::starting_deadlines_with`].
    temporal: Option<temporalio_client::Client>,
    /// A suspended run whose deadline is further away than this gets no deadline workflow yet,
    /// only an entry in the deadline index (see `deadline_start.rs`); `None`: always a workflow.
    deadline_horizon: Option<Duration>,
    /// The client of remote sub-agents' producers (one pool for the worker).
    http: reqwest::Client,
    /// Where remote sub-agents' producers POST their turn-end callbacks (the consumer's
    /// `/remote-callbacks` route, public base included); `None`: no callback is asked for.
    remote_callbacks: Option<String>,
}

impl AgentActivities {
    /// `heartbeat_every` should be well under the heartbeat timeout the workflow sets.
    pub fn new(store: Store, registry: AgentRegistry, heartbeat_every: Duration) -> Self {
        Self {
            store,
            registry,
            heartbeat_every,
            logs: log_cache::LogCache::default(),
            temporal: None,
            deadline_horizon: Some(DEFAULT_DEADLINE_HORIZON),
            http: reqwest::Client::new(),
            remote_callbacks: None,
        }
    }

    /// Builder: the deadline horizon (default [`DEFAULT_DEADLINE_HORIZON`]); `None` starts every
    /// suspended run's deadline workflow at once. A worker that indexes deadlines must sweep them
    /// with the same horizon.
    pub fn deadline_horizon(mut self, horizon: Option<Duration>) -> Self {
        self.deadline_horizon = horizon;
        self
    }

    /// Builder: ask each remote child's producer for turn-end callbacks to `url` (the server's
    /// `/remote-callbacks` route as the producer reaches it, e.g.
    /// `https://consumer.internal/remote-callbacks`).
    pub fn remote_callbacks(mut self, url: Option<String>) -> Self {
        self.remote_callbacks = url.map(|url| url.trim_end_matches('/').to_owned());
        self
    }

    /// Builder: how much the worker's log cache holds (default [`LogCacheBounds::default`]).
    pub fn log_cache(mut self, bounds: LogCacheBounds) -> Self {
        self.logs = log_cache::LogCache::new(bounds);
        self
    }

    /// Builder: the client the `start_deadline` activity starts deadline workflows with. A
    /// worker needs it; activities called outside a worker (a report) do not.
    pub fn starting_deadlines_with(mut self, temporal: temporalio_client::Client) -> Self {
        self.temporal = Some(temporal);
        self
    }

    /// The agent a run belongs to; a worker that lacks it cannot play the run.
    fn agent(&self, agent_type: &str) -> Result<&Arc<Agent>, Error> {
        self.registry.get(agent_type).ok_or_else(|| {
            Error::typed(
                ErrorCode::UnknownAgentType,
                format!("this worker has no agent type {agent_type:?}"),
            )
        })
    }
}

// The names, inputs and outputs of these methods are the activities' names and payloads in
// workflow history: recorded runs replay only while they stay as they are.
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
        let step = self.play_model_step(&ctx, &input);
        Ok(self.stopped_with_run(&ctx, &input, step).await?)
    }

    /// Runs one server tool call of a staged step and stages its result (or error) with its
    /// `tool_end` chunk. Tool failures are results the model sees, not activity failures. A
    /// call that stopped to ask a person stages its question instead and says so: the step
    /// suspends on it.
    #[activity]
    pub async fn execute_tool(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ToolInput,
    ) -> Result<Option<ToolAsked>, ActivityError> {
        Ok(self.execute_staged_call(&ctx, &input).await?)
    }

    /// Commits a staged step with tool results into the log.
    #[activity]
    pub async fn commit_step(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StepInput,
    ) -> Result<(), ActivityError> {
        Ok(self.commit(&input).await?)
    }

    /// After a step's tool activities: commits the step and suspends the run on its client
    /// calls. Returns the awaited call ids and when the deadline workflow should wake.
    #[activity]
    pub async fn commit_suspended_step(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StepInput,
    ) -> Result<SuspendedRun, ActivityError> {
        Ok(self.suspend_after_tools(&input).await?)
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
        Ok(self.drain_answers(&ctx, &input).await?)
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
        Ok(self.claim_lapsed_batch(&input).await?)
    }

    /// A local activity: arranges a suspended run's deadline: its deadline workflow started,
    /// delayed until its wake time, or (further away than the horizon) an entry in the deadline
    /// index.
    #[activity]
    pub async fn start_deadline(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: DeadlineStart,
    ) -> Result<(), ActivityError> {
        Ok(self
            .arrange_suspended_deadline(&ctx.info().task_queue, &input)
            .await?)
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
        Ok(self.complete(&input).await?)
    }

    /// The local transport's start (`subagent/local.rs`): starts the child session of a
    /// sub-agent call (once; a retry finds it) with `subagent_start` on the parent's stream, or
    /// stages the call's error for a bad input. Another transport declares its own activities
    /// here, their bodies in its module of `subagent/`.
    #[activity]
    pub async fn start_sub_agent(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: ToolInput,
    ) -> Result<SubAgentStart, ActivityError> {
        Ok(self.start_child_of(&input).await?)
    }

    /// The local transport's end: after a sub-agent's child workflow has ended, stages the call's
    /// result from the child's end (with `subagent_end`), or says that the child is suspended.
    #[activity]
    pub async fn finish_sub_agent(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: ToolInput,
    ) -> Result<SubAgentEnd, ActivityError> {
        Ok(self.finish_child_of(&input).await?)
    }

    /// The remote transport: starts (or attaches to) the call's child on its producer, follows
    /// its stream onto the caller's, and stages the call's result from the child's end.
    /// Heartbeats; a retry resumes from the cursor in Redis.
    #[activity]
    pub async fn follow_remote_sub_agent(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ToolInput,
    ) -> Result<SubAgentEnd, ActivityError> {
        Ok(self.follow_remote_child_of(&ctx, &input).await?)
    }

    /// The A2A transport: sends the call's message to the agent (once), follows the task it
    /// began onto the caller's stream, and stages the call's result from the task's end, or
    /// relays its question. Heartbeats; a retry follows the task recorded in Redis.
    #[activity]
    pub async fn follow_a2a_sub_agent(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ToolInput,
    ) -> Result<SubAgentEnd, ActivityError> {
        Ok(self.follow_a2a_child_of(&ctx, &input).await?)
    }

    /// A remote child whose relayed calls were answered, continued by its caller's resume: resumes
    /// it on its producer, follows it from the cursor, and at its end answers the caller's call
    /// (claiming the caller when that completes its batch; the workflow then starts it) or, paused
    /// again, records its next calls. Heartbeats; a retry reads on from the cursor in Redis.
    #[activity]
    pub async fn follow_resumed_remote_sub_agent(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: RemoteFollowInput,
    ) -> Result<ParentNext, ActivityError> {
        Ok(self.follow_resumed_remote_child_of(&ctx, &input).await?)
    }

    /// After a child session's run has ended: answers the parent's sub-agent call if the parent
    /// is suspended on it, and claims the parent for a resumed run when that completed its
    /// batch (the workflow then starts it).
    #[activity]
    pub async fn report_to_parent(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: RunInput,
    ) -> Result<ParentNext, ActivityError> {
        Ok(self.report_end_to_parent(&input).await?)
    }

    /// After a step suspended awaiting children: reports the children that ended before the
    /// suspension was committed (see `report_to_parent`).
    #[activity]
    pub async fn recheck_children(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: RunInput,
    ) -> Result<ParentNext, ActivityError> {
        Ok(self
            .report_ended_children(&input.address, &input.policy)
            .await?)
    }

    /// Ends the run as failed with a typed error.
    #[activity]
    pub async fn fail_run(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: FailInput,
    ) -> Result<(), ActivityError> {
        Ok(self.record_failure(input).await?)
    }
}
