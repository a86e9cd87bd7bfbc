//! A run's payloads: the workflow's input and shape, the activities' policy, a suspended run,
//! a failure to record and how the run ended.

use super::step::StepInput;
use baton_core::{
    Agent, AgentRegistry, ErrorCode,
    store::{ClaimedRun, SessionAddress, SessionState},
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Input of one agent-run workflow (one run segment of a session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInput {
    pub address: SessionAddress,
    pub agent_type: String,
    pub run_id: String,
    pub stream_id: String,
    /// Steps the session had committed when this run began; the run's first step is one more.
    pub first_step: u32,
    /// Cap on the steps of this run.
    pub max_steps: u32,
    pub policy: ActivityPolicy,
    /// The run resumes a suspended session: drain the answered calls first.
    #[serde(default)]
    pub resume: bool,
    /// The workflow shape the starter chose; absent in the input of a run started before shapes
    /// were chosen this way (see [`RunShape`]).
    #[serde(default)]
    pub shape: RunShape,
}

/// Which of the workflow's shapes a run takes, chosen by whoever starts it and kept in its input,
/// so a worker replaying a run takes the paths that run took. Choosing it here rather than with
/// a version patch costs nothing per run: a patch records a marker and upserts the
/// `TemporalChangeVersion` search attribute, which on the dev server held the first workflow
/// task back about 14 ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RunShape {
    /// An input without a shape: the run's history says which paths it took (the
    /// `fewer-tasks-per-round` patch marker, or none).
    #[default]
    Unstated,
    /// A resumed run drains its answers in its first model step, and a suspended run's deadline
    /// workflow is a delayed start made by a local activity.
    FewerTasksPerRound,
    /// As `FewerTasksPerRound`, and each model step is a local activity: it runs in the workflow
    /// task that scheduled it, so a step costs no activity task, no schedule/start/complete
    /// events and no second workflow task. A lost worker is noticed by the workflow task's
    /// time-out, and an interrupt by the step itself watching its run (see `model_step`).
    LocalModelStep,
}

impl RunShape {
    /// The shape every run starts with today.
    pub const CURRENT: Self = Self::LocalModelStep;
}

/// The one place a run's input is made: every run starts from one of these three.
impl RunInput {
    /// The input of a session's first run (a new session's, a sub-agent call's child's): no
    /// committed steps, nothing to drain.
    pub fn first(
        address: SessionAddress,
        agent_type: &str,
        run_id: &str,
        stream_id: &str,
        max_steps: u32,
        policy: ActivityPolicy,
    ) -> Self {
        Self {
            address,
            agent_type: agent_type.to_owned(),
            run_id: run_id.to_owned(),
            stream_id: stream_id.to_owned(),
            first_step: 0,
            max_steps,
            policy,
            resume: false,
            shape: RunShape::CURRENT,
        }
    }

    /// The input of a run that `claimed` a session of `agent` (a resume, a rewind, a lapsed
    /// deadline, a parent its children's answers complete): it drains the answers first, then
    /// continues after the session's committed steps.
    pub fn resumed(
        address: SessionAddress,
        agent: &Agent,
        claimed: &ClaimedRun,
        stream_id: &str,
        policy: ActivityPolicy,
    ) -> Self {
        Self {
            address,
            agent_type: agent.name().to_owned(),
            run_id: claimed.run_id.clone(),
            stream_id: stream_id.to_owned(),
            first_step: claimed.step_count,
            max_steps: agent.max_steps(),
            policy,
            resume: true,
            shape: RunShape::CURRENT,
        }
    }

    /// The input describing the session's current run as `state` holds it (suspended, or
    /// ended), for whoever acts on that run from outside its workflow: the deadline sweep
    /// starting its deadline workflow, a parent's report of its ended child. Its steps cap is
    /// its agent's in `registry` (0 for an agent this worker lacks).
    pub fn of_session(
        address: SessionAddress,
        state: &SessionState,
        registry: &AgentRegistry,
        policy: ActivityPolicy,
    ) -> Self {
        Self {
            address,
            agent_type: state.agent_type.clone(),
            run_id: state.run_id.clone(),
            stream_id: state.stream_id.clone(),
            first_step: state.step_count,
            max_steps: registry
                .get(&state.agent_type)
                .map_or(0, |agent| agent.max_steps()),
            policy,
            resume: false,
            shape: RunShape::CURRENT,
        }
    }

    /// The input of the activities of `step`.
    pub fn step(&self, step: u32) -> StepInput {
        StepInput {
            address: self.address.clone(),
            agent_type: self.agent_type.clone(),
            run_id: self.run_id.clone(),
            stream_id: self.stream_id.clone(),
            step,
            drain_first: false,
        }
    }
}

/// Timeouts and retries of the run's activities, chosen by the server that starts the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityPolicy {
    pub model_timeout: Duration,
    pub model_attempts: u32,
    pub tool_timeout: Duration,
    pub tool_attempts: u32,
    /// A model step or tool that does not heartbeat within this is taken as lost and retried.
    pub heartbeat_timeout: Duration,
    /// Timeout of the local activities that commit to Redis.
    pub commit_timeout: Duration,
    /// Attempts of a Redis commit (the first included) before the run fails.
    #[serde(default = "default_commit_attempts")]
    pub commit_attempts: u32,
    /// The wait before an activity's first retry; each later wait doubles, up to
    /// `retry_maximum_interval`.
    #[serde(default = "default_retry_initial_interval")]
    pub retry_initial_interval: Duration,
    #[serde(default = "default_retry_maximum_interval")]
    pub retry_maximum_interval: Duration,
}

// Runs started before these fields existed carry none: they get what was fixed then.
fn default_commit_attempts() -> u32 {
    10
}

fn default_retry_initial_interval() -> Duration {
    Duration::from_millis(200)
}

fn default_retry_maximum_interval() -> Duration {
    Duration::from_secs(10)
}

impl Default for ActivityPolicy {
    fn default() -> Self {
        Self {
            model_timeout: Duration::from_secs(300),
            model_attempts: 5,
            tool_timeout: Duration::from_secs(300),
            tool_attempts: 3,
            heartbeat_timeout: Duration::from_secs(30),
            commit_timeout: Duration::from_secs(30),
            commit_attempts: default_commit_attempts(),
            retry_initial_interval: default_retry_initial_interval(),
            retry_maximum_interval: default_retry_maximum_interval(),
        }
    }
}

/// A run that has suspended on client calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuspendedRun {
    pub tool_call_ids: Vec<String>,
    /// When the earliest deadline of the batch lapses (ms since the epoch), if the agent resumes
    /// the session by itself then.
    #[serde(default)]
    pub wake_at: Option<u64>,
    /// The activity put that deadline in the deadline index itself (it lay beyond the worker's
    /// horizon), so the workflow arranges nothing more; absent from results recorded before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deadline_indexed: bool,
}

/// Input of `fail_run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailInput {
    pub step: StepInput,
    pub code: ErrorCode,
    pub message: String,
}

/// How a run ended, as the workflow returns it. Failures are workflow failures whose type is the
/// error code, and are recorded in Redis before the workflow fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum RunOutcome {
    Completed {
        steps: u32,
    },
    /// The run committed its state and waits, without a workflow, for these client calls.
    Suspended {
        tool_call_ids: Vec<String>,
    },
}
