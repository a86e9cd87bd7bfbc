//! Unit tests of the chunk mapping (`mapper.rs`).

use super::mapper::*;
use baton_core::{
    Agent,
    chunk::{ChunkKind, EndStatus, StreamChunk},
    message::{ToolError, codes},
};
use baton_core::{
    ScriptedModel,
    chunk::{ChunkHeader, RunError},
    tool::{ClientTool, RenderHint, tool},
    usage::UsageRollup,
};
use serde_json::{Value, json};
use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

/// The agent of the chat unit tests: a server tool `add`, an approval-gated `send` and a client
/// tool `ask` rendered as a form.
pub(super) fn agent() -> Arc<Agent> {
    let ask = ClientTool::new("ask", "asks", json!({"type": "object"}))
        .unwrap()
        .render(RenderHint::Elicitation);
    Arc::new(
        Agent::builder("a")
            .model(ScriptedModel::default())
            .tool(tool("add", "adds", |_: Value| async { Ok::<_, String>(1) }))
            .tool(
                tool("send", "sends", |_: Value| async { Ok::<_, String>(1) }).requires_approval(),
            )
            .client_tool(ask)
            .build()
            .unwrap(),
    )
}

fn chunk(sequence: u64, agent_id: &str, kind: ChunkKind) -> StreamChunk {
    StreamChunk {
        sequence,
        header: ChunkHeader {
            stream_id: "st".into(),
            session_id: "s".into(),
            agent_id: agent_id.into(),
            run_id: "r".into(),
            timestamp: 0,
        },
        kind,
        remote_source: None,
    }
}

fn start(id: &str, name: &str) -> ChunkKind {
    ChunkKind::ToolStart {
        step: 1,
        tool_call_id: id.into(),
        tool_name: name.into(),
        input: json!({}),
    }
}

fn end(id: &str, name: &str, error: Option<ToolError>) -> ChunkKind {
    ChunkKind::ToolEnd {
        step: 1,
        tool_call_id: id.into(),
        tool_name: name.into(),
        result: error.is_none().then(|| json!(1)),
        error,
    }
}

/// The approval request of the call `c3` of `send`.
fn approval_of_c3() -> ChunkKind {
    ChunkKind::ToolApprovalRequest {
        step: 1,
        tool_call_id: "c3".into(),
        tool_name: "send".into(),
        input: json!({}),
        approval_id: "r::c3".into(),
    }
}

/// Every frame of `kinds`, as JSON.
fn frames(mapper: &mut UiStreamMapper, kinds: Vec<ChunkKind>) -> Vec<Value> {
    kinds
        .into_iter()
        .enumerate()
        .flat_map(|(i, kind)| mapper.map(&chunk(i as u64 + 1, "s", kind)))
        .map(|frame| serde_json::from_str(&frame.to_json()).unwrap())
        .collect()
}

#[test]
fn a_step_keeps_its_text_inside_and_a_suspension_ends_the_message() {
    let mut mapper = UiStreamMapper::new(agent(), "s", HashSet::new());
    let delta = |delta: &str| ChunkKind::TextDelta {
        step: 1,
        delta: delta.into(),
    };
    let out = frames(
        &mut mapper,
        vec![
            ChunkKind::RunStart {
                agent_type: "a".into(),
            },
            ChunkKind::StepStart { step: 1 },
            delta("Let me "),
            delta("ask."),
            start("c1", "ask"),
            start("c2", "add"),
            end("c2", "add", None),
            start("c3", "send"),
            ChunkKind::StepEnd { step: 1 },
            approval_of_c3(),
            ChunkKind::Suspended {
                step: 1,
                tool_call_ids: vec!["c1".into(), "c3".into()],
            },
        ],
    );
    let render = json!({"toolCallId": "c1", "render": {"kind": "elicitation"}});
    assert_eq!(
        out,
        [
            json!({"type": "start-step"}),
            json!({"type": "text-start", "id": "text-1-3"}),
            json!({"type": "text-delta", "id": "text-1-3", "delta": "Let me "}),
            json!({"type": "text-delta", "id": "text-1-3", "delta": "ask."}),
            json!({"type": "text-end", "id": "text-1-3"}),
            json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "ask", "input": {}}),
            json!({"type": "data-render", "id": "render-c1", "data": render}),
            json!({"type": "tool-input-available", "toolCallId": "c2", "toolName": "add", "input": {}, "providerExecuted": true}),
            json!({"type": "tool-output-available", "toolCallId": "c2", "output": 1, "providerExecuted": true}),
            json!({"type": "tool-input-available", "toolCallId": "c3", "toolName": "send", "input": {}}),
            json!({"type": "finish-step"}),
            json!({"type": "tool-approval-request", "approvalId": "r::c3", "toolCallId": "c3"}),
            json!({"type": "finish", "finishReason": "tool-calls", "messageMetadata": {"finishedAt": 0}}),
        ]
    );
    assert!(mapper.is_finished());
    assert!(
        mapper
            .map(&chunk(20, "s", ChunkKind::StepStart { step: 2 }))
            .is_empty()
    );
}

