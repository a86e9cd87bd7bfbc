//! The decisions of a step, apart from its I/O: how each tool call is carried out, what the
//! model step leaves for the workflow, what a suspension awaits and until when, and how a resume
//! drains each awaited call. No Redis, no clock, no async: the activities read what they need,
//! ask these functions, and write the answer.

use baton_core::{
    Agent, ToolError,
    agent::AgentTool,
    message::{ToolCall, ToolOutcome},
    store::{self, Answer, PendingCall, PendingKind, StoredAnswer},
    tool::{ToolExecution, codes},
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
    /// Another agent, run as a child workflow beside the step's tool activities.
    SubAgent,
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
        Some(AgentTool::SubAgent(_)) => Route::SubAgent,
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
    pub(crate) sub_agents: Vec<&'a ToolCall>,
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
    /// Leave these calls to `execute_tool` activities, then suspend or complete as flagged.
    RunTools {
        tool_call_ids: Vec<String>,
        sub_agent_call_ids: Vec<String>,
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
                Route::SubAgent => sorted.sub_agents.push(call),
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
            let ids = |calls: &[&ToolCall]| calls.iter().map(|call| call.id.clone()).collect();
            return AfterInline::RunTools {
                tool_call_ids: ids(&self.activities),
                sub_agent_call_ids: ids(&self.sub_agents),
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

/// Where a suspension is in time: the step it suspends and now (ms since the epoch).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SuspendAt<'a> {
    pub(crate) run_id: &'a str,
    pub(crate) step: u32,
    pub(crate) now: u64,
}

/// The pending entries of the awaited calls of a step that suspends: a client tool waits for its
/// result, any other call for its approval; each until now plus its answer timeout.
pub(crate) fn pending_calls(
    agent: &Agent,
    at: SuspendAt<'_>,
    awaited: &[&ToolCall],
) -> Vec<PendingCall> {
    awaited
        .iter()
        .map(|call| {
            let (kind, approval_id) = match agent.any_tool(&call.name) {
                Some(AgentTool::Client(_)) => (PendingKind::Client, None),
                Some(AgentTool::SubAgent(_)) => (PendingKind::SubAgent, None),
                _ => (
                    PendingKind::Approval,
                    Some(store::approval_id(at.run_id, &call.id)),
                ),
            };
            let deadline_at = match kind {
                PendingKind::SubAgent => store::NO_DEADLINE,
                _ => at.now + agent.answer_timeout(&call.name).as_millis() as u64,
            };
            PendingCall {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                input: call.arguments.clone(),
                kind,
                step: at.step,
                deadline_at,
                completed_retention_ms: agent.completed_retention().as_millis() as u64,
                approval_id,
                awaited_since: at.now,
            }
        })
        .collect()
}

/// When a deadline workflow should wake for these pending calls: the earliest deadline, if the
/// agent resumes sessions by itself. A sub-agent call has no deadline of its own: its child
/// answers it when it ends.
pub(crate) fn wake_at(agent: &Agent, pending: &[PendingCall]) -> Option<u64> {
    if !agent.resume_on_deadline() {
        return None;
    }
    pending
        .iter()
        .filter(|call| call.kind != PendingKind::SubAgent)
        .map(|call| call.deadline_at)
        .min()
}

/// When a deadline workflow looks again at a batch whose `open` calls are still unanswered: at
/// their earliest deadline, and never at or before `now` (so it cannot spin). `None` when only
/// sub-agent calls are open: the last child to end resumes the session, not a deadline.
pub(crate) fn next_look<'a>(
    pending: impl IntoIterator<Item = &'a PendingCall>,
    open: &[String],
    now: u64,
) -> Option<u64> {
    let earliest = pending
        .into_iter()
        .filter(|call| open.contains(&call.tool_call_id) && call.kind != PendingKind::SubAgent)
        .map(|call| call.deadline_at)
        .min()?;
    Some(earliest.max(now + 1))
}

/// How a resume ends the run that awaited the calls it drains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resumption {
    /// The calls were answered or their deadlines lapsed: the run carries on.
    CarriedOn,
    /// The user moved on with a new message before answering.
    Abandoned,
    /// The run was interrupted or aborted: none of its calls was carried on.
    Stopped,
}

