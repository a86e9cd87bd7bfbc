//! The producer mount's wire: the bodies of `{base}/{agentType}/(start|resume|sse|status|
//! snapshot|usage|interrupt|abort)`, the status words of the remote-agent protocol, its error
//! envelope and the callback a start may ask for. A consumer (another Baton, or any service
//! speaking the protocol) needs only these types.
//!
//! Baton's statuses map onto the protocol's words in one place, [`Status::of`]: `active` is
//! `running`, `suspended_client_tool` is `paused` (awaiting a person: `awaitingClientTool`),
//! and the ended statuses keep their names (an abort is `failed`).

use crate::{
    ApiError, ErrorCode, Refusal, chunk::RunError, meta::SessionMeta, search::PendingDetail,
    session::Status as Baton,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Body of `POST {base}/{agentType}/start`. The session id is the caller's (a consumer derives
/// it from its own session and tool call, so a retried start names the same session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartRequest {
    pub session_id: String,
    /// The first user message; or give `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A structured first input (the tool call's arguments): a string is the message itself,
    /// anything else its compact JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Initial custom state (fields over the agent's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Where to POST when a turn of the session ends (see [`Callback`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback: Option<Callback>,
    /// The caller's session whose call this start is for. The producer records it with the
    /// calling service as the session's owner, and a start of an existing session attaches only
    /// for the same service and caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_session_id: Option<String>,
}

impl StartRequest {
    /// A start of session `session_id` with `message` and nothing else.
    pub fn new(session_id: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            session_id: session_id.into(),
            message: Some(message.into()),
            input: None,
            state: None,
            user_id: None,
            tags: Vec::new(),
            metadata: None,
            callback: None,
            caller_session_id: None,
        }
    }

    /// The session metadata the start carries.
    pub fn meta(&self) -> SessionMeta {
        SessionMeta {
            user_id: self.user_id.clone(),
            tags: self.tags.clone(),
            metadata: self.metadata.clone(),
        }
    }

    /// The first user message: `message`, or `input` as text; exactly one of them.
    pub fn first_message(&self) -> Result<String, ApiError> {
        let refuse = |message: &str| Err(ApiError::new(ErrorCode::ValidationError, message));
        match (&self.message, &self.input) {
            (Some(message), None) => Ok(message.clone()),
            (None, Some(Value::String(text))) => Ok(text.clone()),
            (None, Some(input)) => Ok(input.to_string()),
            (Some(_), Some(_)) => refuse("give message or input, not both"),
            (None, None) => refuse("a start needs a message or an input"),
        }
    }
}

/// A callback a start asks for: the producer POSTs a [`CallbackBody`] to `url` each time a
/// turn of the session ends, signed with the body's HMAC-SHA256 under `token` in
/// [`CALLBACK_SIGNATURE_HEADER`] (the token itself is never sent); retried until a 2xx, and
/// possibly delivered more than once (the body's `sequence` names the turn).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Callback {
    pub url: String,
    /// A per-call secret of the consumer's; never logged or shown.
    pub token: String,
}

/// Longest callback URL, in bytes.
pub const MAX_CALLBACK_URL_BYTES: usize = 2048;
/// Shortest and longest callback token, in bytes.
pub const CALLBACK_TOKEN_BYTES: std::ops::RangeInclusive<usize> = 16..=256;

impl Callback {
    /// Refuses a callback a producer cannot call or sign with as a `validation_error` (the
    /// token is never echoed): an `http(s)://` URL of at most [`MAX_CALLBACK_URL_BYTES`] without
    /// spaces or control characters, and a token of [`CALLBACK_TOKEN_BYTES`].
    pub fn check(&self) -> Result<(), ApiError> {
        let refuse = |message: String| Err(ApiError::new(ErrorCode::ValidationError, message));
        let web = self.url.starts_with("http://") || self.url.starts_with("https://");
        let clean = !self
            .url
            .chars()
            .any(|c| c.is_control() || c.is_whitespace());
        if !web || !clean || self.url.len() > MAX_CALLBACK_URL_BYTES {
            return refuse(format!(
                "callback.url must be an http:// or https:// URL of at most \
                 {MAX_CALLBACK_URL_BYTES} bytes"
            ));
        }
        if !CALLBACK_TOKEN_BYTES.contains(&self.token.len()) {
            return refuse(format!(
                "callback.token must be {} to {} bytes",
                CALLBACK_TOKEN_BYTES.start(),
                CALLBACK_TOKEN_BYTES.end()
            ));
        }
        Ok(())
    }
}

