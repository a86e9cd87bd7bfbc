//! Baton's stream chunks as a UI message stream: one mapper per response, fed the session's
//! chunks in order, answering the UI chunks each one stands for, until the run suspends or ends.
//!
//! - `step_start` / `step_end` open and close a step (`start-step` / `finish-step`); the text of
//!   a step is one text part, closed inside its step.
//! - `tool_start` is the call with its input: a client call unflagged, with its render hint as a
//!   `data-render` part beside it; an approval-gated call unflagged too (its
//!   `tool-approval-request` follows); any other server call `providerExecuted`.
//! - `tool_end` is the call's output (`tool-output-denied` for a denied approval); a server
//!   tool's output stays flagged `providerExecuted`, as the snapshot renders it.
//! - `suspended` ends the step and the message with `finishReason: tool-calls`; `end` ends it
//!   with `stop`, `other` (interrupted) or an `error` chunk (failed).
//! - `rewind` is dropped: only a regenerate writes one at the start of its response, and the
//!   client has already cut the message it replaces.
//! - `state_patch` (the session's custom state changed) is a transient `data-state-patch` part
//!   carrying the chunk: the app applies its `patch` to the state it holds (seeded from the
//!   session snapshot's `state`); it is not part of the message.
//! - A chunk of another session of the tree (a sub-agent's) is a transient `data-subagent` part;
//!   `step_discarded` (a model call retried after it streamed text) closes the open text and
//!   adds a kept `data-step-discarded` part `{step, textIds}` naming the text parts the discarded
//!   attempt streamed: a UI stream cannot take parts back, so the app hides them (the snapshot
//!   never has them: the log holds committed steps only); the retry's `step_start` continues the
//!   same UI step, so steps still match the snapshot's. Any other kind is a kept
//!   `data-baton-<kind>` part carrying the chunk.
//! - A `tool_end` or `tool_approval_request` for a call the message does not hold (a call of an
//!   earlier turn drained as abandoned) is dropped: `ai` throws on a part it cannot find.

use super::ui::{DataPart, FinishReason, UiChunk, UiFrame};
use baton_core::{
    Agent,
    agent::AgentTool,
    chunk::{ChunkKind, EndStatus, StreamChunk},
    message::{ToolError, codes},
};
use serde_json::{Value, json};
use std::{collections::HashSet, sync::Arc};

/// How the front end meets one of the agent's tools.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolRole {
    /// The front end answers it; maybe with a render hint (`{kind, outputSchema?}`).
    Client { render: Option<Value> },
    /// A server tool that waits for a person's approval first.
    Approval,
    /// A server tool that runs on its own (or a tool the agent does not have).
    Server,
}

/// The role of the tool `name` in `agent`.
pub fn tool_role(agent: &Agent, name: &str) -> ToolRole {
    match agent.any_tool(name) {
        Some(AgentTool::Client(tool)) => ToolRole::Client {
            render: tool.render_hint().map(|kind| {
                let mut hint = json!({ "kind": kind });
                if let Some(schema) = tool.declared_output_schema() {
                    hint["outputSchema"] = schema.clone();
                }
                hint
            }),
        },
        Some(AgentTool::Server(tool)) if tool.requires_approval() => ToolRole::Approval,
        _ => ToolRole::Server,
    }
}

/// The `data-render` part of a client call with a render hint: kept in the message, with an id
/// of its own so a repeat replaces it.
pub(super) fn render_part(tool_call_id: &str, render: &Value) -> DataPart {
    DataPart::kept(
        "render",
        Some(format!("render-{tool_call_id}")),
        json!({ "toolCallId": tool_call_id, "render": render }),
    )
}

/// The text a failed call shows: its code and message.
pub(super) fn error_text(error: &ToolError) -> String {
    format!("{}: {}", error.code, error.message)
}

