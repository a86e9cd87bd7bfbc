//! A session as the UI messages `useChat` renders, for a reload or a second tab: the log (to its
//! newest checkpoint while a run works), with each awaited call as the live stream left it and
//! each stored answer as the client sent it. A user message keeps the id, metadata and files
//! the client sent (`u<k>` for the k-th user message sent without an id); `a<k>` is the
//! assistant message answering it, the id the live stream gives it. An assistant message shows
//! what the stream showed: each step's reasoning before the text it came before, a call's kept
//! data parts after the step's tool parts, and the server metadata its steps' entries keep.
//!
//! The calls the sessions below the root await (`tree.rs`) are tool parts of the root's last
//! assistant message, as the live stream added them, each with its owner beside it; a sub-agent
//! call whose child has not ended has no part, as live. A remote child's relayed calls are among
//! them (`relayed.rs`), answered ones in their answer's state.
//!
//! An approval part (`approval-requested`, or `approval-responded` for a stored decision) has no
//! `providerExecuted`, as live, so a reloaded page auto-sends exactly like the live one; a
//! completed server part keeps the flag.

use super::{
    mapper::{ToolRole, error_text, render_part, tool_role},
    tree::{TreeCall, owner_metadata, owner_part},
};
use baton_core::{
    Agent, AgentRegistry, Message,
    message::{AssistantExtras, KeptData, ToolCall, ToolOutcome, UserExtras, codes},
    store::{Answer, PendingCall, StoredAnswer},
    tool::ask::question_render,
};
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// What the conversion reads besides the log.
pub struct SnapshotInputs<'a> {
    pub agent: &'a Agent,
    /// The calls the session awaits, by id.
    pub pending: &'a HashMap<String, PendingCall>,
    /// The answers stored for them and not drained yet, by call id.
    pub answers: &'a HashMap<String, StoredAnswer>,
    /// The approval ids of calls once awaited (from the checkpoints), by call id.
    pub approval_ids: &'a HashMap<String, String>,
    /// The agents of the sessions below the root.
    pub registry: &'a AgentRegistry,
    /// The calls the sessions below the root await.
    pub tree: &'a [TreeCall],
    /// For an interrupted session, the finish of the message the stop cut short.
    pub interrupted: Option<&'a Value>,
}

/// The id of the assistant message answering the k-th user message.
pub(super) fn assistant_message_id(turn: usize) -> String {
    format!("a{turn}")
}

