//! Inputs and outputs of the workflow and its activities. Temporal stores them in history, so
//! they are small (ids, counts, options) and change only by adding optional fields.

use baton_core::{
    Agent, AgentRegistry, ErrorCode,
    store::{ClaimedRun, RunRef, SessionAddress, SessionState, StepRef},
    subagent::SubAgentTransport,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use temporalio_sdk::{ChildWorkflowOptions, ParentClosePolicy};

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

/// Input of the activities of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepInput {
    pub address: SessionAddress,
    pub agent_type: String,
    pub run_id: String,
    pub stream_id: String,
    pub step: u32,
    /// Set on a resumed run's first model step: the step first drains the suspended step's
    /// answers into the log (what `apply_results_and_reload` did as an activity of its own),
    /// then calls the model, so resuming costs one activity and one workflow task fewer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drain_first: bool,
}

impl StepInput {
    /// The step as the store names it.
    pub fn step_ref(&self) -> StepRef<'_> {
        StepRef {
            address: &self.address,
            stream_id: &self.stream_id,
            run_id: &self.run_id,
            step: self.step,
        }
    }

    /// The step's run as the store names it.
    pub fn run_ref(&self) -> RunRef<'_> {
        self.step_ref().run()
    }

    /// The same run's previous step: the suspended step a resumed run drains.
    pub fn previous(&self) -> Self {
        Self {
            step: self.step.saturating_sub(1),
            drain_first: false,
            ..self.clone()
        }
    }
}

/// What the model step left for the workflow to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum StepPlan {
    /// The model answered without calling a tool, or called (inline) a tool that ends the run:
    /// `complete_run`.
    Answered,
    /// Every tool of the step was inline and has run, and the step is committed: next step.
    Committed,
    /// Run these calls as `execute_tool` activities (in parallel), then `commit_step`, or
    /// `commit_suspended_step` when `then_suspend` is set (the step also awaits client calls),
    /// or `complete_run` when `then_finish` is set (the step called a tool that ends the run).
    /// Inline calls of the step have already run.
    RunTools {
        tool_call_ids: Vec<String>,
        /// Sub-agent calls, each run by its transport beside the tool activities.
        #[serde(flatten)]
        sub_agents: SubAgentCalls,
        #[serde(default)]
        then_suspend: bool,
        #[serde(default)]
        then_finish: bool,
    },
    /// The step awaits these client calls; it is committed and the run suspended. The workflow
    /// ends, leaving a deadline workflow behind when `wake`, is set.
    Suspended(SuspendedRun),
}

/// The sub-agent calls of a step, by transport: the one place a plan says which transport each
/// call takes. Each transport has a field of its own in the plan, absent when it has no call, so
/// the plan of a step with only local calls is what it has been since sub-agents came
/// (`subAgentCallIds`) and recorded histories replay. A new transport adds an optional field
/// here and its arms in [`Self::push`] and [`Self::into_calls`] (see `SubAgentTransport`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubAgentCalls {
    /// Calls whose child is a local session, each run as a child workflow.
    #[serde(
        rename = "subAgentCallIds",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    local: Vec<String>,
    /// Calls whose child is another service's session, each followed by a
    /// `follow_remote_sub_agent` activity.
    #[serde(
        rename = "remoteSubAgentCallIds",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    remote: Vec<String>,
}

/// One sub-agent call of a step and the transport it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubAgentCall {
    pub tool_call_id: String,
    pub transport: SubAgentTransport,
}

impl SubAgentCalls {
    /// Adds a call, under its transport.
    pub fn push(&mut self, call: SubAgentCall) {
        match call.transport {
            SubAgentTransport::Local => self.local.push(call.tool_call_id),
            SubAgentTransport::Remote => self.remote.push(call.tool_call_id),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.local.is_empty() && self.remote.is_empty()
    }

    /// The calls with their transports: by transport, each transport's in call order.
    pub fn into_calls(self) -> impl Iterator<Item = SubAgentCall> {
        let with = |transport| {
            move |tool_call_id| SubAgentCall {
                tool_call_id,
                transport,
            }
        };
        let local = self.local.into_iter().map(with(SubAgentTransport::Local));
        local.chain(self.remote.into_iter().map(with(SubAgentTransport::Remote)))
    }
}

impl FromIterator<SubAgentCall> for SubAgentCalls {
    fn from_iter<I: IntoIterator<Item = SubAgentCall>>(calls: I) -> Self {
        let mut sorted = Self::default();
        calls.into_iter().for_each(|call| sorted.push(call));
        sorted
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

/// Input of the deadline workflow of a suspended run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadlineInput {
    /// The suspended run; the input of the run to start mirrors it.
    pub run: RunInput,
    pub wake_at: u64,
}

/// How a suspended run's deadline workflow is started, made in one place for both who start
/// one: the run's workflow when the run suspends (as a child, with [`Self::child_options`]) and
/// the server when a rewind suspends without a workflow of its own (with the options of every
/// workflow it starts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadlineStart {
    /// `deadline__<session>__<suspended run>`: unique per suspended run.
    pub workflow_id: String,
    pub input: DeadlineInput,
}

impl DeadlineStart {
    /// The deadline workflow of `run`, which suspended on calls whose earliest deadline is
    /// `wake_at` (ms since the epoch).
    pub fn new(run: RunInput, wake_at: u64) -> Self {
        Self {
            workflow_id: format!("deadline__{}__{}", run.address.session_id, run.run_id),
            input: DeadlineInput { run, wake_at },
        }
    }

