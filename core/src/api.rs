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