#[test]
fn a_continuation_reports_known_calls_only_and_a_failed_run_is_an_error() {
    let known = HashSet::from(["c3".to_owned(), "c1".to_owned()]);
    let mut mapper = UiStreamMapper::new(agent(), "s", known);
    let denied = ToolError::new(codes::TOOL_DENIED, "no");
    let abandoned = ToolError::new(codes::CLIENT_TOOL_ABANDONED, "gone");
    let mut out = frames(
        &mut mapper,
        vec![
            end("c3", "send", Some(denied)),
            end("c1", "ask", None),
            end("old", "ask", Some(abandoned)),
            ChunkKind::StepStart { step: 2 },
        ],
    );
    let sub = mapper.map(&chunk(9, "child", ChunkKind::StepStart { step: 1 }));
    out.extend(
        sub.iter()
            .map(|f| serde_json::from_str(&f.to_json()).unwrap()),
    );
    out.extend(
        mapper
            .map(&chunk(
                10,
                "s",
                ChunkKind::End {
                    status: EndStatus::Failed,
                    output: None,
                    error: Some(RunError {
                        code: baton_core::ErrorCode::ModelFailed,
                        message: "boom".into(),
                    }),
                    usage: UsageRollup::default(),
                    state: None,
                },
            ))
            .iter()
            .map(|f| serde_json::from_str::<Value>(&f.to_json()).unwrap()),
    );
    assert_eq!(
        out[0],
        json!({"type": "tool-output-denied", "toolCallId": "c3"})
    );
    assert_eq!(
        out[1],
        json!({"type": "tool-output-available", "toolCallId": "c1", "output": 1})
    );
    assert_eq!(out[2], json!({"type": "start-step"}));
    assert_eq!(out[3]["type"], "data-subagent");
    assert_eq!(out[3]["transient"], true);
    assert_eq!(out[4], json!({"type": "finish-step"}));
    assert_eq!(
        out[5],
        json!({"type": "error", "errorText": "model_failed: boom"})
    );
    assert_eq!(out.len(), 6);
}

#[test]
fn a_discarded_attempt_names_its_text_and_the_retry_goes_on_in_the_same_step() {
    let mut mapper = UiStreamMapper::new(agent(), "s", HashSet::new());
    let delta = |delta: &str| ChunkKind::TextDelta {
        step: 1,
        delta: delta.into(),
    };
    let out = frames(
        &mut mapper,
        vec![
            ChunkKind::StepStart { step: 1 },
            delta("first "),
            ChunkKind::StepDiscarded { step: 1 },
            ChunkKind::StepStart { step: 1 },
            delta("second"),
            ChunkKind::StepEnd { step: 1 },
        ],
    );
    assert_eq!(
        out,
        [
            json!({"type": "start-step"}),
            json!({"type": "text-start", "id": "text-1-2"}),
            json!({"type": "text-delta", "id": "text-1-2", "delta": "first "}),
            json!({"type": "text-end", "id": "text-1-2"}),
            json!({"type": "data-step-discarded", "data": {"step": 1, "textIds": ["text-1-2"]}}),
            json!({"type": "text-start", "id": "text-1-5"}),
            json!({"type": "text-delta", "id": "text-1-5", "delta": "second"}),
            json!({"type": "text-end", "id": "text-1-5"}),
            json!({"type": "finish-step"}),
        ]
    );
}

#[test]
fn a_sub_agent_start_is_a_kept_data_part_of_the_parent() {
    let mut mapper = UiStreamMapper::new(agent(), "s", HashSet::new());
    let out = frames(
        &mut mapper,
        vec![ChunkKind::SubagentStart {
            sub_session_id: "child".into(),
            agent_type: "helper".into(),
            tool_call_id: "c9".into(),
        }],
    );
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["type"], "data-baton-subagent-start");
    assert_eq!(out[0]["data"]["subSessionId"], "child");
    assert!(out[0].get("transient").is_none());
}

