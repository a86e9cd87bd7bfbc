//! How each tool call of a turn is carried out (its route), and what the model step leaves for
//! the workflow once the inline calls have run. No I/O.

use crate::io::{SubAgentCall, SubAgentCalls};
use baton_core::{
    Agent, agent::AgentTool, message::ToolCall, subagent::SubAgentTransport, tool::ToolExecution,
};

/// How a call of one tool is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// Inside the model step: an `.inline()` tool, or an unknown one (only its error is
    /// recorded).
    Inline,
    /// As an `execute_tool` activity of its own.
    Activity,
    /// Not run by the step: it waits for a client tool's result or a person's approval.
    Awaited,
    /// Another agent, run by its transport (a local one as a child workflow) beside the step's
    /// tool activities. The transport is the sub-agent's, as declared.
    SubAgent(SubAgentTransport),
}

/// How `call` is carried out. A call that would wait (for a client or a person) but whose input
/// does not match the tool's schema is not awaited: it runs inline, where its input error is
/// recorded for the model to correct, and nobody is asked to handle garbage.
pub(crate) fn route(agent: &Agent, call: &ToolCall) -> Route {
    match agent.any_tool(&call.name) {
        Some(AgentTool::Client(tool)) if tool.check_input(&call.arguments).is_ok() => {
            Route::Awaited
        }
        Some(AgentTool::Client(_)) => Route::Inline,
        Some(AgentTool::SubAgent(sub_agent)) => Route::SubAgent(sub_agent.transport()),
        Some(AgentTool::Server(tool))
            if tool.requires_approval() && tool.check_input(&call.arguments).is_ok() =>
        {
            Route::Awaited
        }
        Some(AgentTool::Server(tool)) if tool.execution() == ToolExecution::Activity => {
            Route::Activity
        }
        Some(AgentTool::Server(_)) | None => Route::Inline,
    }
}

/// Whether a successful call of `tool_name` ends the run (a server tool marked so).
pub(crate) fn finishes_run(agent: &Agent, tool_name: &str) -> bool {
    matches!(agent.any_tool(tool_name), Some(AgentTool::Server(tool)) if tool.finishes_run())
}

/// The tool calls of one assistant turn, sorted by how they are carried out (each list in call
/// order).
#[derive(Debug)]
pub(crate) struct SortedCalls<'a> {
    pub(crate) inline: Vec<&'a ToolCall>,
    pub(crate) activities: Vec<&'a ToolCall>,
    pub(crate) awaited: Vec<&'a ToolCall>,
    /// With the transport each takes.
    pub(crate) sub_agents: Vec<(&'a ToolCall, SubAgentTransport)>,
    /// Some call's success would end the run.
    finishing: bool,
}

/// What the model step does once the inline calls of its turn have run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AfterInline {
    /// The turn is the run's answer (no calls), or a call ends the run: `complete_run`.
    Complete,
    /// Every call has run: commit the step here and go on.
    Commit,
    /// Commit the step and suspend the run on the awaited calls.
    Suspend,
    /// Leave these calls to `execute_tool` activities and these sub-agent calls to their
    /// transports, then suspend or complete as flagged.
    RunTools {
        tool_call_ids: Vec<String>,
        sub_agents: SubAgentCalls,
        then_suspend: bool,
        then_finish: bool,
    },
}

impl<'a> SortedCalls<'a> {
    pub(crate) fn new(agent: &Agent, tool_calls: &'a [ToolCall]) -> Self {
        let mut sorted = Self {
            inline: Vec::new(),
            activities: Vec::new(),
            awaited: Vec::new(),
            sub_agents: Vec::new(),
            finishing: false,
        };
        for call in tool_calls {
            match route(agent, call) {
                Route::Inline => sorted.inline.push(call),
                Route::Activity => sorted.activities.push(call),
                Route::Awaited => sorted.awaited.push(call),
                Route::SubAgent(transport) => sorted.sub_agents.push((call, transport)),
            }
            sorted.finishing |= finishes_run(agent, &call.name);
        }
        sorted
    }

    /// What is left once the inline calls have run.
    pub(crate) fn after_inline(&self) -> AfterInline {
        let no_calls =
            self.inline.is_empty() && self.activities.is_empty() && self.sub_agents.is_empty();
        if no_calls && self.awaited.is_empty() {
            return AfterInline::Complete;
        }
        // A step that waits for answers goes back to the model with them, finishing tool or not.
        let then_finish = self.awaited.is_empty() && self.finishing;
        if !self.activities.is_empty() || !self.sub_agents.is_empty() {
            let sub_agents = self
                .sub_agents
                .iter()
                .map(|(call, transport)| SubAgentCall {
                    tool_call_id: call.id.clone(),
                    transport: *transport,
                });
            return AfterInline::RunTools {
                tool_call_ids: self.activities.iter().map(|call| call.id.clone()).collect(),
                sub_agents: sub_agents.collect(),
                then_suspend: !self.awaited.is_empty(),
                then_finish,
            };
        }
        if !self.awaited.is_empty() {
            return AfterInline::Suspend;
        }
        if then_finish {
            return AfterInline::Complete;
        }
        AfterInline::Commit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        io::tests::local_calls,
        plan::tests::{calls, test_agent},
    };
    use baton_core::{ScriptedModel, tool::ClientTool};
    use serde_json::json;

