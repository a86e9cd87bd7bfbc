//! A refused A2A request as a JSON-RPC error: the protocol's code for what went wrong, a clear
//! message, and Baton's own error body (its `code`, `error`, `retryable` and typed fields) as
//! `data`, so a client that knows Baton reads the refusal it would get from the API. The one
//! table from Baton's codes to A2A's is [`rpc_code`].

use baton_core::{ApiError, ErrorCode, a2a::JsonRpcError, a2a::codes};
use serde_json::Value;

/// A refused A2A request.
#[derive(Debug)]
pub(super) struct RpcError {
    code: i32,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    pub(super) fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(super) fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    pub(super) fn task_not_found(message: impl Into<String>) -> Self {
        Self::new(codes::TASK_NOT_FOUND, message)
    }

    /// The same refusal under another A2A code (a stop of an ended task is `TaskNotCancelable`).
    pub(super) fn with_code(mut self, code: i32) -> Self {
        self.code = code;
        self
    }

    #[cfg(test)]
    pub(super) fn code(&self) -> i32 {
        self.code
    }

    /// The JSON-RPC error object.
    pub(super) fn into_object(self) -> JsonRpcError {
        if self.code == codes::INTERNAL_ERROR {
            tracing::error!(error = %self.message, "A2A request failed");
        } else {
            tracing::debug!(code = self.code, error = %self.message, "A2A request refused");
        }
        JsonRpcError {
            code: self.code,
            message: self.message,
            data: self.data,
        }
    }
}

impl From<ApiError> for RpcError {
    fn from(error: ApiError) -> Self {
        let data = serde_json::to_value(&error).ok();
        Self {
            code: rpc_code(error.code),
            message: error.error,
            data,
        }
    }
}

/// A2A's code for a Baton refusal: what names no task the caller has is `TaskNotFound`, a
/// request that does not fit the task's state or the agent's schemas is invalid params, what
/// this server does not offer is `UnsupportedOperation`, a refused credential an invalid
/// request; the rest (the store, Temporal, a busy server) an internal error, retryable as
/// Baton's `data` says.
fn rpc_code(code: ErrorCode) -> i32 {
    use ErrorCode::*;
    match code {
        SessionNotFound | NotFound | UnknownAgentType | SessionMismatch | CheckpointNotFound => {
            codes::TASK_NOT_FOUND
        }
        ValidationError
        | InvalidState
        | UnknownToolCall
        | InvalidResult
        | InvalidToolInput
        | ValidationPayloadTooLarge
        | StateNotResumable
        | StateAlreadyRunning
        | AlreadyRunning
        | RunNotActive
        | StateRunSuperseded
        | SessionAlreadyExists
        | Truncated => codes::INVALID_PARAMS,
        FeatureUnavailable | ClientToolUnsupported | RouteNotFound | MethodNotAllowed => {
            codes::UNSUPPORTED_OPERATION
        }
        Unauthorized | Forbidden => codes::INVALID_REQUEST,
        _ => codes::INTERNAL_ERROR,
    }
}
