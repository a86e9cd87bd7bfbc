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
    pub status: crate::store::Status,
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
    pub status: crate::store::Status,
}