/// The UI messages of `log` (see the module's documentation).
pub fn ui_messages(log: &[Message], inputs: &SnapshotInputs<'_>) -> Vec<Value> {
    let results: HashMap<&str, &ToolOutcome> = log
        .iter()
        .filter_map(|m| match m {
            Message::Tool(result) => Some((result.tool_call_id.as_str(), &result.outcome)),
            _ => None,
        })
        .collect();
    let data: HashMap<&str, &[KeptData]> = log
        .iter()
        .filter_map(|m| match m {
            Message::Tool(result) if !result.chat_data.is_empty() => {
                Some((result.tool_call_id.as_str(), result.chat_data.as_slice()))
            }
            _ => None,
        })
        .collect();
    let mut messages = Vec::new();
    let mut turn = 0;
    let mut assistant: Option<(Vec<Value>, Map<String, Value>)> = None;
    // The `createdAt` of the message answering the last user message, if the route took it.
    let mut received_at = None;
    let flush = |assistant: &mut Option<(Vec<Value>, Map<String, Value>)>,
                 messages: &mut Vec<Value>,
                 turn: usize| {
        if let Some((parts, metadata)) = assistant.take() {
            let mut message = json!({
                "id": assistant_message_id(turn), "role": "assistant", "parts": parts,
            });
            if !metadata.is_empty() {
                message["metadata"] = Value::Object(metadata);
            }
            messages.push(message);
        }
    };
    for message in log {
        match message {
            Message::System { .. } | Message::Tool(_) => {}
            Message::User { content, chat } => {
                flush(&mut assistant, &mut messages, turn);
                turn += 1;
                messages.push(user_message(turn, content, chat.as_deref()));
                received_at = chat.as_ref().and_then(|chat| chat.received_at);
            }
            Message::Assistant {
                content,
                tool_calls,
                chat,
                finish,
            } => {
                let (parts, metadata) = assistant.get_or_insert_with(|| {
                    let mut metadata = Map::new();
                    if let Some(at) = received_at {
                        metadata.insert("createdAt".into(), json!(at));
                    }
                    (Vec::new(), metadata)
                });
                add_metadata(metadata, chat.as_deref(), finish.as_deref());
                parts.push(json!({"type": "step-start"}));
                text_and_reasoning(parts, content, chat.as_deref());
                let mut kept = Vec::new();
                for call in tool_calls {
                    let role = tool_role(inputs.agent, &call.name);
                    let outcome = results.get(call.id.as_str()).copied();
                    // A sub-agent call shows once its child has ended, as live.
                    if role == ToolRole::SubAgent && outcome.is_none() {
                        continue;
                    }
                    parts.push(tool_part(call, &role, outcome, inputs));
                    if let ToolRole::Client {
                        render: Some(render),
                    } = &role
                    {
                        let part = serde_json::to_value(render_part(&call.id, render))
                            .unwrap_or(Value::Null);
                        parts.push(part);
                    }
                    kept.extend(data.get(call.id.as_str()).copied().unwrap_or_default());
                }
                // A call's kept data came after its output, once the step's calls had parts.
                parts.extend(
                    kept.iter().map(
                        |item| json!({"type": format!("data-{}", item.name), "data": item.data}),
                    ),
                );
            }
        }
    }
    question_parts(&mut assistant, inputs);
    if !inputs.tree.is_empty() {
        descendant_parts(
            &mut assistant.get_or_insert_with(Default::default).0,
            inputs,
        );
    }
    if let Some((_, metadata)) = assistant.as_mut() {
        add_metadata(metadata, None, inputs.interrupted);
    }
    flush(&mut assistant, &mut messages, turn);
    messages
}

/// The step's text and reasoning parts in the order they streamed: each piece of reasoning
/// before the text that came after it.
fn text_and_reasoning(parts: &mut Vec<Value>, content: &str, chat: Option<&AssistantExtras>) {
    let mut from = 0;
    let mut text = |parts: &mut Vec<Value>, to: usize| {
        let mut to = to.clamp(from, content.len());
        while !content.is_char_boundary(to) {
            to -= 1;
        }
        if to > from {
            parts.push(json!({"type": "text", "text": &content[from..to], "state": "done"}));
            from = to;
        }
    };
    for piece in chat
        .map(|chat| chat.reasoning.as_slice())
        .unwrap_or_default()
    {
        text(parts, piece.offset);
        parts.push(json!({"type": "reasoning", "text": piece.text, "state": "done"}));
    }
    text(parts, content.len());
}

/// Folds a step's metadata into its message's, as `useChat` merges what the stream sent: the
/// first step's answer time is `createdAt` (unless the user message it answers has the time the
/// route took it), a later finish overrides an earlier one's fields.
fn add_metadata(
    metadata: &mut Map<String, Value>,
    chat: Option<&AssistantExtras>,
    finish: Option<&Value>,
) {
    if let Some(answered_at) = chat.and_then(|chat| chat.answered_at) {
        metadata
            .entry("createdAt")
            .or_insert_with(|| json!(answered_at));
    }
    if let Some(Value::Object(finish)) = finish {
        metadata.extend(finish.clone());
    }
}

/// A user message as the client sent it: its id (or `u<k>` for one sent without), its
/// metadata, its files and its text.
fn user_message(turn: usize, content: &str, extras: Option<&UserExtras>) -> Value {
    let id = extras
        .and_then(|extras| extras.id.clone())
        .unwrap_or_else(|| format!("u{turn}"));
    let mut parts: Vec<Value> = extras
        .map(|extras| extras.files.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|file| {
            let mut part = json!({"type": "file", "mediaType": file.media_type, "url": file.url});
            if let Some(filename) = &file.filename {
                part["filename"] = json!(filename);
            }
            part
        })
        .collect();
    if !content.is_empty() || parts.is_empty() {
        parts.push(json!({"type": "text", "text": content}));
    }
    let mut message = json!({"id": id, "role": "user", "parts": parts});
    if let Some(metadata) = extras.and_then(|extras| extras.metadata.clone()) {
        message["metadata"] = metadata;
    }
    message
}