#[test]
fn a_state_patch_is_a_transient_data_part_carrying_the_operations() {
    let mut mapper = UiStreamMapper::new(agent(), "s", HashSet::new());
    let patch = serde_json::from_value(json!([{"op": "add", "path": "/n", "value": 2}])).unwrap();
    let out = frames(&mut mapper, vec![ChunkKind::StatePatch { step: 1, patch }]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["type"], "data-state-patch");
    assert_eq!(out[0]["transient"], true);
    assert_eq!(out[0]["data"]["agentId"], "s");
    assert_eq!(out[0]["data"]["patch"][0]["path"], "/n");
    assert!(!mapper.is_finished());
}

#[test]
fn a_descendants_client_call_and_approval_are_tool_parts_with_their_owner() {
    let child = Arc::try_unwrap(agent()).unwrap();
    let registry = baton_core::AgentRegistry::new([child]).unwrap();
    let mut mapper =
        UiStreamMapper::new(agent(), "s", HashSet::new()).with_tree(registry, Default::default());
    let chunks = [
        chunk(0, "s", ChunkKind::StepStart { step: 1 }),
        chunk(
            1,
            "s",
            ChunkKind::SubagentStart {
                sub_session_id: "s.k".into(),
                agent_type: "a".into(),
                tool_call_id: "p1".into(),
            },
        ),
        chunk(2, "s.k", start("c1", "ask")),
        chunk(3, "s.k", start("c2", "add")),
        chunk(4, "s.k", start("c3", "send")),
        chunk(5, "s.k", approval_of_c3()),
        chunk(
            6,
            "s.k",
            ChunkKind::Suspended {
                step: 1,
                tool_call_ids: vec!["c1".into(), "c3".into()],
            },
        ),
        chunk(7, "s.k", end("c1", "ask", None)),
    ];
    let out: Vec<Value> = chunks
        .iter()
        .flat_map(|c| mapper.map(c))
        .map(|frame| serde_json::from_str(&frame.to_json()).unwrap())
        .filter(|frame: &Value| frame["type"] != "data-subagent")
        .collect();
    let owner = |id: &str| json!({"toolCallId": id, "agentId": "s.k", "agentType": "a"});
    assert_eq!(out[0]["type"], "start-step");
    assert_eq!(out[1]["type"], "data-baton-subagent-start");
    assert_eq!(
        out[2..],
        [
            json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "ask",
                   "input": {}, "providerMetadata": {"baton": owner("c1")}}),
            json!({"type": "data-subagent-call", "id": "subagent-call-c1", "data": owner("c1")}),
            json!({"type": "data-render", "id": "render-c1",
                   "data": {"toolCallId": "c1", "render": {"kind": "elicitation"}}}),
            json!({"type": "tool-input-available", "toolCallId": "c3", "toolName": "send",
                   "input": {}, "providerMetadata": {"baton": owner("c3")}}),
            json!({"type": "data-subagent-call", "id": "subagent-call-c3", "data": owner("c3")}),
            json!({"type": "tool-approval-request", "approvalId": "r::c3", "toolCallId": "c3"}),
            json!({"type": "tool-output-available", "toolCallId": "c1", "output": 1}),
        ]
    );
    // The child's suspension is not the message's end: the root's is.
    assert!(!mapper.is_finished());
}

/// The response to an answer that resumed a child, not the root: the child's next call opens a
/// step of its own (the root's step ended with its suspension), and the root's suspension closes
/// it, so `ai`'s predicates read the new call as a new step.
#[test]
fn a_descendants_call_after_an_answer_opens_a_step_the_roots_suspension_closes() {
    let child = Arc::try_unwrap(agent()).unwrap();
    let registry = baton_core::AgentRegistry::new([child]).unwrap();
    let types = HashMap::from([("s.k".to_owned(), "a".to_owned())]);
    let mut mapper = UiStreamMapper::new(agent(), "s", HashSet::from(["c1".to_owned()]))
        .with_tree(registry, types);
    let chunks = [
        chunk(10, "s.k", end("c1", "ask", None)),
        chunk(11, "s.k", start("c4", "ask")),
        chunk(
            12,
            "s",
            ChunkKind::Suspended {
                step: 1,
                tool_call_ids: vec!["p1".into()],
            },
        ),
    ];
    let kinds: Vec<String> = chunks
        .iter()
        .flat_map(|c| mapper.map(c))
        .map(|frame| serde_json::from_str::<Value>(&frame.to_json()).unwrap())
        .filter(|frame| frame["type"] != "data-subagent")
        .map(|frame| frame["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "start-step",
            "tool-output-available",
            "tool-input-available",
            "data-subagent-call",
            "data-render",
            "finish-step",
            "finish",
        ]
    );
}

