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
    /// With `with_message`: answer every still-open call `client_tool_abandoned`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abandon_pending: bool,
}

/// Answer of `POST /resume`: the new run and its workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeResponse {
    pub session_id: String,
    pub run_id: String,
    pub workflow_id: String,
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
