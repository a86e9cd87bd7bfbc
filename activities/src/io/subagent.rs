//! A sub-agent call's payloads: the calls of a step by transport, a remote child's follow, the
//! start and end of a child and what a child's end asks of its parent.

use super::{
    run::{ActivityPolicy, RunInput},
    step::ToolInput,
};
use baton_core::{store::SessionAddress, subagent::SubAgentTransport};
use serde::{Deserialize, Serialize};

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
    /// Calls whose child is a task of an agent served over A2A, each followed by a
    /// `follow_a2a_sub_agent` activity.
    #[serde(
        rename = "a2aSubAgentCallIds",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    a2a: Vec<String>,
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
            SubAgentTransport::A2a => self.a2a.push(call.tool_call_id),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.local.is_empty() && self.remote.is_empty() && self.a2a.is_empty()
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
        local
            .chain(self.remote.into_iter().map(with(SubAgentTransport::Remote)))
            .chain(self.a2a.into_iter().map(with(SubAgentTransport::A2a)))
    }
}

impl FromIterator<SubAgentCall> for SubAgentCalls {
    fn from_iter<I: IntoIterator<Item = SubAgentCall>>(calls: I) -> Self {
        let mut sorted = Self::default();
        calls.into_iter().for_each(|call| sorted.push(call));
        sorted
    }
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