    /// The options of the deadline workflow as a child of the run that suspended: abandoned, so
    /// that it outlives that run's workflow, which ends at once.
    pub fn child_options(&self) -> ChildWorkflowOptions {
        ChildWorkflowOptions::builder()
            .workflow_id(self.workflow_id.clone())
            .parent_close_policy(ParentClosePolicy::Abandon)
            .build()
    }
}

/// What the deadline activity found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum DeadlineCheck {
    /// The session was claimed for this new run: start its workflow.
    Resume {
        run: Box<RunInput>,
        workflow_id: String,
    },
    /// Some calls of the batch are still open: check again then.
    WaitUntil { wake_at: u64 },
    /// The suspended run is no longer waiting (answered and resumed, stopped, ...): nothing to do.
    Nothing,
}

/// How a deadline workflow ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum DeadlineOutcome {
    Resumed { run_id: String, workflow_id: String },
    Nothing,
}

/// Input of `execute_tool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInput {
    pub step: StepInput,
    pub tool_call_id: String,
}

/// Input of `follow_resumed_remote_sub_agent` (the `RemoteFollowWorkflow`'s): the remote call of
/// the suspended step that awaits it (the step's run is the suspended run), the policy of the
/// caller's resumed run, and whether the child is resumed first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteFollowInput {
    pub call: ToolInput,
    pub policy: ActivityPolicy,
    /// Resume the child on its producer first (its relayed calls were answered); not for a
    /// child that ran past its follow window, which is followed on as it is.
    #[serde(default = "resumes_child")]
    pub resume_child: bool,
}

fn resumes_child() -> bool {
    true
}

/// What `start_sub_agent` did for a sub-agent call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SubAgentStart {
    /// The child session exists (now or since an earlier attempt): run its workflow.
    Started(ChildStart),
    /// The call already has its result (a bad input, or an earlier attempt's): nothing to run.
    Answered,
}

/// The child workflow of a sub-agent call: all the parent needs to address the child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildStart {
    pub address: SessionAddress,
    pub agent_type: String,
    pub run_id: String,
    pub stream_id: String,
    pub max_steps: u32,
    /// `agent__<agentType>__<childSessionId>`.
    pub workflow_id: String,
}

impl ChildStart {
    /// The input of the child's first run, with the parent's activity policy.
    pub fn run_input(&self, policy: ActivityPolicy) -> RunInput {
        RunInput::first(
            self.address.clone(),
            &self.agent_type,
            &self.run_id,
            &self.stream_id,
            self.max_steps,
            policy,
        )
    }
}

/// What `finish_sub_agent` found of the child of a sub-agent call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubAgentEnd {
    /// The child ended; its result (or error) is staged for the parent's step.
    Answered,
    /// The child is suspended on calls of its own: the parent's step suspends awaiting it.
    AwaitingChild,
}