impl Resumption {
    /// From the session's state: whether a stop is recorded, and whether the resume abandoned
    /// the open calls. A stop wins.
    pub(crate) fn of(stopped: bool, abandon_pending: bool) -> Self {
        if stopped {
            Self::Stopped
        } else if abandon_pending {
            Self::Abandoned
        } else {
            Self::CarriedOn
        }
    }
}

/// What a drained call becomes in the log.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DrainedOutcome {
    /// Known without running anything.
    Known(ToolOutcome),
    /// An approved call: the tool runs now with these arguments (the approver's, else the
    /// model's).
    RunApproved(serde_json::Value),
}

/// How a resume drains one awaited call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Drain {
    pub(crate) outcome: DrainedOutcome,
    /// How long the client took: to its answer, or to the deadline that lapsed; nothing when the
    /// call was abandoned or stopped unanswered.
    pub(crate) wait_ms: u64,
    /// Until when a re-submit still answers `already_completed`.
    pub(crate) marker_expiry: u64,
}

/// How a resume drains `call`, given its answer (if any), how the run ends and now.
pub(crate) fn drain(
    call: &PendingCall,
    answer: Option<StoredAnswer>,
    resumption: Resumption,
    now: u64,
) -> Drain {
    let waited_until = match (&answer, resumption) {
        (Some(answer), _) => answer.submitted_at,
        (None, Resumption::CarriedOn) => call.deadline_at.min(now),
        (None, Resumption::Abandoned | Resumption::Stopped) => call.awaited_since,
    };
    let wait_ms = match call.awaited_since {
        0 => 0,
        since => waited_until.saturating_sub(since),
    };
    let error = |code: &str, message: String| {
        DrainedOutcome::Known(ToolOutcome::Error(ToolError::new(code, message)))
    };
    let outcome = match (answer, resumption) {
        (_, Resumption::Stopped) => error(
            codes::NOT_EXECUTED,
            "the run was stopped before this call was carried on".to_owned(),
        ),
        (
            Some(StoredAnswer {
                answer: Answer::Outcome { outcome },
                ..
            }),
            _,
        ) => DrainedOutcome::Known(outcome),
        (
            Some(StoredAnswer {
                answer: Answer::Approval(decision),
                ..
            }),
            _,
        ) => {
            if decision.approved {
                DrainedOutcome::RunApproved(
                    decision.arguments.unwrap_or_else(|| call.input.clone()),
                )
            } else {
                error(
                    codes::TOOL_DENIED,
                    decision
                        .reason
                        .unwrap_or_else(|| "the call was not approved".to_owned()),
                )
            }
        }
        (None, Resumption::Abandoned) => error(
            codes::CLIENT_TOOL_ABANDONED,
            "the user moved on with a new message before answering".to_owned(),
        ),
        (None, Resumption::CarriedOn) => error(
            codes::CLIENT_TOOL_TIMEOUT,
            format!("no answer to {} before its deadline", call.tool_name),
        ),
    };
    Drain {
        outcome,
        wait_ms,
        marker_expiry: now + call.completed_retention_ms,
    }
}