fn reasoning(delta: &str) -> ChunkKind {
    ChunkKind::ReasoningDelta {
        step: 1,
        delta: delta.into(),
    }
}

#[test]
fn reasoning_streams_as_its_own_part_before_the_text() {
    let mut mapper = UiStreamMapper::new(agent(), "s", HashSet::new());
    let out = frames(
        &mut mapper,
        vec![
            ChunkKind::StepStart { step: 1 },
            reasoning("Think "),
            reasoning("first."),
            ChunkKind::TextDelta {
                step: 1,
                delta: "Done.".into(),
            },
            reasoning("Then more."),
            start("c1", "ask"),
            ChunkKind::StepEnd { step: 1 },
        ],
    );
    assert_eq!(
        out,
        [
            json!({"type": "start-step"}),
            json!({"type": "reasoning-start", "id": "reasoning-1-2"}),
            json!({"type": "reasoning-delta", "id": "reasoning-1-2", "delta": "Think "}),
            json!({"type": "reasoning-delta", "id": "reasoning-1-2", "delta": "first."}),
            json!({"type": "reasoning-end", "id": "reasoning-1-2"}),
            json!({"type": "text-start", "id": "text-1-4"}),
            json!({"type": "text-delta", "id": "text-1-4", "delta": "Done."}),
            json!({"type": "text-end", "id": "text-1-4"}),
            json!({"type": "reasoning-start", "id": "reasoning-1-5"}),
            json!({"type": "reasoning-delta", "id": "reasoning-1-5", "delta": "Then more."}),
            json!({"type": "reasoning-end", "id": "reasoning-1-5"}),
            json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "ask", "input": {}}),
            json!({"type": "data-render", "id": "render-c1", "data": {"toolCallId": "c1", "render": {"kind": "elicitation"}}}),
            json!({"type": "finish-step"}),
        ]
    );

    // A discarded step names its reasoning parts as well as its text parts.
    let mut mapper = UiStreamMapper::new(agent(), "s", HashSet::new());
    let out = frames(
        &mut mapper,
        vec![
            ChunkKind::StepStart { step: 1 },
            reasoning("Hm."),
            ChunkKind::StepDiscarded { step: 1 },
        ],
    );
    assert_eq!(
        out[3],
        json!({"type": "reasoning-end", "id": "reasoning-1-2"})
    );
    assert_eq!(
        out[4]["data"],
        json!({"step": 1, "textIds": ["reasoning-1-2"]})
    );
}

#[test]
fn a_tools_data_becomes_its_data_part_kept_or_transient() {
    let mut mapper = UiStreamMapper::new(agent(), "s", HashSet::new());
    let data = |name: &str, transient: bool| ChunkKind::ToolData {
        step: 1,
        tool_call_id: "c2".into(),
        name: name.into(),
        data: json!({"done": 1}),
        transient,
    };
    let out = frames(
        &mut mapper,
        vec![
            ChunkKind::StepStart { step: 1 },
            start("c2", "add"),
            end("c2", "add", None),
            data("progress", true),
            data("weather", false),
        ],
    );
    assert_eq!(
        out[3..],
        [
            json!({"type": "data-progress", "data": {"done": 1}, "transient": true}),
            json!({"type": "data-weather", "data": {"done": 1}}),
        ]
    );
}

/// A remote child's chunk, forwarded onto the root's stream (the producer's ids).
fn forwarded(sequence: u64, kind: ChunkKind) -> StreamChunk {
    let mut copy = chunk(sequence, "rc-1", kind);
    copy.remote_source = Some(baton_core::chunk::RemoteSource {
        child_session_id: "rc-1".into(),
        child_sequence: sequence,
        stream_id: "producer".into(),
    });
    copy
}

/// A call the remote child `rc-1` relayed under its relayed id.
fn relayed_call(producer_id: &str, name: &str, approval: bool) -> super::tree::TreeCall {
    let id = baton_core::subagent::relayed_call_id("rc-1", producer_id);
    super::tree::TreeCall {
        session_id: "rc-1".into(),
        agent_type: "a".into(),
        call: baton_core::store::PendingCall {
            approval_id: approval.then(|| format!("r::{id}")),
            tool_call_id: id,
            tool_name: name.into(),
            input: json!({}),
            kind: match approval {
                true => baton_core::store::PendingKind::Approval,
                false => baton_core::store::PendingKind::Client,
            },
            step: 1,
            deadline_at: u64::MAX,
            completed_retention_ms: 0,
            awaited_since: 0,
            asked: None,
        },
        answer: None,
        relayed: true,
        render: None,
    }
}

