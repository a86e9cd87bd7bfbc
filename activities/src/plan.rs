//! The decisions of a step, apart from its I/O: how each tool call is carried out, what the
//! model step leaves for the workflow, what a suspension awaits and until when, and how a resume
//! drains each awaited call. No Redis, no clock, no async: the activities read what they need,
//! ask these functions, and write the answer.
//!
//! The routes of calls and what a step leaves after its inline calls are in `route.rs`.

mod route;
pub(crate) use route::{AfterInline, SortedCalls, finishes_run};

use baton_core::{
    Agent, ToolError,
    agent::AgentTool,
    message::{ToolCall, ToolOutcome},
    store::{self, Answer, PendingAsk, PendingCall, PendingKind, StoredAnswer},
    tool::{
        ask::{Asked, PersonAnswer, QUESTION_TOOL, new_question_id, question_input},
        codes,
    },
};
use std::collections::HashMap;

/// Where a suspension is in time: the step it suspends and now (ms since the epoch).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SuspendAt<'a> {
    pub(crate) run_id: &'a str,
    pub(crate) step: u32,
    pub(crate) now: u64,
}

/// The pending entries of the awaited calls of a step that suspends: a client tool waits for its
/// result, any other call for its approval; each until now plus its answer timeout.
///
/// A server tool's call that stopped to ask a person (in `asks`, by call id) waits for the
/// person's answer as a client call would, until now plus its question's window; its entry
/// shows the question and keeps how the call goes on.
pub(crate) fn pending_calls(
    agent: &Agent,
    at: SuspendAt<'_>,
    awaited: &[&ToolCall],
    asks: &HashMap<String, Asked>,
) -> Vec<PendingCall> {
    awaited
        .iter()
        .map(|call| {
            if let Some(asked) = asks.get(&call.id) {
                return asking_call(agent, at, call, asked.clone());
            }
            let (kind, approval_id) = match agent.any_tool(&call.name) {
                Some(AgentTool::Client(_)) => (PendingKind::Client, None),
                Some(AgentTool::SubAgent(sub_agent)) => {
                    (PendingKind::SubAgent(sub_agent.transport()), None)
                }
                _ => (
                    PendingKind::Approval,
                    Some(store::approval_id(at.run_id, &call.id)),
                ),
            };
            let deadline_at = match kind {
                PendingKind::SubAgent(_) => store::NO_DEADLINE,
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
                asked: None,
            }
        })
        .collect()
}

/// The pending entry of the question `asked` that `call` stopped on: a client call named
/// `question` under a question id of its own, whose input is the question as a person sees it.
fn asking_call(agent: &Agent, at: SuspendAt<'_>, call: &ToolCall, asked: Asked) -> PendingCall {
    let window = asked
        .window_ms
        .unwrap_or(agent.answer_timeout(&call.name).as_millis() as u64);
    let deadline_at = at.now + window;
    PendingCall {
        tool_call_id: new_question_id(),
        tool_name: QUESTION_TOOL.to_owned(),
        input: question_input(&asked.message, &call.name, &call.id, deadline_at),
        kind: PendingKind::Client,
        step: at.step,
        deadline_at,
        completed_retention_ms: agent.completed_retention().as_millis() as u64,
        approval_id: None,
        awaited_since: at.now,
        asked: Some(PendingAsk {
            asked,
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments: call.arguments.clone(),
        }),
    }
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
        .filter(|call| !call.kind.is_sub_agent())
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
        .filter(|call| open.contains(&call.tool_call_id) && !call.kind.is_sub_agent())
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
    /// A tool's call that asked a person: it goes on now with the answer.
    Continue {
        arguments: serde_json::Value,
        continuation: serde_json::Value,
        answer: PersonAnswer,
    },
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
    let outcome = match (answer, resumption, &call.asked) {
        (_, Resumption::Stopped, _) => error(
            codes::NOT_EXECUTED,
            "the run was stopped before this call was carried on".to_owned(),
        ),
        (
            Some(StoredAnswer {
                answer: Answer::Outcome { outcome },
                ..
            }),
            _,
            Some(ask),
        ) => went_on(ask, &outcome),
        (None, Resumption::CarriedOn, Some(_)) => error(
            codes::QUESTION_TIMED_OUT,
            format!(
                "{} asked a person, and nobody answered before its deadline",
                call.asked
                    .as_ref()
                    .map_or(&call.tool_name, |ask| &ask.tool_name)
            ),
        ),
        (
            Some(StoredAnswer {
                answer: Answer::Outcome { outcome },
                ..
            }),
            _,
            None,
        ) => DrainedOutcome::Known(outcome),
        (
            Some(StoredAnswer {
                answer: Answer::Approval(decision),
                ..
            }),
            _,
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
        (None, Resumption::Abandoned, _) => error(
            codes::CLIENT_TOOL_ABANDONED,
            "the user moved on with a new message before answering".to_owned(),
        ),
        (None, Resumption::CarriedOn, None) => error(
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

/// How a tool's call that asked `ask` goes on from what was submitted: a result is the person's
/// answer, an error declines (as for a held question); an answer that does not match the
/// question's schema (the submit refused any, this is its twin for an entry stored otherwise)
/// is the model's `tool_failed`.
fn went_on(ask: &PendingAsk, submitted: &ToolOutcome) -> DrainedOutcome {
    let answer = PersonAnswer::from_outcome(submitted);
    if let Some(mismatch) = answer.mismatch(&ask.asked.schema) {
        return DrainedOutcome::Known(ToolOutcome::Error(ToolError::new(
            codes::TOOL_FAILED,
            format!("the answer does not match the question's schema: {mismatch}"),
        )));
    }
    DrainedOutcome::Continue {
        arguments: ask.arguments.clone(),
        continuation: ask.asked.continuation.clone(),
        answer,
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
pub(crate) mod tests {
    use super::*;
    use Resumption::{Abandoned, CarriedOn, Stopped};
    use baton_core::{
        ScriptedModel,
        store::ApprovalDecision,
        subagent::SubAgentTransport,
        tool::{ClientTool, tool},
    };
    use serde_json::{Value, json};
    use std::time::Duration;

    /// The body of every test server tool: only the routes matter here.
    fn nothing(_: Value) -> std::future::Ready<Result<Value, String>> {
        std::future::ready(Ok(Value::Null))
    }

    pub(crate) fn client_tool(name: &str) -> ClientTool {
        ClientTool::new(name, "a client tool", json!({"type": "object"})).expect("valid schema")
    }

    /// `lookup` runs as an activity, `add` inline, `done` inline and ends the run, `publish` as
    /// an activity and ends the run, `deploy` waits for approval, `ask_user` (5 s) and `pick`
    /// (the agent's 60 s) are client tools.
    pub(crate) fn test_agent(resume_on_deadline: bool) -> Agent {
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

    pub(crate) fn calls(names: &[&str]) -> Vec<ToolCall> {
        names
            .iter()
            .enumerate()
            .map(|(index, name)| ToolCall {
                id: format!("c{index}"),
                name: (*name).to_owned(),
                arguments: json!({"n": index}),
                provider_id: None,
            })
            .collect()
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
        let pending = pending_calls(&agent, at, &awaited, &HashMap::new());

        let kinds: Vec<PendingKind> = pending.iter().map(|call| call.kind).collect();
        assert_eq!(
            kinds,
            [
                PendingKind::Client,
                PendingKind::Client,
                PendingKind::Approval,
                PendingKind::SubAgent(SubAgentTransport::Local)
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
            asked: None,
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
            asked: None,
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