/// The run's output from the result of a call that ends it: a string as it is, anything else as
/// JSON text.
pub(crate) fn finishing_output(result: serde_json::Value) -> String {
    match result {
        serde_json::Value::String(text) => text,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Resumption::{Abandoned, CarriedOn, Stopped};
    use baton_core::{
        ScriptedModel,
        store::ApprovalDecision,
        tool::{ClientTool, tool},
    };
    use serde_json::{Value, json};
    use std::time::Duration;

    /// The body of every test server tool: only the routes matter here.
    fn nothing(_: Value) -> std::future::Ready<Result<Value, String>> {
        std::future::ready(Ok(Value::Null))
    }

    fn client_tool(name: &str) -> ClientTool {
        ClientTool::new(name, "a client tool", json!({"type": "object"})).expect("valid schema")
    }

    /// `lookup` runs as an activity, `add` inline, `done` inline and ends the run, `publish` as
    /// an activity and ends the run, `deploy` waits for approval, `ask_user` (5 s) and `pick`
    /// (the agent's 60 s) are client tools.
    fn test_agent(resume_on_deadline: bool) -> Agent {
        Agent::builder("planner")
            .model(ScriptedModel::default())
            .tool(tool("lookup", "a test tool", nothing))
            .tool(tool("add", "a test tool", nothing).inline())
            .tool(tool("done", "a test tool", nothing).inline().finishes_run())
            .tool(tool("publish", "a test tool", nothing).finishes_run())
            .tool(tool("deploy", "a test tool", nothing).requires_approval())
            .client_tool(client_tool("ask_user").timeout(Duration::from_secs(5)))
            .client_tool(client_tool("pick"))
            .sub_agent("helper", "helps")
            .client_tool_timeout(Duration::from_secs(60))
            .completed_retention(Duration::from_millis(700))
            .resume_on_deadline(resume_on_deadline)
            .build()
            .expect("a valid agent")
    }

    fn calls(names: &[&str]) -> Vec<ToolCall> {
        names
            .iter()
            .enumerate()
            .map(|(index, name)| ToolCall {
                id: format!("c{index}"),
                name: (*name).to_owned(),
                arguments: json!({"n": index}),
            })
            .collect()
    }

    fn run_tools(ids: &[&str], then_suspend: bool, then_finish: bool) -> AfterInline {
        run_tools_and_sub_agents(ids, &[], then_suspend, then_finish)
    }

    fn run_tools_and_sub_agents(
        ids: &[&str],
        sub_agent_ids: &[&str],
        then_suspend: bool,
        then_finish: bool,
    ) -> AfterInline {
        let owned = |ids: &[&str]| ids.iter().map(|id| (*id).to_owned()).collect();
        AfterInline::RunTools {
            tool_call_ids: owned(ids),
            sub_agent_call_ids: owned(sub_agent_ids),
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
                    holds(&sorted.sub_agents),
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
        };
        assert_eq!(route(&agent, &call("deploy", json!({}))), Route::Awaited);
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

    #[test]
    fn awaited_calls_wait_for_their_kind_of_answer_until_their_own_deadline() {
        let agent = test_agent(true);
        let tool_calls = calls(&["ask_user", "pick", "deploy", "subagent__helper"]);
        let awaited: Vec<&ToolCall> = tool_calls.iter().collect();
        let at = SuspendAt {
            run_id: "run-1",
            step: 4,
            now: 1_000,
        };
        let pending = pending_calls(&agent, at, &awaited);

        let kinds: Vec<PendingKind> = pending.iter().map(|call| call.kind).collect();
        assert_eq!(
            kinds,
            [
                PendingKind::Client,
                PendingKind::Client,
                PendingKind::Approval,
                PendingKind::SubAgent
            ]
        );
        let deadlines: Vec<u64> = pending.iter().map(|call| call.deadline_at).collect();
        assert_eq!(deadlines, [6_000, 61_000, 61_000, store::NO_DEADLINE]);
        let approval_ids: Vec<Option<&str>> = pending
            .iter()
            .map(|call| call.approval_id.as_deref())
            .collect();
        assert_eq!(approval_ids, [None, None, Some("run-1::c2"), None]);
        assert!(pending.iter().all(|call| call.step == 4
            && call.awaited_since == 1_000
            && call.completed_retention_ms == 700));
        assert_eq!(pending[1].input, json!({"n": 1}));
        assert_eq!(pending[2].tool_name, "deploy");

        assert_eq!(wake_at(&agent, &pending), Some(6_000));
        assert_eq!(wake_at(&test_agent(false), &pending), None);
        assert_eq!(wake_at(&agent, &[]), None);

        // A deadline workflow looks again at the earliest deadline of the calls still open (here
        // the answered `ask_user`, c0, no longer counts), but never at or before now.
        let open = |ids: &[&str]| ids.iter().map(|id| (*id).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            next_look(&pending, &open(&["c1", "c2"]), 7_000),
            Some(61_000)
        );
        assert_eq!(
            next_look(&pending, &open(&["c0", "c2"]), 2_000),
            Some(6_000)
        );
        assert_eq!(
            next_look(&pending, &open(&["c0", "c3"]), 9_000),
            Some(9_001)
        );
        // Only a sub-agent call open: its child resumes the session when it ends, no deadline.
        assert_eq!(next_look(&pending, &open(&["c3"]), 9_000), None);
        assert_eq!(next_look(&pending, &open(&["gone"]), 9_000), None);
    }

    #[test]
    fn a_drain_turns_each_awaited_call_into_its_answer_or_the_reason_it_has_none() {
        let call = PendingCall {
            tool_call_id: "c0".into(),
            tool_name: "ask_user".into(),
            input: json!({"q": "?"}),
            kind: PendingKind::Client,
            step: 2,
            deadline_at: 5_000,
            completed_retention_ms: 100,
            approval_id: None,
            awaited_since: 1_000,
        };
        let answered = |answer: Answer| {
            Some(StoredAnswer {
                answer,
                submitted_at: 3_000,
            })
        };
        let result = || {
            answered(Answer::Outcome {
                outcome: ToolOutcome::Result(json!(42)),
            })
        };
        let decision = |approved: bool, reason: Option<&str>, arguments: Option<Value>| {
            answered(Answer::Approval(ApprovalDecision {
                approved,
                reason: reason.map(str::to_owned),
                arguments,
            }))
        };
        let error = |code: &str, message: &str| {
            DrainedOutcome::Known(ToolOutcome::Error(ToolError::new(code, message)))
        };
        // (answer, resumption, outcome, wait)
        let cases = [
            (
                result(),
                CarriedOn,
                DrainedOutcome::Known(ToolOutcome::Result(json!(42))),
                2_000,
            ),
            (
                result(),
                Abandoned,
                DrainedOutcome::Known(ToolOutcome::Result(json!(42))),
                2_000,
            ),
            (
                None,
                CarriedOn,
                error(
                    codes::CLIENT_TOOL_TIMEOUT,
                    "no answer to ask_user before its deadline",
                ),
                4_000,
            ),
            (
                None,
                Abandoned,
                error(
                    codes::CLIENT_TOOL_ABANDONED,
                    "the user moved on with a new message before answering",
                ),
                0,
            ),
            (
                result(),
                Stopped,
                error(
                    codes::NOT_EXECUTED,
                    "the run was stopped before this call was carried on",
                ),
                2_000,
            ),
            (
                None,
                Stopped,
                error(
                    codes::NOT_EXECUTED,
                    "the run was stopped before this call was carried on",
                ),
                0,
            ),
            (
                decision(true, None, Some(json!({"q": "edited"}))),
                CarriedOn,
                DrainedOutcome::RunApproved(json!({"q": "edited"})),
                2_000,
            ),
            (
                decision(true, None, None),
                CarriedOn,
                DrainedOutcome::RunApproved(json!({"q": "?"})),
                2_000,
            ),
            (
                decision(false, Some("too risky"), None),
                CarriedOn,
                error(codes::TOOL_DENIED, "too risky"),
                2_000,
            ),
            (
                decision(false, None, None),
                CarriedOn,
                error(codes::TOOL_DENIED, "the call was not approved"),
                2_000,
            ),
        ];
        for (index, (answer, resumption, outcome, wait_ms)) in cases.into_iter().enumerate() {
            let drained = drain(&call, answer, resumption, 9_000);
            assert_eq!(drained.outcome, outcome, "case {index}");
            assert_eq!(drained.wait_ms, wait_ms, "case {index}");
            assert_eq!(drained.marker_expiry, 9_100, "case {index}");
        }

        // A deadline still ahead (the resume claimed early) counts the wait up to now, and an
        // entry written before waits were recorded counts none.
        assert_eq!(drain(&call, None, CarriedOn, 2_500).wait_ms, 1_500);
        let unstamped = PendingCall {
            awaited_since: 0,
            ..call.clone()
        };
        assert_eq!(drain(&unstamped, result(), CarriedOn, 9_000).wait_ms, 0);

        assert_eq!(Resumption::of(true, true), Stopped);
        assert_eq!(Resumption::of(false, true), Abandoned);
        assert_eq!(Resumption::of(false, false), CarriedOn);
    }

    #[test]
    fn a_finishing_result_is_the_output_as_text() {
        assert_eq!(finishing_output(json!("all done")), "all done");
        assert_eq!(finishing_output(json!({"ok": true})), r#"{"ok":true}"#);
        assert_eq!(finishing_output(json!(3)), "3");
    }
}
