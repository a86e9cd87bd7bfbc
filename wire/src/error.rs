//! Stable error codes and the one table that maps each code to an HTTP status, a gRPC status and
//! whether a client may retry.

use crate::refusal::Refusal;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A stable, snake_case error code. Clients match on these; never rename one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum ErrorCode {
    /// The request body or a parameter is malformed.
    ValidationError,
    /// `/start` named an agent type that no registry holds.
    UnknownAgentType,
    /// The initial custom state of `/start` is not a JSON object, or does not match the agent's
    /// state schema once its defaults are filled in (or the agent declares no state).
    InvalidState,
    /// No session with that id exists (under this key prefix).
    SessionNotFound,
    /// A session with that id already exists.
    SessionAlreadyExists,
    /// The run called tools for `max_steps` steps without answering.
    MaxStepsExceeded,
    /// The model failed in a way that retrying will not fix.
    ModelFailed,
    /// The model provider kept throttling the calls (HTTP 429) through every attempt.
    ModelRateLimited,
    /// The model provider was overloaded, failing or unreachable through every attempt.
    ModelUnavailable,
    /// The model provider refused the credentials (HTTP 401/403): a configuration problem.
    ModelAuthFailed,
    /// The conversation no longer fits the model's context window.
    ModelContextLengthExceeded,
    /// The model provider refused the request (HTTP 400/404/422, a spent quota).
    ModelRequestRejected,
    /// The model provider answered with something that is not its wire format, or with tool
    /// arguments that are not JSON.
    ModelBadResponse,
    /// A server tool's input did not match its schema.
    InvalidToolInput,
    /// A server tool returned an error.
    ToolFailed,
    /// A server tool panicked.
    ToolPanicked,
    /// The model called a tool the agent does not have.
    UnknownTool,
    /// The run was already finished when the operation reached it.
    RunNotActive,
    /// Temporal could not be reached or refused the workflow start.
    TemporalUnavailable,
    /// Redis could not be reached or a script failed.
    StoreUnavailable,
    /// A submit named a tool call that nothing awaits (or whose run was stopped).
    UnknownToolCall,
    /// A submit reached a call whose run another entry has superseded; nothing was written.
    StateRunSuperseded,
    /// A submitted result does not match the tool's output schema.
    #[serde(rename = "INVALID_RESULT")]
    #[strum(serialize = "INVALID_RESULT")]
    InvalidResult,
    /// A submitted answer or a request body is over the size limit.
    ValidationPayloadTooLarge,
    /// The session cannot be resumed now (calls still awaited, or nothing to continue).
    StateNotResumable,
    /// A run of the session is executing.
    StateAlreadyRunning,
    /// The run was aborted.
    FrameworkCancelled,
    /// A `from_checkpoint` resume named a checkpoint the session does not have.
    CheckpointNotFound,
    /// No credentials, or credentials that do not check out.
    Unauthorized,
    /// A session-bound token used on another session.
    SessionMismatch,
    /// The caller's credentials do not allow this operation.
    Forbidden,
    /// Too many requests; `retryAfter` (seconds) says when to try again.
    RateLimited,
    /// The stream no longer holds the requested position (below `oldestRetainedSequence`).
    #[serde(rename = "TRUNCATED")]
    #[strum(serialize = "TRUNCATED")]
    Truncated,
    /// The run's workflow was gone (it never started, or it ended without ending the run): a
    /// worker's sweep failed the session that it left `active`.
    RunLost,
    /// A stored row Baton cannot read (corrupt, or of a shape it does not know): permanent, so
    /// not retryable, since a repeat would read the same row. Details are logged, never shown.
    FrameworkInternalError,
    /// Anything else; details are logged, never shown.
    Internal,
    /// The producer mount (`{base}/{agentType}/…`): no such session, an agent type the mount
    /// does not serve, or a session of another type than the route names.
    #[serde(rename = "NOT_FOUND")]
    #[strum(serialize = "NOT_FOUND")]
    NotFound,
    /// The producer mount's `start` for a session that exists (running, suspended or ended):
    /// attach to it by its `streamId`, which the body carries; no second run was started.
    #[serde(rename = "ALREADY_RUNNING")]
    #[strum(serialize = "ALREADY_RUNNING")]
    AlreadyRunning,
    /// The producer mount cannot serve this read (a mount without usage).
    #[serde(rename = "FEATURE_UNAVAILABLE")]
    #[strum(serialize = "FEATURE_UNAVAILABLE")]
    FeatureUnavailable,
    /// The HTTP API has no route at that path (gRPC answers an unknown method itself).
    RouteNotFound,
    /// The path is a route of the HTTP API, but not with that method (the `Allow` header lists
    /// the methods it has).
    MethodNotAllowed,
    /// The server holds as many connections as it is configured to (`--max-connections`); this
    /// one is answered and closed. Another server, or this one a moment later, takes it.
    ServerBusy,
    /// A remote sub-agent's producer could not be reached, or kept failing, through every retry
    /// (the call's tool error; the parent's run goes on).
    RemoteUnavailable,
    /// A remote sub-agent's child stayed `running` with no run executing over every attach the
    /// consumer made: its producer lost it (the call's tool error).
    ProducerDead,
    /// A remote sub-agent's child waits for a person (a client tool or an approval), which this
    /// consumer does not relay across the boundary (the call's tool error).
    ClientToolUnsupported,
}