impl std::fmt::Debug for Callback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callback")
            .field("url", &self.url)
            .field("token", &"[token]")
            .finish()
    }
}

/// The header carrying a callback body's signature: `sha256=<hex of HMAC-SHA256(token, body)>`.
pub const CALLBACK_SIGNATURE_HEADER: &str = "x-baton-signature";

/// What a callback POSTs when a turn ends: enough for a consumer to tell which turn (a repeat
/// of the same `sequence` is the same turn, delivered again) and to fold it or read on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CallbackBody {
    pub session_id: String,
    pub agent_type: String,
    pub stream_id: String,
    /// The run whose turn ended.
    pub run_id: String,
    /// The stream sequence of the turn's `end` (or `suspended`) chunk: the turn's identity.
    pub sequence: u64,
    /// `completed`, `failed`, `interrupted` or `paused`.
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
}

/// Answer of `start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StartResponse {
    pub session_id: String,
    pub stream_id: String,
    pub run_id: String,
}

/// A session's status in the protocol's words (see the module's mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum Status {
    Running,
    /// Suspended until people answer its calls; no run executes.
    Paused,
    Completed,
    Failed,
    Interrupted,
}

impl Status {
    /// The one mapping of Baton's statuses onto the protocol's.
    pub fn of(status: Baton) -> Self {
        match status {
            Baton::Active => Self::Running,
            Baton::SuspendedClientTool => Self::Paused,
            Baton::Completed => Self::Completed,
            Baton::Failed => Self::Failed,
            Baton::Interrupted => Self::Interrupted,
        }
    }

    /// Whether a turn has ended in this status (every status but `running`).
    pub fn ends_a_turn(self) -> bool {
        self != Self::Running
    }
}

/// Answer of `GET {base}/{agentType}/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StatusResponse {
    pub session_id: String,
    pub agent_type: String,
    pub stream_id: String,
    pub status: Status,
    /// Whether Temporal runs the session's current run now (a `running` session that is not
    /// executing is stuck: its producer lost it).
    pub is_executing: bool,
    /// Whether the session waits for people (client tools or approvals, in it or below it).
    pub awaiting_client_tool: bool,
    pub step_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// Baton's extension: while `paused`, the calls the session (or a child below it) waits on
    /// a person for, as the API's `/status` details them (`toolCallId` is the producer's, which
    /// an answer relayed to `submit` names). Empty, and left out, otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_calls: Vec<PendingDetail>,
}

/// Answer of `POST {base}/{agentType}/resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResumeResponse {
    pub session_id: String,
    pub run_id: String,
    pub status: Status,
}

/// Answer of `POST {base}/{agentType}/interrupt` and `…/abort`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StopResponse {
    pub session_id: String,
    pub status: Status,
}

/// Answer of `GET {base}/{agentType}/snapshot`: the session's own custom state (projected on a
/// projected mount) pinned to a stream position: for a session that has not ended, its newest
/// checkpoint's state and `streamSequence`, read at once; an ended session, or one without a
/// checkpoint, gives its state with `streamSequence: -1`, no position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SnapshotResponse {
    pub session_id: String,
    pub stream_id: String,
    pub state: Value,
    pub stream_sequence: i64,
    /// The lowest valid cursor: a `fromSequence` at or above it is served whole, one below it
    /// is `TRUNCATED`; the oldest chunk held is this + 1 (0: every chunk is held).
    pub oldest_retained_sequence: u64,
    pub step_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<u32>,
}

