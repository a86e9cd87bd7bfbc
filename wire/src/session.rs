//! A session as clients see it: its status, its state, what a suspended run awaits, how a run
//! was stopped, an approval decision and what a stored answer means for its batch.

use crate::chunk::RunError;
use serde::{Deserialize, Serialize};

/// Session status values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum Status {
    Active,
    /// Waiting for client calls; no workflow runs.
    SuspendedClientTool,
    Completed,
    Failed,
    /// Stopped by an interrupt; a new message starts the next turn.
    Interrupted,
}

impl Status {
    /// The status a state hash's `status` field names.
    pub fn parse(value: &str) -> Option<Self> {
        value.parse().ok()
    }

    /// The snake_case form, as serialized and as stored.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Whether the session has ended (a suspended session has not: it waits for answers).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Interrupted)
    }
}

/// The state hash of a session, decoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    pub session_id: String,
    pub root_session_id: String,
    pub agent_type: String,
    pub status: Status,
    pub run_id: String,
    pub stream_id: String,
    pub step_count: u32,
    pub last_sequence: u64,
    pub created_at: u64,
    pub updated_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// Set while the session is suspended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<Suspension>,
    /// The workflow of the current (or last) run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// The stop recorded on the last run, until the next turn drains its calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopRecord>,
    /// Set between a resume's claim and its drain: the open calls are abandoned.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abandon_pending: bool,
    /// Whether Temporal runs the current run's workflow now (set by `/status`, which asks it;
    /// an `active` session whose workflow is not executing is stuck).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_executing: Option<bool>,
    /// The session's `userId`, `tags` and `metadata`, flat beside the other fields.
    #[serde(flatten)]
    pub meta: crate::meta::SessionMeta,
    /// The calls waiting on a person, each with its tool, input, kind, approval id, deadline,
    /// age and owning session: the session's own, and for a root those of its whole tree (set
    /// by `/status`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<crate::search::PendingDetail>,
    /// The service that started this session through the producer mount (a remote child), if
    /// one did: only that service, and operators, act on its tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<SessionOwner>,
}

/// Who a session started through the producer mount belongs to: the service principal that
/// started it and the caller's session it names. Written once, by the start; never taken from a
/// request's own fields on the public API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionOwner {
    /// The service principal's name (its key's configured name).
    pub service: String,
    /// The caller's session whose call started this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_session_id: Option<String>,
}

/// What a suspended run waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Suspension {
    pub run_id: String,
    pub step: u32,
    /// The awaited calls, in the order the model made them.
    pub tool_call_ids: Vec<String>,
}

/// How a run was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum StopKind {
    /// The session becomes `interrupted`.
    Interrupt,
    /// The session becomes `failed` with `framework_cancelled`.
    Abort,
}

/// A durable stop on a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StopRecord {
    pub run_id: String,
    pub kind: StopKind,
    pub at: u64,
}

/// A decision on an approval-gated call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecision {
    pub approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Arguments edited by the approver; the call runs with them instead of the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
}

/// What a stored answer means for its batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[strum(serialize_all = "snake_case")]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Continuation {
    /// Other calls of the batch are still unanswered: nothing continues yet.
    AwaitingBatch,
    /// Every call of the batch is answered (or lapsed): a resume continues the run.
    CallerResumes,
    /// The answer was already drained into the log by an earlier continuation (or another
    /// entry is draining it now).
    Consumed,
    /// The server resumed the session by itself on the batch's last answer: this run carries
    /// the turn on; follow the stream.
    NewRun { run_id: String },
}

impl StopKind {
    /// The snake_case form, as serialized and as stored.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl Continuation {
    /// The `kind` tag, as serialized and as a script answers it.
    pub fn kind(&self) -> &'static str {
        self.into()
    }
}
