//! `POST /fork`: a new session copied from another up to one of its checkpoints.

use serde::{Deserialize, Serialize};

/// Body of `POST /fork`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForkRequest {
    /// The session to copy (only read).
    pub session_id: String,
    /// The checkpoint to copy up to (see `checkpointId` in snapshots and rewinds).
    pub checkpoint: u32,
}

/// Answer of `POST /fork`: the new session. At a checkpoint whose step suspended it awaits the
/// same calls (`suspended_client_tool`); otherwise no run holds it (`interrupted`) and a rewind to
/// its checkpoint 0 replays the next step, or a message starts the next turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ForkResponse {
    pub session_id: String,
    pub stream_id: String,
    pub status: crate::session::Status,
    pub forked_from: String,
    pub checkpoint: u32,
    /// With built-in auth: a short-lived bearer token for the new session only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}
