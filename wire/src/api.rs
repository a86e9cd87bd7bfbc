//! Request and answer bodies of the HTTP API, shared by the server and the client crate.

use serde::{Deserialize, Serialize};

/// Body of `POST /start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartRequest {
    /// The agent type.
    pub agent: String,
    /// The first user message.
    pub message: String,
    /// A session id of the caller's choosing: refused unless the server allows operators to
    /// choose (`--allow-client-session-ids`); otherwise the server makes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Answer of `POST /start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartResponse {
    pub session_id: String,
    pub run_id: String,
    pub workflow_id: String,
    pub stream_id: String,
    /// With built-in auth: a short-lived bearer token for this session only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// How a resume continues a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum ResumeMode {
    /// Drain the answered calls of a suspended session and call the model.
    Continue,
    /// Drain what a suspended session has (if anything), append a user message, call the model:
    /// the next turn of a conversation.
    WithMessage,
    /// Rewind the session to a checkpoint (`checkpointId`) and go on from there, with an
    /// optional message. A checkpoint whose step suspended awaits its calls again (unless
    /// `abandonPending` with a message drains them as abandoned).
    FromCheckpoint,
}

/// Body of `POST /resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResumeRequest {
    pub session_id: String,
    pub mode: ResumeMode,
    /// Required with `with_message`, refused with `continue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// With a message: answer every still-open call `client_tool_abandoned`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abandon_pending: bool,
    /// Required with `from_checkpoint`, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<u32>,
}

/// Answer of `POST /resume`: the new run and its workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeResponse {
    pub session_id: String,
    pub run_id: String,
    /// The new run's workflow; none when the run suspended at once (a rewind to a checkpoint
    /// whose calls are awaited again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// `active`, or `suspended_client_tool` when the run suspended at once.
    pub status: crate::session::Status,
}

/// Body of `POST /interrupt` and `POST /abort`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRequest {
    pub session_id: String,
}

/// Answer of `POST /interrupt` and `POST /abort`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StopResponse {
    pub session_id: String,
    /// The stopped run.
    pub run_id: String,
    /// `interrupted`, or `failed` for an abort.
    pub status: crate::session::Status,
}

/// Answer of `GET /snapshot`: a session's log pinned to a stream position. For a session that
/// has not ended, the log and `streamSequence` come from its newest checkpoint, read at once:
/// attach the stream at `fromSequence = streamSequence` and apply what follows. An ended session
/// (or one without a checkpoint) gives its whole log and `streamSequence: -1`, no position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotResponse {
    pub session_id: String,
    pub stream_id: String,
    pub status: crate::session::Status,
    pub state: SnapshotState,
    pub stream_sequence: i64,
    /// A `fromSequence` below this is no longer in the stream (`TRUNCATED`); 0 = all retained.
    pub oldest_retained_sequence: u64,
    pub step_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<u32>,
}

/// The session state a snapshot carries: its message log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotState {
    pub messages: Vec<crate::message::Message>,
}

/// Answer of `GET /usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageResponse {
    pub session_id: String,
    pub rollup: crate::usage::UsageRollup,
}