    fn run_tools(ids: &[&str], then_suspend: bool, then_finish: bool) -> AfterInline {
        run_tools_and_sub_agents(ids, &[], then_suspend, then_finish)
    }

    fn run_tools_and_sub_agents(
        ids: &[&str],
        sub_agent_ids: &[&str],
        then_suspend: bool,
        then_finish: bool,
    ) -> AfterInline {
        AfterInline::RunTools {
            tool_call_ids: ids.iter().map(|id| (*id).to_owned()).collect(),
            sub_agents: local_calls(sub_agent_ids),
            then_suspend,
            then_finish,
        }
    }

    #[test]
    fn calls_are_sorted_by_how_they_run_and_the_step_says_what_is_left() {
        let agent = test_agent(true);
        // (calls, each call's list: Inline, Activity or aWaited, what is left after the inline
        // calls)
        let cases = [
            (&[][..], "", AfterInline::Complete),
            (&["add"], "I", AfterInline::Commit),
            (&["nope"], "I", AfterInline::Commit),
            (&["add", "done"], "II", AfterInline::Complete),
            (&["lookup", "add"], "AI", run_tools(&["c0"], false, false)),
            (&["add", "publish"], "IA", run_tools(&["c1"], false, true)),
            // A step that waits for answers goes back to the model, finishing tool or not.
            (&["ask_user", "done"], "WI", AfterInline::Suspend),
            (
                &["lookup", "deploy", "nope"],
                "AWI",
                run_tools(&["c0"], true, false),
            ),
            (
                &["publish", "pick", "lookup"],
                "AWA",
                run_tools(&["c0", "c2"], true, false),
            ),
            (
                &["subagent__helper", "add"],
                "SI",
                run_tools_and_sub_agents(&[], &["c0"], false, false),
            ),
            (
                &["lookup", "subagent__helper", "ask_user"],
                "ASW",
                run_tools_and_sub_agents(&["c0"], &["c1"], true, false),
            ),
        ];
        for (called, lists, left) in cases {
            let tool_calls = calls(called);
            let sorted = SortedCalls::new(&agent, &tool_calls);
            let list_of = |call: &ToolCall| {
                let holds = |list: &[&ToolCall]| list.iter().any(|held| held.id == call.id);
                match (
                    holds(&sorted.inline),
                    holds(&sorted.activities),
                    holds(&sorted.awaited),
                    sorted.sub_agents.iter().any(|(held, _)| held.id == call.id),
                ) {
                    (true, false, false, false) => 'I',
                    (false, true, false, false) => 'A',
                    (false, false, true, false) => 'W',
                    (false, false, false, true) => 'S',
                    _ => '?',
                }
            };
            let found: String = tool_calls.iter().map(list_of).collect();
            assert_eq!(found, lists, "lists of {called:?}");
            // Each list keeps the model's order.
            for list in [&sorted.inline, &sorted.activities, &sorted.awaited] {
                assert!(
                    list.is_sorted_by_key(|call| &call.id),
                    "order of {called:?}"
                );
            }
            assert_eq!(sorted.after_inline(), left, "after {called:?}");
        }
        assert!(finishes_run(&agent, "publish") && finishes_run(&agent, "done"));
        assert!(!finishes_run(&agent, "lookup") && !finishes_run(&agent, "ask_user"));
        assert!(!finishes_run(&agent, "nope"));
        let call = |name: &str, arguments| ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments,
            provider_id: None,
        };
        assert_eq!(route(&agent, &call("deploy", json!({}))), Route::Awaited);
        // A sub-agent call takes the transport its sub-agent declares.
        assert_eq!(
            route(&agent, &call("subagent__helper", json!({}))),
            Route::SubAgent(SubAgentTransport::Local)
        );
        // A call whose input does not match the schema is not awaited: its error is recorded.
        let strict = ClientTool::new(
            "strict",
            "a client tool",
            json!({"type": "object", "required": ["q"]}),
        )
        .expect("valid schema");
        let agent = Agent::builder("strict")
            .model(ScriptedModel::default())
            .client_tool(strict)
            .build()
            .unwrap();
        assert_eq!(
            route(&agent, &call("strict", json!({"q": 1}))),
            Route::Awaited
        );
        assert_eq!(route(&agent, &call("strict", json!({}))), Route::Inline);
    }
}