/// The questions the root's own tool calls suspended its run on, as live: each a client part
/// named `question` with its render hint, in a step of its own.
fn question_parts(
    assistant: &mut Option<(Vec<Value>, Map<String, Value>)>,
    inputs: &SnapshotInputs<'_>,
) {
    // The pending calls of the sessions below are theirs (see `descendant_parts`).
    let below = |call: &PendingCall| {
        inputs
            .tree
            .iter()
            .any(|owned| owned.call.tool_call_id == call.tool_call_id)
    };
    let mut questions: Vec<&PendingCall> = inputs
        .pending
        .values()
        .filter(|call| call.asked.is_some() && !below(call))
        .collect();
    questions.sort_by(|a, b| (a.step, &a.tool_call_id).cmp(&(b.step, &b.tool_call_id)));
    for question in questions {
        let parts = &mut assistant.get_or_insert_with(Default::default).0;
        let role = question_role(question);
        let call = ToolCall {
            id: question.tool_call_id.clone(),
            name: question.tool_name.clone(),
            arguments: question.input.clone(),
            provider_id: None,
        };
        parts.push(json!({"type": "step-start"}));
        parts.push(tool_part(&call, &role, None, inputs));
        if let ToolRole::Client {
            render: Some(render),
        } = &role
        {
            parts.push(serde_json::to_value(render_part(&call.id, render)).unwrap_or(Value::Null));
        }
    }
}

/// How the front end meets a question a tool's call suspended its run on: a client call
/// rendered as a form of its schema.
pub(super) fn question_role(call: &PendingCall) -> ToolRole {
    ToolRole::Client {
        render: call
            .asked
            .as_ref()
            .map(|ask| question_render(&ask.asked.schema)),
    }
}

/// The tool parts of the calls the sessions below the root await, each with its owner (and its
/// render hint) beside it.
fn descendant_parts(parts: &mut Vec<Value>, inputs: &SnapshotInputs<'_>) {
    for owned in inputs.tree {
        let Some(role) = owned.role(inputs.registry) else {
            continue;
        };
        let call = ToolCall {
            id: owned.call.tool_call_id.clone(),
            name: owned.call.tool_name.clone(),
            arguments: owned.call.input.clone(),
            provider_id: None,
        };
        let mut part = tool_part(&call, &role, None, inputs);
        part["callProviderMetadata"] =
            owner_metadata(&call.id, &owned.session_id, &owned.agent_type);
        parts.push(part);
        let owner = owner_part(&call.id, &owned.session_id, &owned.agent_type);
        parts.push(serde_json::to_value(owner).unwrap_or(Value::Null));
        if let ToolRole::Client {
            render: Some(render),
        } = &role
        {
            parts.push(serde_json::to_value(render_part(&call.id, render)).unwrap_or(Value::Null));
        }
    }
}

