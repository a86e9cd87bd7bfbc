//! Request and answer bodies of the HTTP API, shared by the server and the client crate.

use crate::{ApiError, ErrorCode, meta::SessionMeta};
use serde::{Deserialize, Serialize};

/// Body of `POST /start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// Initial custom state, for an agent that declares a state schema: a JSON object whose
    /// fields override the agent's defaults; the result must match the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<serde_json::Value>,
    /// The end user the session is for (see [`SessionMeta`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Short labels to search by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// A small JSON object of the caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

impl StartRequest {
    /// A start of `agent` with `message` and nothing else.
    pub fn new(agent: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            agent: agent.into(),
            message: message.into(),
            session_id: None,
            state: None,
            user_id: None,
            tags: Vec::new(),
            metadata: None,
        }
    }

    /// The session metadata this start carries (its fields stay flat on the wire, as the
    /// body refuses unknown fields and serde cannot flatten with that).
    pub fn meta(&self) -> SessionMeta {
        SessionMeta {
            user_id: self.user_id.clone(),
            tags: self.tags.clone(),
            metadata: self.metadata.clone(),
        }
    }
}

/// Answer of `POST /start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

/// A resume, typed by its mode: what each mode carries and nothing else. The body a client sends
/// is its [`ResumeRequest`] form; a server reads the body and checks it into this with
/// [`ResumeRequest::checked`], whose refusals are the API's fixed messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// Drain the answered calls of a suspended session and call the model.
    Continue,
    /// The next turn: drain what the session has (abandoning still-open calls when asked),
    /// append `message`, call the model.
    WithMessage {
        message: String,
        abandon_pending: bool,
    },
    /// Rewind to a checkpoint and go on from there, with an optional message. With a checkpoint
    /// whose step suspended, `abandon_pending` (which needs a message) drains its calls.
    FromCheckpoint {
        checkpoint_id: u32,
        message: Option<String>,
        abandon_pending: bool,
    },
}

impl Resume {
    /// The body that asks for this resume of `session_id`.
    pub fn request(self, session_id: &str) -> ResumeRequest {
        let session_id = session_id.to_owned();
        match self {
            Self::Continue => ResumeRequest {
                session_id,
                mode: ResumeMode::Continue,
                message: None,
                abandon_pending: false,
                checkpoint_id: None,
            },
            Self::WithMessage {
                message,
                abandon_pending,
            } => ResumeRequest {
                session_id,
                mode: ResumeMode::WithMessage,
                message: Some(message),
                abandon_pending,
                checkpoint_id: None,
            },
            Self::FromCheckpoint {
                checkpoint_id,
                message,
                abandon_pending,
            } => ResumeRequest {
                session_id,
                mode: ResumeMode::FromCheckpoint,
                message,
                abandon_pending,
                checkpoint_id: Some(checkpoint_id),
            },
        }
    }

    /// The message the resume appends, if any.
    pub fn message(&self) -> Option<&str> {
        match self {
            Self::Continue => None,
            Self::WithMessage { message, .. } => Some(message),
            Self::FromCheckpoint { message, .. } => message.as_deref(),
        }
    }

    /// Whether still-open calls are drained as abandoned.
    pub fn abandon_pending(&self) -> bool {
        match self {
            Self::Continue => false,
            Self::WithMessage {
                abandon_pending, ..
            }
            | Self::FromCheckpoint {
                abandon_pending, ..
            } => *abandon_pending,
        }
    }
}

impl ResumeRequest {
    /// The typed resume this body asks for, or the fixed refusal of a field its mode does not
    /// take (or lacks). The message itself (empty, too long) is the server's to judge.
    pub fn checked(self) -> Result<Resume, ApiError> {
        let refuse = |message: &str| Err(ApiError::new(ErrorCode::ValidationError, message));
        match (self.mode, self.message, self.checkpoint_id) {
            (ResumeMode::Continue | ResumeMode::WithMessage, _, Some(_)) => {
                refuse("checkpointId goes with mode from_checkpoint only")
            }
            (ResumeMode::Continue, None, None) if !self.abandon_pending => Ok(Resume::Continue),
            (ResumeMode::Continue, _, None) => {
                refuse("mode continue takes no message and no abandonPending; use with_message")
            }
            (ResumeMode::WithMessage, None, None) => refuse("mode with_message needs a message"),
            (ResumeMode::WithMessage, Some(message), None) => Ok(Resume::WithMessage {
                message,
                abandon_pending: self.abandon_pending,
            }),
            (ResumeMode::FromCheckpoint, None, _) if self.abandon_pending => {
                refuse("abandonPending goes with a message")
            }
            (ResumeMode::FromCheckpoint, _, None) => {
                refuse("mode from_checkpoint needs a checkpointId")
            }
            (ResumeMode::FromCheckpoint, message, Some(checkpoint_id)) => {
                Ok(Resume::FromCheckpoint {
                    checkpoint_id,
                    message,
                    abandon_pending: self.abandon_pending,
                })
            }
        }
    }
}

