//! Baton's stream chunks as a UI message stream: one mapper per response, fed the session's
//! chunks in order, answering the UI chunks each one stands for, until the run suspends or ends.
//!
//! - `step_start` / `step_end` open and close a step (`start-step` / `finish-step`); the text of
//!   a step is one text part, closed inside its step.
//! - `tool_start` is the call with its input: a client call unflagged, with its render hint as a
//!   `data-render` part beside it; an approval-gated call unflagged too (its
//!   `tool-approval-request` follows); any other server call `providerExecuted`.
//! - A sub-agent call has no part while its child works: `ai`'s newest approval predicate would
//!   wait for its output before sending a child's approval. Its `tool_end` adds the part, input
//!   and output at once, flagged `providerExecuted`; the snapshot leaves an open one out too.
//! - `tool_end` is the call's output (`tool-output-denied` for a denied approval); a server
//!   tool's output stays flagged `providerExecuted`, as the snapshot renders it.
//! - `suspended` ends the step and the message with `finishReason: tool-calls`; `end` ends it
//!   with `stop`, `other` (interrupted) or an `error` chunk (failed). A finish carries the
//!   message's metadata: `finishedAt`, and at an end the session's `usage` and `models`.
//! - `rewind` is dropped: only a regenerate writes one at the start of its response, and the
//!   client has already cut the message it replaces.
//! - `state_patch` (the session's custom state changed) is a transient `data-state-patch` part
//!   carrying the chunk: the app applies its `patch` to the state it holds (seeded from the
//!   session snapshot's `state`); it is not part of the message.
//! - A chunk of another session of the tree (a sub-agent's) is a transient `data-subagent` part;
//!   besides, a descendant's client call or approval is a tool part exactly like the root's
//!   (its `tool_start`, `tool_approval_request` and `tool_end`), with its owner beside it
//!   (`tree.rs`): the app answers it as it answers the root's, through the root. Outside a step
//!   of the root's (an answer that resumed a child), those parts open one. The agent of a
//!   descendant is known from the `subagent_start` or `run_start` chunks, or from the tree read
//!   when the response began. `step_discarded` (a model call retried after it streamed text) closes the open text and
//!   adds a kept `data-step-discarded` part `{step, textIds}` naming the text parts the discarded
//!   attempt streamed: a UI stream cannot take parts back, so the app hides them (the snapshot
//!   never has them: the log holds committed steps only); the retry's `step_start` continues the
//!   same UI step, so steps still match the snapshot's. Any other kind is a kept
//!   `data-baton-<kind>` part carrying the chunk.
//! - A remote child's chunks (forwarded, stamped `remoteSource`) are only `data-subagent` parts:
//!   they carry the producer's ids. The calls it relayed are parts under their relayed ids,
//!   added before the root's `suspended` finishes the message, and a forwarded `tool_end` is the
//!   output of the relayed part it stands for (`relayed.rs`).
//! - A `tool_end` or `tool_approval_request` for a call the message does not hold (a call of an
//!   earlier turn drained as abandoned) is dropped: `ai` throws on a part it cannot find.

use super::{
    relayed,
    tree::{TreeCall, owner_metadata, owner_part},
    ui::{DataPart, FinishReason, UiChunk, UiFrame},
};
use baton_core::{
    Agent, AgentRegistry,
    agent::AgentTool,
    chunk::{ChunkKind, EndStatus, StreamChunk},
    message::{ToolError, codes, finish_metadata},
};
use serde_json::{Value, json};
use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

mod question;

/// How the front end meets one of the agent's tools.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolRole {
    /// The front end answers it; maybe with a render hint (`{kind, outputSchema?}`).
    Client { render: Option<Value> },
    /// A server tool that waits for a person's approval first.
    Approval,
    /// A server tool that runs on its own (or a tool the agent does not have).
    Server,
    /// A sub-agent call: a server call whose part appears when the child has ended.
    SubAgent,
}