/// Answer of `GET {base}/{agentType}/usage`: the recursive rollup (projected on a mount with a
/// usage projection).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageResponse {
    pub session_id: String,
    pub rollup: Value,
}

/// The mount's error envelope: `{code, error}` and the code's own fields (`streamId` of
/// `ALREADY_RUNNING`, `oldestRetainedSequence` of `TRUNCATED`). Made from an [`ApiError`] in
/// one place ([`ErrorBody::from`]), which renames Baton's not-found family `NOT_FOUND`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub error: String,
    #[serde(flatten, default, skip_serializing_if = "Map::is_empty")]
    pub details: Map<String, Value>,
}

impl From<ApiError> for ErrorBody {
    fn from(error: ApiError) -> Self {
        let code = match error.code {
            ErrorCode::SessionNotFound | ErrorCode::UnknownAgentType => ErrorCode::NotFound,
            code => code,
        };
        Self {
            code,
            error: error.error,
            details: error.details,
        }
    }
}

impl ErrorBody {
    /// The typed fields the envelope carries, if any.
    pub fn refusal(&self) -> Option<Refusal> {
        Refusal::from_fields(&self.details)
    }

    /// The envelope as Baton's error (its code's retryability from the one table).
    pub fn into_api_error(self) -> ApiError {
        let mut error = ApiError::new(self.code, self.error);
        error.details = self.details;
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_renames_not_found_and_keeps_the_other_codes_and_fields() {
        let missing = ErrorBody::from(ApiError::new(ErrorCode::SessionNotFound, "no session s"));
        assert_eq!(
            serde_json::to_value(&missing).unwrap(),
            serde_json::json!({"code": "NOT_FOUND", "error": "no session s"})
        );
        let attach = ErrorBody::from(ApiError::new(ErrorCode::AlreadyRunning, "exists").with(
            Refusal::AlreadyRunning {
                stream_id: "st1".into(),
            },
        ));
        let json = serde_json::to_value(&attach).unwrap();
        assert_eq!(json["code"], "ALREADY_RUNNING");
        assert_eq!(json["streamId"], "st1");
        let back: ErrorBody = serde_json::from_value(json).unwrap();
        assert_eq!(
            back.refusal(),
            Some(Refusal::AlreadyRunning {
                stream_id: "st1".into()
            })
        );
        let kept = ErrorBody::from(ApiError::new(ErrorCode::ValidationError, "bad"));
        assert_eq!(kept.code, ErrorCode::ValidationError);
        assert!(!kept.into_api_error().retryable);
    }

    #[test]
    fn statuses_map_once_and_a_start_takes_one_first_message() {
        assert_eq!(Status::of(Baton::Active), Status::Running);
        assert_eq!(Status::of(Baton::SuspendedClientTool), Status::Paused);
        assert_eq!(Status::of(Baton::Failed), Status::Failed);
        assert!(!Status::Running.ends_a_turn() && Status::Paused.ends_a_turn());
        let mut start = StartRequest::new("s1", "hi");
        assert_eq!(start.first_message().unwrap(), "hi");
        start.input = Some(serde_json::json!({"topic": "x"}));
        assert!(start.first_message().is_err());
        start.message = None;
        assert_eq!(start.first_message().unwrap(), r#"{"topic":"x"}"#);
        start.input = None;
        assert!(start.first_message().is_err());
        let callback = Callback {
            url: "http://c".into(),
            token: "secret".into(),
        };
        assert!(!format!("{callback:?}").contains("secret"));
        assert!(callback.check().is_err(), "a short token");
        let good = Callback {
            url: "https://consumer.example/callbacks/1".into(),
            token: "t".repeat(16),
        };
        assert!(good.check().is_ok());
        for url in ["ftp://x", "http://a b", "", "javascript:x"] {
            let bad = Callback {
                url: url.into(),
                ..good.clone()
            };
            assert!(bad.check().is_err(), "{url}");
        }
    }
}
