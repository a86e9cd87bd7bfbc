//! The message log of a session: what the model has seen and said.
//!
//! Invariant: after every committed step, each tool call in the log has exactly one `tool`
//! message after it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One entry of a session's message log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
        /// What a chat client sent with the message besides its text (its id, metadata and
        /// file parts); none for a plain message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat: Option<Box<UserExtras>>,
    },
    Assistant {
        content: String,
        #[serde(default, rename = "toolCalls", skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool(ToolResult),
}

/// What a chat client's user message carries besides its text, kept in the log so a reload
/// shows the message as it was sent and the model reads its files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserExtras {
    /// The client's id of the message (`useChat`'s), kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The client's `metadata` of the message, kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The message's file parts, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FilePart>,
}

/// A file a user message carries: an image or a document, inline as a `data:` URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilePart {
    /// The IANA media type (`image/png`, `application/pdf`, ...).
    pub media_type: String,
    /// `data:<mediaType>;base64,<data>`.
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

impl FilePart {
    /// The base64 data of the part's `data:` URL (empty for another URL).
    pub fn base64_data(&self) -> &str {
        self.url
            .strip_prefix("data:")
            .and_then(|rest| rest.split_once(";base64,"))
            .map_or("", |(_, data)| data)
    }

    /// The bytes the part holds in the log.
    pub fn held_bytes(&self) -> usize {
        self.media_type.len() + self.url.len() + self.filename.as_ref().map_or(0, String::len)
    }
}

/// A call of a tool by the model, with the arguments it chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Unique within the session tree: the model's id, or Baton's own when the model's would
    /// repeat one the tree has (see `providerId`).
    pub id: String,
    pub name: String,
    pub arguments: Value,
    /// The model's own id, when Baton gave the call another (`id`): what goes back to the
    /// provider, on the call and on its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
}

impl ToolCall {
    /// The id the model's provider knows the call by.
    pub fn provider_call_id(&self) -> &str {
        self.provider_id.as_deref().unwrap_or(&self.id)
    }
}

/// The answer to one tool call: a result or an error, never both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub tool_call_id: String,
    pub tool_name: String,
    #[serde(flatten)]
    pub outcome: ToolOutcome,
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolOutcome {
    Result(Value),
    Error(ToolError),
}

/// A tool error as the model sees it: a stable code and a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    pub code: String,
    pub message: String,
}

impl ToolError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
            chat: None,
        }
    }

    /// A user message with what a chat client sent besides its text (none when it sent
    /// nothing more).
    pub fn user_with(content: impl Into<String>, extras: UserExtras) -> Self {
        let empty = extras == UserExtras::default();
        Self::User {
            content: content.into(),
            chat: (!empty).then(|| Box::new(extras)),
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls,
        }
    }

    pub fn tool_result(call: &ToolCall, outcome: ToolOutcome) -> Self {
        Self::Tool(ToolResult {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            outcome,
        })
    }
}

/// The codes of tool errors the model sees, beside the error codes a server tool's failure takes
/// from [`ErrorCode`](crate::ErrorCode) (a test checks those agree).
pub mod codes {
    pub const INVALID_TOOL_INPUT: &str = "invalid_tool_input";
    pub const TOOL_FAILED: &str = "tool_failed";
    pub const TOOL_PANICKED: &str = "tool_panicked";
    pub const UNKNOWN_TOOL: &str = "unknown_tool";
    /// A client call that got no answer before its deadline.
    pub const CLIENT_TOOL_TIMEOUT: &str = "client_tool_timeout";
    /// A client call left unanswered by a resume that brought a new message instead.
    pub const CLIENT_TOOL_ABANDONED: &str = "client_tool_abandoned";
    /// A call of a run that was stopped (interrupt, abort) before the call was carried on.
    pub const NOT_EXECUTED: &str = "not_executed";
    /// A call whose approval was denied.
    pub const TOOL_DENIED: &str = "tool_denied";
    /// An at-most-once server tool whose earlier attempt started and was lost before its
    /// result was recorded: it may or may not have taken effect, and it is not run again.
    pub const TOOL_OUTCOME_UNKNOWN: &str = "tool_outcome_unknown";
    /// A client-side failure reported with a message only.
    pub const CLIENT_TOOL_ERROR: &str = "client_tool_error";
    /// A sub-agent whose final output does not match the output schema its caller declared.
    pub const INVALID_SUB_AGENT_OUTPUT: &str = "invalid_sub_agent_output";
    /// A sub-agent that was interrupted before it answered.
    pub const SUB_AGENT_INTERRUPTED: &str = "sub_agent_interrupted";
    /// A server tool changed the session's custom state with a patch that does not apply or
    /// leaves the state outside its schema: none of the call's changes are kept.
    pub const INVALID_STATE_PATCH: &str = "invalid_state_patch";
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shapes() {
        let call = ToolCall {
            id: "c1".into(),
            name: "add".into(),
            arguments: json!({"a": 1}),
            provider_id: None,
        };
        let assistant = Message::assistant("", vec![call.clone()]);
        assert_eq!(
            serde_json::to_value(&assistant).unwrap(),
            json!({"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "name": "add", "arguments": {"a": 1}}]})
        );
        let ok = Message::tool_result(&call, ToolOutcome::Result(json!(3)));
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"role": "tool", "toolCallId": "c1", "toolName": "add", "result": 3})
        );
        let failed = Message::tool_result(
            &call,
            ToolOutcome::Error(ToolError::new("tool_failed", "boom")),
        );
        let value = serde_json::to_value(&failed).unwrap();
        assert_eq!(
            value,
            json!({"role": "tool", "toolCallId": "c1", "toolName": "add", "error": {"code": "tool_failed", "message": "boom"}})
        );
        assert_eq!(serde_json::from_value::<Message>(value).unwrap(), failed);
        let text_only: Message =
            serde_json::from_value(json!({"role": "assistant", "content": "hi"})).unwrap();
        assert_eq!(text_only, Message::assistant("hi", vec![]));
    }

    #[test]
    fn tool_error_codes_are_the_error_codes_names() {
        use crate::ErrorCode;
        for (code, error) in [
            (codes::INVALID_TOOL_INPUT, ErrorCode::InvalidToolInput),
            (codes::TOOL_FAILED, ErrorCode::ToolFailed),
            (codes::TOOL_PANICKED, ErrorCode::ToolPanicked),
            (codes::UNKNOWN_TOOL, ErrorCode::UnknownTool),
        ] {
            assert_eq!(code, error.as_str());
        }
    }
}