/// What a child's end asks of its parent (`report_to_parent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ParentNext {
    /// Nothing: the parent's run still waits for the child's workflow, or other calls of the
    /// parent's batch are still open.
    Nothing,
    /// The child's answer completed the parent's batch and the parent was claimed for this run:
    /// start its workflow.
    Resume {
        run: Box<RunInput>,
        workflow_id: String,
    },
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use baton_core::{ScriptedModel, store::Status};
    use serde_json::json;

    #[test]
    fn each_run_input_constructor_sends_the_payload_its_starters_sent() {
        let agent = || {
            Agent::builder("demo")
                .model(ScriptedModel::default())
                .max_steps(7)
                .build()
                .unwrap()
        };
        let registry = AgentRegistry::new([agent()]).unwrap();
        let address = SessionAddress::root("s1");
        let policy = ActivityPolicy::default();
        let payload = |input: &RunInput| {
            let mut value = serde_json::to_value(input).unwrap();
            value.as_object_mut().unwrap().remove("policy");
            value
        };
        let expected = |run_id: &str, first_step: u32, max_steps: u32, resume: bool| {
            json!({
                "address": {"rootSessionId": "s1", "sessionId": "s1"},
                "agentType": "demo", "runId": run_id, "streamId": "st1",
                "firstStep": first_step, "maxSteps": max_steps, "resume": resume,
                "shape": "localModelStep",
            })
        };

        let first = RunInput::first(address.clone(), "demo", "r1", "st1", 7, policy.clone());
        assert_eq!(payload(&first), expected("r1", 0, 7, false));
        assert_eq!(first.policy, policy);

        let claimed = ClaimedRun {
            run_id: "r2".into(),
            workflow_id: "agent__demo__s1__resume-r2".into(),
            step_count: 3,
        };
        let resumed = RunInput::resumed(address.clone(), &agent(), &claimed, "st1", policy.clone());
        assert_eq!(payload(&resumed), expected("r2", 3, 7, true));

        let mut state: SessionState = serde_json::from_value(json!({
            "sessionId": "s1", "rootSessionId": "s1", "agentType": "demo",
            "status": "suspended_client_tool", "runId": "r2", "streamId": "st1",
            "stepCount": 4, "lastSequence": 9, "createdAt": 1, "updatedAt": 2,
        }))
        .unwrap();
        assert_eq!(state.status, Status::SuspendedClientTool);
        let described = RunInput::of_session(address.clone(), &state, &registry, policy.clone());
        assert_eq!(payload(&described), expected("r2", 4, 7, false));
        // An agent this worker lacks: no steps cap to give.
        state.agent_type = "gone".into();
        let lacking = RunInput::of_session(address, &state, &registry, policy);
        assert_eq!(lacking.max_steps, 0);
        assert_eq!(lacking.agent_type, "gone");
    }

    #[test]
    fn a_policy_recorded_before_the_retry_fields_reads_with_the_old_fixed_values() {
        let recorded = serde_json::json!({
            "modelTimeout": {"secs": 300, "nanos": 0}, "modelAttempts": 5,
            "toolTimeout": {"secs": 300, "nanos": 0}, "toolAttempts": 3,
            "heartbeatTimeout": {"secs": 30, "nanos": 0},
            "commitTimeout": {"secs": 30, "nanos": 0},
        });
        let policy: ActivityPolicy = serde_json::from_value(recorded).unwrap();
        assert_eq!(policy, ActivityPolicy::default());
        assert_eq!(policy.commit_attempts, 10);
        assert_eq!(policy.retry_initial_interval, Duration::from_millis(200));
        assert_eq!(policy.retry_maximum_interval, Duration::from_secs(10));
    }

    /// Local sub-agent calls with these ids, in this order.
    pub(crate) fn local_calls(ids: &[&str]) -> SubAgentCalls {
        ids.iter()
            .map(|id| SubAgentCall {
                tool_call_id: (*id).to_owned(),
                transport: SubAgentTransport::Local,
            })
            .collect()
    }

    #[test]
    fn a_plan_of_tools_and_local_sub_agents_keeps_the_shape_histories_recorded() {
        let plan = |tool_call_ids: &[&str], sub_agent_call_ids: &[&str]| StepPlan::RunTools {
            tool_call_ids: tool_call_ids.iter().map(|id| (*id).to_owned()).collect(),
            sub_agents: local_calls(sub_agent_call_ids),
            then_suspend: true,
            then_finish: false,
        };
        // As recorded in tests/fixtures/histories, and as a plan with sub-agents was written.
        let tools_only =
            r#"{"kind":"run_tools","toolCallIds":["c0"],"thenSuspend":true,"thenFinish":false}"#;
        let with_children = r#"{"kind":"run_tools","toolCallIds":["c0"],"subAgentCallIds":["c1","c2"],"thenSuspend":true,"thenFinish":false}"#;
        for (recorded, planned) in [
            (tools_only, plan(&["c0"], &[])),
            (with_children, plan(&["c0"], &["c1", "c2"])),
        ] {
            assert_eq!(serde_json::to_string(&planned).unwrap(), recorded);
            assert_eq!(serde_json::from_str::<StepPlan>(recorded).unwrap(), planned);
        }
        let StepPlan::RunTools { sub_agents, .. } = plan(&[], &["c1", "c2"]) else {
            unreachable!("a plan of tools")
        };
        let ids: Vec<String> = sub_agents
            .into_calls()
            .map(|call| {
                assert_eq!(call.transport, SubAgentTransport::Local);
                call.tool_call_id
            })
            .collect();
        assert_eq!(ids, ["c1", "c2"]);
        // Fields absent from plans recorded before they existed read as their defaults.
        let oldest: StepPlan =
            serde_json::from_str(r#"{"kind":"run_tools","toolCallIds":["c0"]}"#).unwrap();
        assert_eq!(
            oldest,
            StepPlan::RunTools {
                tool_call_ids: vec!["c0".to_owned()],
                sub_agents: SubAgentCalls::default(),
                then_suspend: false,
                then_finish: false,
            }
        );
    }
}
