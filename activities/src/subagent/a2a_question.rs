//! An A2A task that asks for input (`input-required`), across the boundary: its question is
//! recorded in the caller as relayed calls (`relay_remote_calls.lua`, as a Baton child's pause
//! is), so the caller's root lists them and a person answers them through the API, `useChat`,
//! the console or the CLI; the server sends each answer as a message on the task
//! (`worker/src/remote/relay.rs`). A question is read in one of two shapes:
//!
//! - Baton's own (an agent served by Baton lists `pendingCalls` in a data part): each listed
//!   call is relayed as it is, with its tool, kind, input, deadline and schema;
//! - any other agent's: one client call named [`QUESTION_TOOL`] whose input is the question's
//!   text, its data and the task, rendered as a form when a data part carries a JSON Schema
//!   (`schema`, `requestedSchema` or `outputSchema`).

use super::a2a::{A2aFollow, text_of};
use crate::failure::Error;
use baton_core::{
    a2a::{Part, Task},
    search::PersonCallKind,
    store::{self, A2aQuestion, PendingCall, PendingKind, Recorded, RelayedCall},
    subagent,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The tool name a question of an agent that is not Baton is relayed under.
pub(super) const QUESTION_TOOL: &str = "input_required";

/// One call of Baton's `pendingCalls`, as Baton's A2A server lists it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    tool_call_id: String,
    tool_name: String,
    kind: PersonCallKind,
    #[serde(default)]
    input: Value,
    #[serde(default)]
    deadline_at: Option<u64>,
    #[serde(default)]
    output_schema: Option<Value>,
    #[serde(default)]
    approval_id: Option<String>,
}

/// The data parts of the task's question, merged.
fn question_data(task: &Task) -> Map<String, Value> {
    let mut data = Map::new();
    for part in task
        .status
        .message
        .iter()
        .flat_map(|message| &message.parts)
    {
        if let Part::Data { data: more, .. } = part {
            data.extend(more.clone());
        }
    }
    data
}

fn listed(data: &Map<String, Value>) -> Option<Vec<Listed>> {
    serde_json::from_value(data.get("pendingCalls")?.clone()).ok()
}

/// The id of a question of an agent that is not Baton: its message's id, else the task's.
fn question_id(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|message| message.message_id.clone())
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| format!("{}/input", task.id))
}

/// The producer's ids of what `task` asks.
pub(super) fn producer_ids(task: &Task) -> Vec<String> {
    match listed(&question_data(task)) {
        Some(calls) => calls.into_iter().map(|call| call.tool_call_id).collect(),
        None => vec![question_id(task)],
    }
}

impl A2aFollow<'_> {
    /// Records what `task` asks as the caller's relayed calls, at the child sequence
    /// `end_sequence`.
    pub(super) async fn record_question(
        &self,
        task: &Task,
        end_sequence: u64,
    ) -> Result<Recorded, Error> {
        let now = store::now_ms();
        let data = question_data(task);
        let relay = |as_submit| {
            Some(A2aQuestion {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                as_submit,
            })
        };
        let relayed = |producer_call_id: String, call: PendingCall| RelayedCall {
            call,
            via_call_id: self.call.id.clone(),
            child_session_id: self.child.clone(),
            producer_call_id,
            producer_approval_id: None,
            render: None,
            a2a: None,
        };
        let calls: Vec<RelayedCall> = match listed(&data) {
            Some(listed) => listed
                .into_iter()
                .map(|listed| {
                    let id = subagent::relayed_call_id(&self.child, &listed.tool_call_id);
                    let (kind, approval_id) = match listed.kind {
                        PersonCallKind::ClientTool => (PendingKind::Client, None),
                        PersonCallKind::Approval => (
                            PendingKind::Approval,
                            Some(store::approval_id(&self.step.run_id, &id)),
                        ),
                    };
                    let render = listed
                        .output_schema
                        .map(|schema| json!({"kind": "elicitation", "outputSchema": schema}));
                    RelayedCall {
                        producer_approval_id: listed.approval_id,
                        render,
                        a2a: relay(true),
                        ..relayed(
                            listed.tool_call_id,
                            PendingCall {
                                tool_call_id: id,
                                tool_name: listed.tool_name,
                                input: listed.input,
                                kind,
                                step: self.step.step,
                                deadline_at: listed.deadline_at.unwrap_or(store::NO_DEADLINE),
                                completed_retention_ms: 0,
                                approval_id,
                                awaited_since: now,
                                asked: None,
                            },
                        )
                    }
                })
                .collect(),
            None => {
                let producer_id = question_id(task);
                let parts = task
                    .status
                    .message
                    .as_ref()
                    .map(|message| message.parts.as_slice())
                    .unwrap_or_default();
                let text: Vec<String> = parts
                    .iter()
                    .filter_map(|part| match part {
                        Part::Text { text, .. } => Some(text.clone()),
                        _ => None,
                    })
                    .collect();
                let schema = ["schema", "requestedSchema", "outputSchema"]
                    .iter()
                    .find_map(|key| data.get(*key).filter(|schema| schema.is_object()).cloned());
                let input = json!({
                    "question": if text.is_empty() { text_of(parts) } else { text.join("\n") },
                    "data": data,
                    "agent": self.call.name,
                    "taskId": task.id,
                });
                vec![RelayedCall {
                    render: schema
                        .map(|schema| json!({"kind": "elicitation", "outputSchema": schema})),
                    a2a: relay(false),
                    ..relayed(
                        producer_id.clone(),
                        PendingCall {
                            tool_call_id: subagent::relayed_call_id(&self.child, &producer_id),
                            tool_name: QUESTION_TOOL.to_owned(),
                            input,
                            kind: PendingKind::Client,
                            step: self.step.step,
                            deadline_at: store::NO_DEADLINE,
                            completed_retention_ms: 0,
                            approval_id: None,
                            awaited_since: now,
                            asked: None,
                        },
                    )
                }]
            }
        };
        let recorded = self
            .activities
            .store
            .record_relayed_calls(
                self.mode,
                self.step.step_ref(),
                &self.child,
                end_sequence,
                &self.call.id,
                &calls,
            )
            .await?;
        tracing::info!(
            session = %self.step.address.session_id,
            child = %self.child,
            task = %task.id,
            calls = calls.len(),
            ?recorded,
            "an A2A task's question is relayed to its caller's tree"
        );
        Ok(recorded)
    }
}