/// The tool part of one call, in the state the live stream would have left it.
fn tool_part(
    call: &ToolCall,
    role: &ToolRole,
    outcome: Option<&ToolOutcome>,
    inputs: &SnapshotInputs<'_>,
) -> Value {
    let mut part = Map::new();
    part.insert("type".into(), json!(format!("tool-{}", call.name)));
    part.insert("toolCallId".into(), json!(call.id));
    part.insert("input".into(), call.arguments.clone());
    let flagged = !matches!(role, ToolRole::Client { .. });
    let approval_id = || {
        inputs
            .pending
            .get(&call.id)
            .and_then(|p| p.approval_id.clone())
            .or_else(|| inputs.approval_ids.get(&call.id).cloned())
            .unwrap_or_default()
    };
    let state = match outcome {
        Some(ToolOutcome::Error(error))
            if error.code == codes::TOOL_DENIED && *role == ToolRole::Approval =>
        {
            part.insert(
                "approval".into(),
                json!({"id": approval_id(), "approved": false}),
            );
            "output-denied"
        }
        Some(ToolOutcome::Error(error)) => {
            part.insert("errorText".into(), json!(error_text(error)));
            if flagged {
                part.insert("providerExecuted".into(), json!(true));
            }
            "output-error"
        }
        Some(ToolOutcome::Result(output)) => {
            part.insert("output".into(), output.clone());
            if flagged {
                part.insert("providerExecuted".into(), json!(true));
            }
            "output-available"
        }
        None => match (role, inputs.answers.get(&call.id).map(|a| &a.answer)) {
            (ToolRole::Approval, Some(Answer::Approval(decision))) => {
                let mut approval = json!({"id": approval_id(), "approved": decision.approved});
                if let Some(reason) = &decision.reason {
                    approval["reason"] = json!(reason);
                }
                part.insert("approval".into(), approval);
                "approval-responded"
            }
            (ToolRole::Approval, _) => {
                part.insert("approval".into(), json!({"id": approval_id()}));
                "approval-requested"
            }
            (_, Some(Answer::Outcome { outcome })) => match outcome {
                ToolOutcome::Result(output) => {
                    part.insert("output".into(), output.clone());
                    "output-available"
                }
                ToolOutcome::Error(error) => {
                    part.insert("errorText".into(), json!(error.message));
                    "output-error"
                }
            },
            (ToolRole::Server | ToolRole::SubAgent, _) => {
                part.insert("providerExecuted".into(), json!(true));
                "input-available"
            }
            _ => "input-available",
        },
    };
    part.insert("state".into(), json!(state));
    Value::Object(part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::{message::ToolError, session::ApprovalDecision, store::PendingKind};

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({}),
            provider_id: None,
        }
    }

    fn pending(id: &str, name: &str, kind: PendingKind) -> PendingCall {
        PendingCall {
            tool_call_id: id.into(),
            tool_name: name.into(),
            input: json!({}),
            kind,
            step: 2,
            deadline_at: 0,
            completed_retention_ms: 0,
            approval_id: (kind == PendingKind::Approval).then(|| format!("r2::{id}")),
            awaited_since: 0,
            asked: None,
        }
    }

    #[test]
    fn a_log_with_awaited_calls_renders_as_the_live_stream_left_it() {
        let agent = super::super::mapper_tests::agent();
        let first = call("c1", "add");
        let denied = call("c2", "send");
        let log = vec![
            Message::system("s"),
            Message::user("hi"),
            Message::assistant("working", vec![first.clone(), denied.clone()]),
            Message::tool_result(&first, ToolOutcome::Result(json!(3))),
            Message::tool_result(
                &denied,
                ToolOutcome::Error(ToolError::new(codes::TOOL_DENIED, "no")),
            ),
            Message::assistant("", vec![call("c3", "ask"), call("c4", "send")]),
        ];
        let pending: HashMap<_, _> = [
            ("c3".to_owned(), pending("c3", "ask", PendingKind::Client)),
            (
                "c4".to_owned(),
                pending("c4", "send", PendingKind::Approval),
            ),
        ]
        .into();
        let answers = HashMap::from([(
            "c4".to_owned(),
            StoredAnswer {
                answer: Answer::Approval(ApprovalDecision {
                    approved: true,
                    reason: None,
                    arguments: None,
                }),
                submitted_at: 0,
            },
        )]);
        let approval_ids = HashMap::from([("c2".to_owned(), "r1::c2".to_owned())]);
        let inputs = SnapshotInputs {
            agent: &agent,
            pending: &pending,
            answers: &answers,
            approval_ids: &approval_ids,
            registry: &AgentRegistry::default(),
            tree: &[],
            interrupted: None,
        };
        let messages = ui_messages(&log, &inputs);
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0]["id"], "u1");
        assert_eq!(messages[1]["id"], "a1");
        let parts = messages[1]["parts"].as_array().unwrap();
        let kinds: Vec<&str> = parts.iter().map(|p| p["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "step-start",
                "text",
                "tool-add",
                "tool-send",
                "step-start",
                "tool-ask",
                "data-render",
                "tool-send"
            ]
        );
        assert_eq!(parts[2]["state"], "output-available");
        assert_eq!(parts[2]["providerExecuted"], true);
        assert_eq!(parts[3]["state"], "output-denied");
        assert_eq!(
            parts[3]["approval"],
            json!({"id": "r1::c2", "approved": false})
        );
        assert_eq!(parts[5]["state"], "input-available");
        assert!(parts[5].get("providerExecuted").is_none());
        assert_eq!(parts[6]["data"]["render"]["kind"], "elicitation");
        assert_eq!(parts[7]["state"], "approval-responded");
        assert!(parts[7].get("providerExecuted").is_none());
        assert_eq!(
            parts[7]["approval"],
            json!({"id": "r2::c4", "approved": true})
        );
    }

    #[test]
    fn reasoning_kept_data_and_server_metadata_come_back_as_the_stream_gave_them() {
        use baton_core::message::Reasoning;
        let agent = super::super::mapper_tests::agent();
        let add = call("c1", "add");
        let mut result =
            baton_core::message::ToolResult::new("c1", "add", ToolOutcome::Result(json!(3)));
        result.chat_data = vec![KeptData {
            name: "sum".into(),
            data: json!({"value": 3}),
        }];
        let step = |content: &str, calls, reasoning: Vec<Reasoning>, at, finish: Option<Value>| {
            Message::Assistant {
                content: content.into(),
                tool_calls: calls,
                chat: Some(Box::new(AssistantExtras {
                    reasoning,
                    answered_at: Some(at),
                })),
                finish: finish.map(Box::new),
            }
        };
        let reasoning = |offset, text: &str| Reasoning {
            offset,
            text: text.into(),
        };
        let log = vec![
            Message::user("hi"),
            step("adding", vec![add], vec![reasoning(0, "sum it")], 10, None),
            Message::Tool(result),
            step(
                "It is 3. Sure.",
                vec![],
                vec![reasoning(0, "done"), reasoning(9, "check")],
                20,
                Some(json!({"finishedAt": 30, "usage": {"inputTokens": 1}, "models": ["m"]})),
            ),
        ];
        let empty = HashMap::new();
        let inputs = SnapshotInputs {
            agent: &agent,
            pending: &HashMap::new(),
            answers: &empty,
            approval_ids: &HashMap::new(),
            registry: &AgentRegistry::default(),
            tree: &[],
            interrupted: None,
        };
        let messages = ui_messages(&log, &inputs);
        let assistant = &messages[1];
        let parts: Vec<Value> = assistant["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| json!([p["type"], p.get("text").or(p.get("data")).cloned()]))
            .collect();
        assert_eq!(
            parts,
            [
                json!(["step-start", null]),
                json!(["reasoning", "sum it"]),
                json!(["text", "adding"]),
                json!(["tool-add", null]),
                json!(["data-sum", {"value": 3}]),
                json!(["step-start", null]),
                json!(["reasoning", "done"]),
                json!(["text", "It is 3. "]),
                json!(["reasoning", "check"]),
                json!(["text", "Sure."]),
            ]
        );
        assert_eq!(
            assistant["metadata"],
            json!({"createdAt": 10, "finishedAt": 30, "usage": {"inputTokens": 1}, "models": ["m"]})
        );
        assert!(messages[0].get("metadata").is_none());
        // An interrupt's finish (from the session's stop and usage) goes on the message it cut.
        let stopped = json!({"finishedAt": 40, "usage": {"inputTokens": 2}, "models": ["m"]});
        let inputs = SnapshotInputs {
            interrupted: Some(&stopped),
            ..inputs
        };
        let messages = ui_messages(&log, &inputs);
        assert_eq!(
            messages[1]["metadata"],
            json!({"createdAt": 10, "finishedAt": 40, "usage": {"inputTokens": 2}, "models": ["m"]})
        );
    }
}