/// The gRPC status codes Baton uses, numbered as in `google.rpc.Code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum GrpcCode {
    InvalidArgument = 3,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    Unauthenticated = 16,
}

/// How one error code is presented on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Presentation {
    pub http_status: u16,
    pub grpc: GrpcCode,
    pub retryable: bool,
}

impl ErrorCode {
    /// The one table: every code's HTTP status, gRPC status and retryability.
    pub const fn presentation(self) -> Presentation {
        use GrpcCode as G;
        let (http_status, grpc, retryable) = match self {
            Self::ValidationError => (400, G::InvalidArgument, false),
            Self::UnknownAgentType => (404, G::NotFound, false),
            Self::InvalidState => (400, G::InvalidArgument, false),
            Self::SessionNotFound => (404, G::NotFound, false),
            Self::SessionAlreadyExists => (409, G::AlreadyExists, false),
            Self::MaxStepsExceeded => (422, G::FailedPrecondition, false),
            Self::ModelFailed => (502, G::Aborted, false),
            Self::ModelRateLimited => (429, G::ResourceExhausted, true),
            Self::ModelUnavailable => (503, G::Unavailable, true),
            Self::ModelAuthFailed => (502, G::FailedPrecondition, false),
            Self::ModelContextLengthExceeded => (422, G::FailedPrecondition, false),
            Self::ModelRequestRejected => (502, G::FailedPrecondition, false),
            Self::ModelBadResponse => (502, G::Internal, false),
            Self::InvalidToolInput => (400, G::InvalidArgument, false),
            Self::ToolFailed => (500, G::Aborted, false),
            Self::ToolPanicked => (500, G::Aborted, false),
            Self::UnknownTool => (400, G::InvalidArgument, false),
            Self::RunNotActive => (409, G::FailedPrecondition, false),
            Self::TemporalUnavailable => (503, G::Unavailable, true),
            Self::StoreUnavailable => (503, G::Unavailable, true),
            Self::UnknownToolCall => (404, G::NotFound, false),
            Self::StateRunSuperseded => (409, G::Aborted, false),
            Self::InvalidResult => (400, G::InvalidArgument, false),
            Self::ValidationPayloadTooLarge => (413, G::InvalidArgument, false),
            Self::StateNotResumable => (409, G::FailedPrecondition, true),
            Self::StateAlreadyRunning => (409, G::FailedPrecondition, false),
            Self::FrameworkCancelled => (409, G::Aborted, false),
            Self::CheckpointNotFound => (404, G::NotFound, false),
            Self::Unauthorized => (401, G::Unauthenticated, false),
            Self::SessionMismatch => (403, G::PermissionDenied, false),
            Self::Forbidden => (403, G::PermissionDenied, false),
            Self::RateLimited => (429, G::ResourceExhausted, true),
            Self::Truncated => (410, G::OutOfRange, false),
            Self::RunLost => (500, G::Aborted, false),
            Self::FrameworkInternalError => (500, G::Internal, false),
            Self::Internal => (500, G::Internal, false),
            Self::NotFound => (404, G::NotFound, false),
            Self::AlreadyRunning => (409, G::AlreadyExists, false),
            Self::FeatureUnavailable => (404, G::NotFound, false),
            Self::RouteNotFound => (404, G::NotFound, false),
            Self::MethodNotAllowed => (405, G::Unimplemented, false),
            Self::ServerBusy => (503, G::Unavailable, true),
            Self::RemoteUnavailable => (503, G::Unavailable, true),
            Self::ProducerDead => (502, G::Unavailable, false),
            Self::ClientToolUnsupported => (409, G::FailedPrecondition, false),
        };
        Presentation {
            http_status,
            grpc,
            retryable,
        }
    }

    /// The snake_case form, as serialized.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as a client sees it: a code, a message meant for people, whether to retry (the code
/// table's answer, never set by hand), and the code's own fields (e.g. `limitBytes` of
/// `validation_payload_too_large`): a [`Refusal`], kept as its JSON so that the body reads and
/// writes as sent (`refusal` gives the typed form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[error("{code}: {error}")]
pub struct ApiError {
    /// Human-readable message.
    pub error: String,
    pub code: ErrorCode,
    pub retryable: bool,
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub details: serde_json::Map<String, serde_json::Value>,
}

impl ApiError {
    pub fn new(code: ErrorCode, error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            code,
            retryable: code.presentation().retryable,
            details: serde_json::Map::new(),
        }
    }