/// Answer of `POST /resume`: the new run and its workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRequest {
    pub session_id: String,
}

/// Answer of `POST /interrupt` and `POST /abort`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StopResponse {
    pub session_id: String,
    /// The stopped run.
    pub run_id: String,
    /// `interrupted`, or `failed` for an abort.
    pub status: crate::session::Status,
}

/// Answer of `POST /delete` (and a chat's `DELETE /chat/{id}`): the deleted tree's root and
/// how many sessions went with it (the root and every session below it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeleteResponse {
    pub session_id: String,
    pub deleted_sessions: u32,
}

/// Answer of `GET /snapshot`: a session's custom state and log pinned to a stream position. For
/// a session that has not ended, both and `streamSequence` come from its newest checkpoint,
/// read at once: attach the stream at `fromSequence = streamSequence` and apply what follows
/// (the session's own `state_patch` chunks rebuild its state). An ended session (or one without
/// a checkpoint) gives its final state and whole log and `streamSequence: -1`, no position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SnapshotResponse {
    pub session_id: String,
    pub stream_id: String,
    pub status: crate::session::Status,
    /// This session's own custom state: a JSON object, `{}` for an agent that declares none.
    pub state: serde_json::Value,
    /// The message log.
    pub messages: Vec<crate::message::Message>,
    pub stream_sequence: i64,
    /// The lowest valid cursor: a `fromSequence` at or above it is served whole, one below it
    /// is `TRUNCATED`; the oldest chunk held is this + 1 (0: every chunk is held).
    pub oldest_retained_sequence: u64,
    pub step_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<u32>,
    /// The session's `userId`, `tags` and `metadata`, flat beside the other fields.
    #[serde(flatten)]
    pub meta: crate::meta::SessionMeta,
}

/// Answer of `GET /usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageResponse {
    pub session_id: String,
    pub rollup: crate::usage::UsageRollup,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(
        mode: ResumeMode,
        message: Option<&str>,
        abandon: bool,
        checkpoint: Option<u32>,
    ) -> ResumeRequest {
        ResumeRequest {
            session_id: "s1".into(),
            mode,
            message: message.map(str::to_owned),
            abandon_pending: abandon,
            checkpoint_id: checkpoint,
        }
    }

    #[test]
    fn a_resume_body_checks_into_its_mode_or_a_fixed_refusal() {
        use ResumeMode::*;
        let typed = [
            Resume::Continue,
            Resume::WithMessage {
                message: "next".into(),
                abandon_pending: true,
            },
            Resume::FromCheckpoint {
                checkpoint_id: 2,
                message: None,
                abandon_pending: false,
            },
            Resume::FromCheckpoint {
                checkpoint_id: 0,
                message: Some("again".into()),
                abandon_pending: true,
            },
        ];
        for resume in typed {
            let request = resume.clone().request("s1");
            assert_eq!(request.session_id, "s1");
            assert_eq!(request.clone().checked(), Ok(resume.clone()));
            let json = serde_json::to_string(&request).unwrap();
            let back: ResumeRequest = serde_json::from_str(&json).unwrap();
            assert_eq!(back.checked(), Ok(resume));
        }
        for (request, refusal) in [
            (
                body(Continue, None, false, Some(1)),
                "checkpointId goes with mode from_checkpoint only",
            ),
            (
                body(WithMessage, Some("m"), false, Some(1)),
                "checkpointId goes with mode from_checkpoint only",
            ),
            (
                body(Continue, Some("m"), false, None),
                "mode continue takes no message and no abandonPending; use with_message",
            ),
            (
                body(Continue, None, true, None),
                "mode continue takes no message and no abandonPending; use with_message",
            ),
            (
                body(WithMessage, None, false, None),
                "mode with_message needs a message",
            ),
            (
                body(FromCheckpoint, None, true, Some(1)),
                "abandonPending goes with a message",
            ),
            (
                body(FromCheckpoint, Some("m"), false, None),
                "mode from_checkpoint needs a checkpointId",
            ),
        ] {
            let error = request.clone().checked().unwrap_err();
            assert_eq!(
                (error.code, error.error.as_str()),
                (ErrorCode::ValidationError, refusal),
                "{request:?}"
            );
        }
    }
}
