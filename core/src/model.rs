//! The model interface: one call turns a conversation and a tool list into one assistant turn.

pub use baton_wire::usage::Usage;

use crate::{ErrorCode, message::Message, message::ToolCall, tool::ToolSpec};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::{fmt, sync::Arc, time::Duration};
use tokio::sync::mpsc;

/// What the model is asked.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The whole log, system prompt first.
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
}

/// What the model answered in one call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelTurn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

/// A provider's event stream with a line that is not UTF-8 is not the provider's wire format.
impl From<baton_wire::sse::NotUtf8> for Error {
    fn from(error: baton_wire::sse::NotUtf8) -> Self {
        Self::new(ErrorKind::BadResponse, error.to_string())
    }
}

/// Why a model call failed, and whether trying again may help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct Error {
    pub kind: ErrorKind,
    /// What went wrong, for logs and the run's error; never holds a credential.
    pub message: String,
    /// How long the provider asked us to wait before the next attempt (`retry-after`).
    pub retry_after: Option<Duration>,
}

/// The kinds of model failure. The first four are worth retrying; the others give the same
/// answer every time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The provider throttled us (HTTP 429).
    RateLimited,
    /// The provider is overloaded or failing (HTTP 5xx, Anthropic's 529, an `error` event).
    Unavailable,
    /// The connection failed, was reset or went quiet past the time-out.
    Network,
    /// The stream ended before its end marker (`[DONE]`, `message_stop`).
    Truncated,
    /// The provider refused the credentials (HTTP 401, 403).
    Authentication,
    /// The conversation is longer than the model's context window.
    ContextLengthExceeded,
    /// The provider refused the request (HTTP 400, 404, 422, a spent quota).
    Rejected,
    /// The provider sent something that is not its wire format, or tool arguments that are not
    /// JSON.
    BadResponse,
    /// Anything else that retrying will not fix (e.g. a script that ran out of turns).
    Failed,
}

impl ErrorKind {
    /// Whether another attempt may succeed.
    pub const fn retryable(self) -> bool {
        matches!(
            self,
            Self::RateLimited | Self::Unavailable | Self::Network | Self::Truncated
        )
    }

    /// The error code a run that fails with this kind ends with.
    pub const fn code(self) -> ErrorCode {
        match self {
            Self::RateLimited => ErrorCode::ModelRateLimited,
            Self::Unavailable | Self::Network | Self::Truncated => ErrorCode::ModelUnavailable,
            Self::Authentication => ErrorCode::ModelAuthFailed,
            Self::ContextLengthExceeded => ErrorCode::ModelContextLengthExceeded,
            Self::Rejected => ErrorCode::ModelRequestRejected,
            Self::BadResponse => ErrorCode::ModelBadResponse,
            Self::Failed => ErrorCode::ModelFailed,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::RateLimited => "rate limited",
            Self::Unavailable => "provider unavailable",
            Self::Network => "network error",
            Self::Truncated => "stream truncated",
            Self::Authentication => "authentication failed",
            Self::ContextLengthExceeded => "context length exceeded",
            Self::Rejected => "request rejected",
            Self::BadResponse => "bad response",
            Self::Failed => "model failed",
        };
        f.write_str(name)
    }
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// A failure retrying will not fix.
    pub fn permanent(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, message)
    }

    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        self.retry_after = retry_after;
        self
    }

    pub fn retryable(&self) -> bool {
        self.kind.retryable()
    }
}

/// A piece of a model's answer, streamed while the model runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    /// Text of the answer (the returned turn holds all of it).
    Text(String),
    /// The model's reasoning (Anthropic thinking, OpenAI-compatible `reasoning_content`): streamed
    /// to readers only, never part of the turn or the log.
    Reasoning(String),
}

impl From<String> for Delta {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for Delta {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

/// A language model. One call is one assistant turn.
///
/// Text and reasoning are streamed through `deltas` as they are produced; the returned turn holds
/// the whole text. Implementations must send the deltas in order and may send none.
#[async_trait]
pub trait Model: Send + Sync {
    /// A name for logs and usage records, e.g. `scripted` or `gpt-4o`.
    fn name(&self) -> &str;

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<Delta>,
    ) -> Result<ModelTurn, Error>;
}

/// A shared model is a model: agents built from configuration hold their model behind an `Arc`.
#[async_trait]
impl<M: Model + ?Sized> Model for Arc<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<Delta>,
    ) -> Result<ModelTurn, Error> {
        (**self).generate(request, deltas).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_without_cache_counts_keeps_its_old_shape() {
        let old: Usage =
            serde_json::from_value(json!({"inputTokens": 10, "outputTokens": 2})).unwrap();
        assert_eq!(
            old,
            Usage {
                input_tokens: 10,
                output_tokens: 2,
                ..Usage::default()
            }
        );
        assert_eq!(
            serde_json::to_value(&old).unwrap(),
            json!({"inputTokens": 10, "outputTokens": 2})
        );
        let mut total = old.clone();
        total.add(&Usage {
            input_tokens: 5,
            output_tokens: 1,
            cache_read_input_tokens: 4,
            cache_creation_input_tokens: 1,
        });
        assert_eq!(
            serde_json::to_value(&total).unwrap(),
            json!({"inputTokens": 15, "outputTokens": 3, "cacheReadInputTokens": 4,
                "cacheCreationInputTokens": 1})
        );
    }

    #[test]
    fn error_kinds_say_whether_to_retry_and_which_code_to_end_with() {
        let retried = [
            (ErrorKind::RateLimited, ErrorCode::ModelRateLimited),
            (ErrorKind::Unavailable, ErrorCode::ModelUnavailable),
            (ErrorKind::Network, ErrorCode::ModelUnavailable),
            (ErrorKind::Truncated, ErrorCode::ModelUnavailable),
        ];
        let final_ = [
            (ErrorKind::Authentication, ErrorCode::ModelAuthFailed),
            (
                ErrorKind::ContextLengthExceeded,
                ErrorCode::ModelContextLengthExceeded,
            ),
            (ErrorKind::Rejected, ErrorCode::ModelRequestRejected),
            (ErrorKind::BadResponse, ErrorCode::ModelBadResponse),
            (ErrorKind::Failed, ErrorCode::ModelFailed),
        ];
        for (kind, code) in retried {
            assert!(kind.retryable(), "{kind}");
            assert_eq!(kind.code(), code);
            assert!(code.presentation().retryable, "{code}");
        }
        for (kind, code) in final_ {
            assert!(!kind.retryable(), "{kind}");
            assert_eq!(kind.code(), code);
            assert!(!code.presentation().retryable, "{code}");
        }
        let error = Error::new(ErrorKind::RateLimited, "slow down")
            .with_retry_after(Some(Duration::from_millis(1500)));
        assert_eq!(error.to_string(), "rate limited: slow down");
        assert_eq!(error.retry_after, Some(Duration::from_millis(1500)));
    }
}