    /// Adds the refusal's own fields, e.g. `with(Refusal::RetryAfter { retry_after: 3 })`. A
    /// final refusal ([`Refusal::is_final`]) makes the error not retryable: with the code table,
    /// the one place `retryable` is decided.
    pub fn with(mut self, refusal: Refusal) -> Self {
        self.retryable &= !refusal.is_final();
        self.details.extend(refusal.into_fields());
        self
    }

    /// The refusal the details are, if they have one of its shapes.
    pub fn refusal(&self) -> Option<Refusal> {
        Refusal::from_fields(&self.details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialized_code_matches_as_str_and_table() {
        use strum::IntoEnumIterator;
        for code in ErrorCode::iter() {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().to_owned()));
            let back: ErrorCode = serde_json::from_value(json).unwrap();
            assert_eq!(back, code);
        }
        assert_eq!(ErrorCode::UnknownAgentType.presentation().http_status, 404);
        assert!(ErrorCode::TemporalUnavailable.presentation().retryable);
        assert!(!ErrorCode::MaxStepsExceeded.presentation().retryable);
        let api = ApiError::new(ErrorCode::StoreUnavailable, "redis down");
        assert!(api.retryable);
        assert_eq!(ErrorCode::InvalidResult.as_str(), "INVALID_RESULT");
        let detailed = ApiError::new(ErrorCode::ValidationPayloadTooLarge, "too big").with(
            Refusal::PayloadTooLarge {
                cause: crate::refusal::Payload::ToolResult,
                limit_bytes: 10,
                size_bytes: 12,
            },
        );
        let json = serde_json::to_string(&detailed).unwrap();
        assert_eq!(
            json,
            r#"{"error":"too big","code":"validation_payload_too_large","retryable":false,"cause":"tool_result","limitBytes":10,"sizeBytes":12}"#
        );
        let back = serde_json::from_str::<ApiError>(&json).unwrap();
        assert_eq!(back, detailed);
        assert_eq!(back.refusal(), detailed.refusal());
        assert!(matches!(
            back.refusal(),
            Some(Refusal::PayloadTooLarge { size_bytes: 12, .. })
        ));
        assert_eq!(api.refusal(), None);
    }

    #[test]
    fn only_a_final_refusal_narrows_the_tables_retryable() {
        use crate::refusal::NotStored;
        let awaited = ApiError::new(ErrorCode::StateNotResumable, "calls still awaited").with(
            Refusal::CallsAwaited {
                awaited_tool_call_ids: vec!["c1".into()],
            },
        );
        assert!(
            awaited.retryable,
            "a partial batch is retried once answered"
        );
        let not_stored = ApiError::new(ErrorCode::StateNotResumable, "not stored").with(
            Refusal::AnswersNotStored {
                cause: NotStored::AnswerNotStored,
                tool_call_ids: vec!["c2".into()],
            },
        );
        assert!(
            !not_stored.retryable,
            "its stored answers are in: never repeated as sent"
        );
        assert_eq!(not_stored.code, ErrorCode::StateNotResumable);
        let json = serde_json::to_string(&not_stored).unwrap();
        assert_eq!(
            json,
            r#"{"error":"not stored","code":"state_not_resumable","retryable":false,"cause":"answer_not_stored","toolCallIds":["c2"]}"#
        );
        // A final refusal never makes a non-retryable code retryable.
        let refused = ApiError::new(ErrorCode::ValidationError, "x").with(Refusal::ToolCall {
            tool_call_id: "c3".into(),
        });
        assert!(!refused.retryable);
    }

    #[test]
    fn the_readme_error_table_is_the_code_table() {
        use strum::IntoEnumIterator;
        let readme = include_str!("../../README.md");
        let rows: Vec<(String, u16, bool)> = readme
            .lines()
            .skip_while(|line| !line.starts_with("| code | status | retryable |"))
            .skip(2)
            .take_while(|line| line.starts_with("| `"))
            .map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                (
                    cells[1].trim_matches('`').to_owned(),
                    cells[2].parse().unwrap(),
                    cells[3] == "yes",
                )
            })
            .collect();
        let expected: Vec<(String, u16, bool)> = ErrorCode::iter()
            .map(|code| {
                let presentation = code.presentation();
                (
                    code.as_str().to_owned(),
                    presentation.http_status,
                    presentation.retryable,
                )
            })
            .collect();
        let mut rows_sorted = rows.clone();
        let mut expected_sorted = expected.clone();
        rows_sorted.sort();
        expected_sorted.sort();
        assert_eq!(rows_sorted, expected_sorted, "README.md's error table");
    }
}