impl ToolRole {
    /// Whether a person answers the call (a client call or an approval).
    pub fn asks_a_person(&self) -> bool {
        matches!(self, Self::Client { .. } | Self::Approval)
    }
}

/// The role of the tool `name` in `agent`.
pub fn tool_role(agent: &Agent, name: &str) -> ToolRole {
    match agent.any_tool(name) {
        Some(AgentTool::Client(tool)) => ToolRole::Client {
            render: tool.render_json(),
        },
        Some(AgentTool::Server(tool)) if tool.requires_approval() => ToolRole::Approval,
        Some(AgentTool::SubAgent(_)) => ToolRole::SubAgent,
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
    roles: HashMap<String, ToolRole>,
    /// The agents a descendant's chunks are read with, and each descendant's agent type.
    registry: AgentRegistry,
    agent_types: HashMap<String, String>,
    /// Sub-agent calls whose child has not ended, by id: their name and input, for the part
    /// their end adds.
    open_sub_agent_calls: HashMap<String, (String, Value)>,
    /// The calls remote children relayed, read when the root suspended: parts before its finish.
    relayed: Vec<TreeCall>,
    open_text: Option<String>,
    open_reasoning: Option<String>,
    /// The text and reasoning parts the open step streamed, which a `step_discarded` names.
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
            registry: AgentRegistry::default(),
            agent_types: HashMap::new(),
            open_sub_agent_calls: HashMap::new(),
            relayed: Vec::new(),
            open_text: None,
            open_reasoning: None,
            step_texts: Vec::new(),
            retrying: false,
            step_open: false,
            finished: false,
        }
    }

    /// Reads the chunks of the sessions below this one with `registry`, knowing already the
    /// agent types of `agent_types` (session id to type).
    pub fn with_tree(
        mut self,
        registry: AgentRegistry,
        agent_types: HashMap<String, String>,
    ) -> Self {
        self.registry = registry;
        self.agent_types = agent_types;
        self
    }

    /// Knows these sub-agent calls (id, tool name, input) as started and not ended: the client
    /// holds no part for them, their end adds it.
    pub fn with_open_sub_agent_calls(
        mut self,
        calls: impl IntoIterator<Item = (String, String, Value)>,
    ) -> Self {
        self.open_sub_agent_calls.extend(
            calls
                .into_iter()
                .map(|(id, name, input)| (id, (name, input))),
        );
        self
    }

    /// Knows these relayed calls (id, role) as held by the client's message: a forwarded end of
    /// one is its output.
    pub fn with_relayed_calls(
        mut self,
        calls: impl IntoIterator<Item = (String, ToolRole)>,
    ) -> Self {
        for (id, role) in calls {
            self.known_calls.insert(id.clone());
            self.roles.insert(id, role);
        }
        self
    }

    /// Whether `chunk` is the root's suspension while it waits on a sub-agent: the calls remote
    /// children relayed are read first (`relayed::calls`) and given with [`Self::add_relayed`].
    pub fn reads_relayed_before(&self, chunk: &StreamChunk) -> bool {
        !self.finished
            && chunk.header.agent_id == self.session_id
            && matches!(chunk.kind, ChunkKind::Suspended { .. })
            && !self.open_sub_agent_calls.is_empty()
    }

    /// The calls remote children relayed, for the root's suspension to add.
    pub fn add_relayed(&mut self, calls: Vec<TreeCall>) {
        self.relayed = calls;
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
        self.learn_agent_type(chunk);
        if let ChunkKind::Question { .. } = &chunk.kind {
            self.question(&mut out, chunk);
            return out;
        }
        if chunk.header.agent_id != self.session_id {
            out.push(DataPart::transient("subagent", chunk_json(chunk)).into());
            let mut parts = Vec::new();
            self.descendant(chunk, &mut parts);
            self.in_a_step(&mut out, parts);
            return out;
        }
        match &chunk.kind {
            // A question's part came with its chunk (see `question`); its close adds nothing:
            // the answer is the client's own, or the asking call's end says it went unanswered.
            ChunkKind::RunStart { .. }
            | ChunkKind::Rewind { .. }
            | ChunkKind::Question { .. }
            | ChunkKind::QuestionClosed { .. } => {}
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
            ChunkKind::ReasoningDelta { step, delta } => {
                self.delta(&mut out, true, (*step, chunk.sequence), delta);
            }
            ChunkKind::TextDelta { step, delta } => {
                self.delta(&mut out, false, (*step, chunk.sequence), delta);
            }
            ChunkKind::ToolStart {
                tool_call_id,
                tool_name,
                input,
                ..
            } if tool_role(&self.agent, tool_name) == ToolRole::SubAgent => {
                self.open_sub_agent_calls
                    .insert(tool_call_id.clone(), (tool_name.clone(), input.clone()));
            }
            ChunkKind::ToolEnd {
                tool_call_id,
                tool_name,
                result,
                error,
                ..
            } if tool_role(&self.agent, tool_name) == ToolRole::SubAgent => {
                if let Some((tool_name, input)) = self.open_sub_agent_calls.remove(tool_call_id) {
                    let call = (tool_call_id.as_str(), tool_name.as_str(), &input);
                    self.call_part(&mut out, call, ToolRole::SubAgent, None);
                }
                let agent = self.agent.clone();
                self.call_output(&mut out, tool_call_id, tool_name, result, error, &agent);
            }
            ChunkKind::ToolStart {
                tool_call_id,
                tool_name,
                input,
                ..
            } => {
                let role = tool_role(&self.agent, tool_name);
                self.call_part(&mut out, (tool_call_id, tool_name, input), role, None);
            }
            ChunkKind::ToolEnd {
                tool_call_id,
                tool_name,
                result,
                error,
                ..
            } => {
                let agent = self.agent.clone();
                self.call_output(&mut out, tool_call_id, tool_name, result, error, &agent);
            }
            ChunkKind::ToolApprovalRequest {
                tool_call_id,
                approval_id,
                ..
            } => self.approval_request(&mut out, tool_call_id, approval_id),
            ChunkKind::ToolData {
                name,
                data,
                transient,
                ..
            } => out.push(
                match transient {
                    true => DataPart::transient(name, data.clone()),
                    false => DataPart::kept(name, None, data.clone()),
                }
                .into(),
            ),
            ChunkKind::StepEnd { .. } => self.close_step(&mut out),
            ChunkKind::StepDiscarded { step } => {
                self.close_text(&mut out);
                let texts = std::mem::take(&mut self.step_texts);
                let data = json!({ "step": step, "textIds": texts });
                out.push(DataPart::kept("step-discarded", None, data).into());
                self.retrying = true;
            }
            ChunkKind::Suspended { .. } => {
                let mut parts = Vec::new();
                self.relayed_parts(&mut parts);
                self.in_a_step(&mut out, parts);
                self.close_step(&mut out);
                out.push(finish(Some(FinishReason::ToolCalls), chunk));
                self.finished = true;
            }
            ChunkKind::End { status, error, .. } => {
                self.close_step(&mut out);
                match status {
                    EndStatus::Completed => out.push(finish(Some(FinishReason::Stop), chunk)),
                    EndStatus::Interrupted => out.push(finish(Some(FinishReason::Other), chunk)),
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

    /// Keeps the agent type a `subagent_start` (any session's) or a descendant's `run_start`
    /// names.
    fn learn_agent_type(&mut self, chunk: &StreamChunk) {
        match &chunk.kind {
            ChunkKind::SubagentStart {
                sub_session_id,
                agent_type,
                ..
            } => {
                self.agent_types
                    .insert(sub_session_id.clone(), agent_type.clone());
            }
            ChunkKind::RunStart { agent_type } if chunk.header.agent_id != self.session_id => {
                self.agent_types
                    .insert(chunk.header.agent_id.clone(), agent_type.clone());
            }
            _ => {}
        }
    }

    /// A descendant's client call or approval as a tool part (see the module's documentation);
    /// nothing for its other chunks.
    fn descendant(&mut self, chunk: &StreamChunk, out: &mut Vec<UiFrame>) {
        if chunk.remote_source.is_some() {
            self.forwarded(chunk, out);
            return;
        }
        let agent_id = chunk.header.agent_id.as_str();
        let Some(agent_type) = self.agent_types.get(agent_id).cloned() else {
            return;
        };
        let Some(agent) = self.registry.get(&agent_type).cloned() else {
            return;
        };
        match &chunk.kind {
            ChunkKind::ToolStart {
                tool_call_id,
                tool_name,
                input,
                ..
            } => {
                let role = tool_role(&agent, tool_name);
                if role.asks_a_person() {
                    let call = (tool_call_id.as_str(), tool_name.as_str(), input);
                    let owner = Some((agent_id, agent_type.as_str()));
                    self.call_part(out, call, role, owner);
                }
            }
            ChunkKind::ToolApprovalRequest {
                tool_call_id,
                approval_id,
                ..
            } => self.approval_request(out, tool_call_id, approval_id),
            ChunkKind::ToolEnd {
                tool_call_id,
                tool_name,
                result,
                error,
                ..
            } => self.call_output(out, tool_call_id, tool_name, result, error, &agent),
            _ => {}
        }
    }

    /// Adds `parts` (a descendant's tool parts, or relayed ones) inside a step: when the root has
    /// none open (the response to an answer that resumed a child, not the root), they open one,
    /// as any continuation streamed into the client's message does, so `ai`'s predicates read
    /// them as a new step rather than the answered one.
    fn in_a_step(&mut self, out: &mut Vec<UiFrame>, parts: Vec<UiFrame>) {
        if parts.is_empty() {
            return;
        }
        if !self.step_open {
            out.push(UiChunk::StartStep.into());
            self.step_open = true;
        }
        out.extend(parts);
    }

    /// A remote child's forwarded chunk: the output of a relayed call the message holds, when it
    /// is that call's end; nothing else (see `relayed.rs`).
    fn forwarded(&mut self, chunk: &StreamChunk, out: &mut Vec<UiFrame>) {
        let ChunkKind::ToolEnd { result, error, .. } = &chunk.kind else {
            return;
        };
        let Some(id) = relayed::ended_call(chunk) else {
            return;
        };
        if let (true, Some(role)) = (self.known_calls.contains(&id), self.roles.get(&id)) {
            out.push(tool_output(&id, role, result, error).into());
        }
    }

    /// The parts of the relayed calls the message does not hold yet, each with its owner and,
    /// for an approval, its request.
    fn relayed_parts(&mut self, out: &mut Vec<UiFrame>) {
        for owned in std::mem::take(&mut self.relayed) {
            if owned.answer.is_some() || self.known_calls.contains(&owned.call.tool_call_id) {
                continue;
            }
            let Some(role) = owned.role(&self.registry) else {
                continue;
            };
            let call = &owned.call;
            let owner = Some((owned.session_id.as_str(), owned.agent_type.as_str()));
            let part = (
                call.tool_call_id.as_str(),
                call.tool_name.as_str(),
                &call.input,
            );
            self.call_part(out, part, role, owner);
            if let Some(approval_id) = &call.approval_id {
                self.approval_request(out, &call.tool_call_id, approval_id);
            }
        }
    }

    /// A call's part: its input, then (a descendant's) its owner `(agentId, agentType)`, and its
    /// render hint.
    fn call_part(
        &mut self,
        out: &mut Vec<UiFrame>,
        (tool_call_id, tool_name, input): (&str, &str, &Value),
        role: ToolRole,
        owner: Option<(&str, &str)>,
    ) {
        self.close_text(out);
        out.push(
            UiChunk::ToolInputAvailable {
                tool_call_id: tool_call_id.to_owned(),
                tool_name: tool_name.to_owned(),
                input: input.clone(),
                provider_executed: (!role.asks_a_person()).then_some(true),
                provider_metadata: owner.map(|(id, kind)| owner_metadata(tool_call_id, id, kind)),
            }
            .into(),
        );
        if let Some((agent_id, agent_type)) = owner {
            out.push(owner_part(tool_call_id, agent_id, agent_type).into());
        }
        if let ToolRole::Client {
            render: Some(render),
        } = &role
        {
            out.push(render_part(tool_call_id, render).into());
        }
        self.known_calls.insert(tool_call_id.to_owned());
        self.roles.insert(tool_call_id.to_owned(), role);
    }

    /// A call's output, for a call the message holds (of `agent`, whose role it has unless this
    /// response added it). A descendant's server calls have no part.
    fn call_output(
        &self,
        out: &mut Vec<UiFrame>,
        tool_call_id: &str,
        tool_name: &str,
        result: &Option<Value>,
        error: &Option<ToolError>,
        agent: &Agent,
    ) {
        if !self.known_calls.contains(tool_call_id) {
            return;
        }
        let role = self
            .roles
            .get(tool_call_id)
            .cloned()
            .unwrap_or_else(|| tool_role(agent, tool_name));
        out.push(tool_output(tool_call_id, &role, result, error).into());
    }

    /// The approval request of a call the message holds.
    fn approval_request(&self, out: &mut Vec<UiFrame>, tool_call_id: &str, approval_id: &str) {
        if self.known_calls.contains(tool_call_id) {
            out.push(
                UiChunk::ToolApprovalRequest {
                    approval_id: approval_id.to_owned(),
                    tool_call_id: tool_call_id.to_owned(),
                }
                .into(),
            );
        }
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

    /// A text delta, or a `reasoning` one, of chunk `(step, sequence)`: it ends the other kind's
    /// open part and goes to its own kind's, opened (and named in the step's parts) if none is.
    fn delta(
        &mut self,
        out: &mut Vec<UiFrame>,
        reasoning: bool,
        (step, sequence): (u32, u64),
        delta: &str,
    ) {
        self.close_open(out, !reasoning);
        let (open, kind) = if reasoning {
            (&mut self.open_reasoning, "reasoning")
        } else {
            (&mut self.open_text, "text")
        };
        let id = match open {
            Some(id) => id.clone(),
            None => {
                let id = format!("{kind}-{step}-{sequence}");
                *open = Some(id.clone());
                self.step_texts.push(id.clone());
                out.push(
                    match reasoning {
                        true => UiChunk::ReasoningStart { id: id.clone() },
                        false => UiChunk::TextStart { id: id.clone() },
                    }
                    .into(),
                );
                id
            }
        };
        let delta = delta.to_owned();
        out.push(
            match reasoning {
                true => UiChunk::ReasoningDelta { id, delta },
                false => UiChunk::TextDelta { id, delta },
            }
            .into(),
        );
    }

    /// Ends the open text part and the open reasoning part, if any.
    fn close_text(&mut self, out: &mut Vec<UiFrame>) {
        self.close_open(out, true);
        self.close_open(out, false);
    }

    /// Ends the open reasoning part (`reasoning`) or else the open text part, if any.
    fn close_open(&mut self, out: &mut Vec<UiFrame>, reasoning: bool) {
        if reasoning {
            if let Some(id) = self.open_reasoning.take() {
                out.push(UiChunk::ReasoningEnd { id }.into());
            }
        } else if let Some(id) = self.open_text.take() {
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

/// The message's finish, with its server-sent metadata: when it finished (the chunk's time)
/// and, at the end of a run, what the session spent (its tokens and the models that spent them).
fn finish(finish_reason: Option<FinishReason>, chunk: &StreamChunk) -> UiFrame {
    let usage = match &chunk.kind {
        ChunkKind::End { usage, .. } => Some(usage),
        _ => None,
    };
    let metadata = finish_metadata(chunk.header.timestamp, usage);
    UiChunk::Finish {
        finish_reason,
        message_metadata: Some(metadata),
    }
    .into()
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