/// Maps one response's chunks to UI chunks (see the module's documentation).
pub struct UiStreamMapper {
    agent: Arc<Agent>,
    session_id: String,
    /// Tool calls the client's message holds: those it sent, and those this response added.
    known_calls: HashSet<String>,
    roles: std::collections::HashMap<String, ToolRole>,
    open_text: Option<String>,
    /// The text parts the open step streamed, which a `step_discarded` names.
    step_texts: Vec<String>,
    /// A step was discarded: its retry's `step_start` continues the open step.
    retrying: bool,
    step_open: bool,
    finished: bool,
}

impl UiStreamMapper {
    /// A mapper for a session of `agent` into a message holding `known_calls` already.
    pub fn new(agent: Arc<Agent>, session_id: &str, known_calls: HashSet<String>) -> Self {
        Self {
            agent,
            session_id: session_id.to_owned(),
            known_calls,
            roles: Default::default(),
            open_text: None,
            step_texts: Vec::new(),
            retrying: false,
            step_open: false,
            finished: false,
        }
    }

    /// Whether the run suspended or ended: nothing more belongs to this response.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The UI chunks `chunk` stands for (none once finished).
    pub fn map(&mut self, chunk: &StreamChunk) -> Vec<UiFrame> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        if chunk.header.agent_id != self.session_id {
            out.push(DataPart::transient("subagent", chunk_json(chunk)).into());
            return out;
        }
        match &chunk.kind {
            ChunkKind::RunStart { .. } | ChunkKind::Rewind { .. } => {}
            ChunkKind::StatePatch { .. } => {
                out.push(DataPart::transient("state-patch", chunk_json(chunk)).into());
            }
            ChunkKind::StepStart { .. } if std::mem::take(&mut self.retrying) && self.step_open => {
            }
            ChunkKind::StepStart { .. } => {
                self.close_step(&mut out);
                out.push(UiChunk::StartStep.into());
                self.step_open = true;
            }
            ChunkKind::TextDelta { step, delta } => {
                let id = match &self.open_text {
                    Some(id) => id.clone(),
                    None => {
                        let id = format!("text-{step}-{}", chunk.sequence);
                        out.push(UiChunk::TextStart { id: id.clone() }.into());
                        self.open_text = Some(id.clone());
                        self.step_texts.push(id.clone());
                        id
                    }
                };
                out.push(
                    UiChunk::TextDelta {
                        id,
                        delta: delta.clone(),
                    }
                    .into(),
                );
            }
            ChunkKind::ToolStart {
                tool_call_id,
                tool_name,
                input,
                ..
            } => {
                self.close_text(&mut out);
                let role = tool_role(&self.agent, tool_name);
                out.push(
                    UiChunk::ToolInputAvailable {
                        tool_call_id: tool_call_id.clone(),
                        tool_name: tool_name.clone(),
                        input: input.clone(),
                        provider_executed: (role == ToolRole::Server).then_some(true),
                    }
                    .into(),
                );
                if let ToolRole::Client {
                    render: Some(render),
                } = &role
                {
                    out.push(render_part(tool_call_id, render).into());
                }
                self.known_calls.insert(tool_call_id.clone());
                self.roles.insert(tool_call_id.clone(), role);
            }
            ChunkKind::ToolEnd {
                tool_call_id,
                tool_name,
                result,
                error,
                ..
            } => {
                if self.known_calls.contains(tool_call_id) {
                    let role = self
                        .roles
                        .get(tool_call_id)
                        .cloned()
                        .unwrap_or_else(|| tool_role(&self.agent, tool_name));
                    out.push(tool_output(tool_call_id, &role, result, error).into());
                }
            }
            ChunkKind::ToolApprovalRequest {
                tool_call_id,
                approval_id,
                ..
            } => {
                if self.known_calls.contains(tool_call_id) {
                    out.push(
                        UiChunk::ToolApprovalRequest {
                            approval_id: approval_id.clone(),
                            tool_call_id: tool_call_id.clone(),
                        }
                        .into(),
                    );
                }
            }
            ChunkKind::StepEnd { .. } => self.close_step(&mut out),
            ChunkKind::StepDiscarded { step } => {
                self.close_text(&mut out);
                let texts = std::mem::take(&mut self.step_texts);
                let data = json!({ "step": step, "textIds": texts });
                out.push(DataPart::kept("step-discarded", None, data).into());
                self.retrying = true;
            }
            ChunkKind::Suspended { .. } => {
                self.close_step(&mut out);
                out.push(finish(Some(FinishReason::ToolCalls)));
                self.finished = true;
            }
            ChunkKind::End { status, error, .. } => {
                self.close_step(&mut out);
                match status {
                    EndStatus::Completed => out.push(finish(Some(FinishReason::Stop))),
                    EndStatus::Interrupted => out.push(finish(Some(FinishReason::Other))),
                    EndStatus::Failed => out.push(
                        UiChunk::Error {
                            error_text: error.as_ref().map_or_else(
                                || "the run failed".to_owned(),
                                |e| format!("{}: {}", e.code, e.message),
                            ),
                        }
                        .into(),
                    ),
                }
                self.finished = true;
            }
            // Kinds this mapper does not know yet (other branches add some: sub-agents, state
            // patches) still reach the client, as data parts, and a new kind
            // does not break this match. Unreachable while every kind above is listed.
            #[allow(unreachable_patterns)]
            other => self.unknown(other.name(), chunk, &mut out),
        }
        out
    }

    /// A kind this mapper has no UI chunk for (see the module's documentation).
    fn unknown(&mut self, name: &str, chunk: &StreamChunk, out: &mut Vec<UiFrame>) {
        let body = chunk_json(chunk);
        out.push(DataPart::kept(&format!("baton-{}", name.replace('_', "-")), None, body).into());
    }

    /// The chunks that end a response cut short by a stream error.
    pub fn fail(&mut self, error_text: String) -> Vec<UiFrame> {
        let mut out = Vec::new();
        if !self.finished {
            self.close_step(&mut out);
            out.push(UiChunk::Error { error_text }.into());
            self.finished = true;
        }
        out
    }

    fn close_text(&mut self, out: &mut Vec<UiFrame>) {
        if let Some(id) = self.open_text.take() {
            out.push(UiChunk::TextEnd { id }.into());
        }
    }

    fn close_step(&mut self, out: &mut Vec<UiFrame>) {
        self.close_text(out);
        self.step_texts.clear();
        if std::mem::take(&mut self.step_open) {
            out.push(UiChunk::FinishStep.into());
        }
    }
}

fn finish(finish_reason: Option<FinishReason>) -> UiFrame {
    UiChunk::Finish { finish_reason }.into()
}

/// A call's output chunk: denied, failed or available; a server tool's flagged.
fn tool_output(
    tool_call_id: &str,
    role: &ToolRole,
    result: &Option<Value>,
    error: &Option<ToolError>,
) -> UiChunk {
    let provider_executed = (!matches!(role, ToolRole::Client { .. })).then_some(true);
    match (result, error) {
        (_, Some(error)) if error.code == codes::TOOL_DENIED => UiChunk::ToolOutputDenied {
            tool_call_id: tool_call_id.to_owned(),
        },
        (_, Some(error)) => UiChunk::ToolOutputError {
            tool_call_id: tool_call_id.to_owned(),
            error_text: error_text(error),
            provider_executed,
        },
        (result, None) => UiChunk::ToolOutputAvailable {
            tool_call_id: tool_call_id.to_owned(),
            output: result.clone().unwrap_or(Value::Null),
            provider_executed,
        },
    }
}

/// A chunk's JSON, for the data parts that carry one whole.
fn chunk_json(chunk: &StreamChunk) -> Value {
    serde_json::to_value(chunk).unwrap_or(Value::Null)
}
