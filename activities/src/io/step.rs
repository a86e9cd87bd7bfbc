//! A step's payloads: the input of its activities, the plan the model step leaves and a tool's
//! input.

use super::{run::SuspendedRun, subagent::SubAgentCalls};
use baton_core::store::{RunRef, SessionAddress, StepRef};
use serde::{Deserialize, Serialize};

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

/// Input of `execute_tool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInput {
    pub step: StepInput,
    pub tool_call_id: String,
}

/// Output of `execute_tool` when its call stopped to ask a person instead of answering (an MCP
/// server's `input_required`): the step suspends on it. A call that answered returns nothing
/// (`null`, as the activity did before it could ask), so histories of earlier runs replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAsked {
    pub tool_call_id: String,
}