#[test]
fn a_remote_childs_relayed_calls_are_parts_under_their_relayed_ids_never_the_producers() {
    // The consumer serves an agent of the remote child's type too: its ids must still not leak.
    let registry = baton_core::AgentRegistry::new([Arc::try_unwrap(agent()).unwrap()]).unwrap();
    let open = [("p1".to_owned(), "research".to_owned(), json!({}))];
    let mut mapper = UiStreamMapper::new(agent(), "s", HashSet::new())
        .with_tree(registry.clone(), Default::default())
        .with_open_sub_agent_calls(open.clone());
    let announced = ChunkKind::SubagentStart {
        sub_session_id: "rc-1".into(),
        agent_type: "a".into(),
        tool_call_id: "p1".into(),
    };
    let suspended = chunk(
        4,
        "s",
        ChunkKind::Suspended {
            step: 1,
            tool_call_ids: vec!["p1".into()],
        },
    );
    let mut out: Vec<Value> = Vec::new();
    let map = |mapper: &mut UiStreamMapper, c: &StreamChunk| {
        let frames = mapper.map(c);
        frames
            .iter()
            .map(|f| serde_json::from_str(&f.to_json()).unwrap())
            .collect::<Vec<Value>>()
    };
    out.extend(map(
        &mut mapper,
        &chunk(0, "s", ChunkKind::StepStart { step: 1 }),
    ));
    out.extend(map(&mut mapper, &chunk(1, "s", announced)));
    out.extend(map(&mut mapper, &forwarded(2, start("c1", "ask"))));
    out.extend(map(&mut mapper, &forwarded(3, start("c3", "send"))));
    assert!(!mapper.reads_relayed_before(&forwarded(3, start("c3", "send"))));
    assert!(mapper.reads_relayed_before(&suspended));
    let (question, approval) = (
        relayed_call("c1", "ask", false),
        relayed_call("c3", "send", true),
    );
    let (q, a) = (
        question.call.tool_call_id.clone(),
        approval.call.tool_call_id.clone(),
    );
    mapper.add_relayed(vec![question, approval]);
    out.extend(map(&mut mapper, &suspended));
    let parts: Vec<&Value> = out
        .iter()
        .filter(|f| f["type"] != "data-subagent" && f["type"] != "data-baton-subagent-start")
        .collect();
    let owner = |id: &str| json!({"toolCallId": id, "agentId": "rc-1", "agentType": "a"});
    assert_eq!(
        parts,
        [
            &json!({"type": "start-step"}),
            &json!({"type": "tool-input-available", "toolCallId": q, "toolName": "ask",
                    "input": {}, "providerMetadata": {"baton": owner(&q)}}),
            &json!({"type": "data-subagent-call", "id": format!("subagent-call-{q}"), "data": owner(&q)}),
            &json!({"type": "tool-input-available", "toolCallId": a, "toolName": "send",
                    "input": {}, "providerMetadata": {"baton": owner(&a)}}),
            &json!({"type": "data-subagent-call", "id": format!("subagent-call-{a}"), "data": owner(&a)}),
            &json!({"type": "tool-approval-request", "approvalId": format!("r::{a}"), "toolCallId": a}),
            &json!({"type": "finish-step"}),
            &json!({"type": "finish", "finishReason": "tool-calls",
                    "messageMetadata": {"finishedAt": 0}}),
        ]
    );

    // The continuation: a forwarded end of a held relayed call is its part's output, under the
    // relayed id, in a step of its own (the root has none open); the producer's id gives nothing.
    let mut next = UiStreamMapper::new(agent(), "s", HashSet::new())
        .with_tree(registry, Default::default())
        .with_open_sub_agent_calls(open)
        .with_relayed_calls([(a.clone(), ToolRole::Approval)]);
    let ended: Vec<Value> = map(&mut next, &forwarded(5, end("c3", "send", None)))
        .into_iter()
        .filter(|f| f["type"] != "data-subagent")
        .collect();
    assert_eq!(
        ended,
        [
            json!({"type": "start-step"}),
            json!({"type": "tool-output-available", "toolCallId": a, "output": 1,
                "providerExecuted": true})
        ]
    );
    let unheld = map(&mut next, &forwarded(6, end("c1", "ask", None)));
    assert!(
        unheld.iter().all(|f| f["type"] == "data-subagent"),
        "{unheld:?}"
    );
}
