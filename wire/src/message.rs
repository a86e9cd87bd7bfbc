//! The message log of a session: what the model has seen and said.
//!
//! Invariant: after every committed step, each tool call in the log has exactly one `tool`
//! message after it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One entry of a session's message log.
///
/// Two entries are equal when they say the same to a model: what a chat shows beside an
/// assistant turn (its reasoning and server metadata) and a result's kept chat data are not
/// compared.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
        /// What the chat shows besides the text (the model's reasoning, when the step was
        /// answered, the message's server metadata); never sent back to a model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat: Option<Box<AssistantExtras>>,
        /// The chat message's server metadata (`finishedAt`, and at a run's end `usage` and
        /// `models`), added by the commit that suspended or completed the run; never sent to a
        /// model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish: Option<Box<Value>>,
    },
    Tool(ToolResult),
}

/// What a chat shows of an assistant step besides its text, kept in the log so a reload shows
/// what the live stream showed. The adapters never send it to a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AssistantExtras {
    /// The model's reasoning, in the order it streamed, each piece at the byte offset of the
    /// step's text it came before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<Reasoning>,
    /// When the step's turn was answered (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_at: Option<u64>,
}

/// The server metadata a chat message gets when its run suspends (`finishedAt`) or completes
/// (also the session's `usage` and the `models` that spent it): the same on the live stream's
/// finish and in the log, which keeps it on the step's assistant entry.
pub fn finish_metadata(finished_at: u64, usage: Option<&crate::UsageRollup>) -> Value {
    let mut metadata = serde_json::json!({ "finishedAt": finished_at });
    if let Some(usage) = usage {
        metadata["usage"] = serde_json::to_value(&usage.tokens).unwrap_or(Value::Null);
        metadata["models"] = serde_json::json!(usage.models.keys().collect::<Vec<_>>());
    }
    metadata
}

/// A piece of a model's reasoning, as a chat shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Reasoning {
    /// The byte offset in the step's text where it streamed (0: before any text).
    pub offset: usize,
    pub text: String,
}

/// At most this many bytes of a step's reasoning are kept for display (a longer one is cut at
/// a character boundary); the stream carries it whole.
pub const MAX_KEPT_REASONING_BYTES: usize = 64 * 1024;

/// A `data-*` item a server tool emitted for the chat and asked to be kept, stored with the
/// call's result so a reload shows it. Never sent to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KeptData {
    /// The part is `data-<name>`.
    pub name: String,
    pub data: Value,
}

/// What a chat client's user message carries besides its text, kept in the log so a reload
/// shows the message as it was sent and the model reads its files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// When the chat route took the message (ms since the epoch): the `createdAt` of the
    /// assistant message answering it, on the live stream and in a reload alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_at: Option<u64>,
}

/// A file a user message carries: an image or a document, inline as a `data:` URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub tool_call_id: String,
    pub tool_name: String,
    #[serde(flatten)]
    pub outcome: ToolOutcome,
    /// The call's kept chat data, in the order it was emitted (none for most calls).
    #[serde(default, rename = "chatData", skip_serializing_if = "Vec::is_empty")]
    pub chat_data: Vec<KeptData>,
}

impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::System { content: a }, Self::System { content: b }) => a == b,
            (
                Self::User {
                    content: a,
                    chat: a_chat,
                },
                Self::User {
                    content: b,
                    chat: b_chat,
                },
            ) => a == b && a_chat == b_chat,
            (
                Self::Assistant {
                    content: a,
                    tool_calls: a_calls,
                    ..
                },
                Self::Assistant {
                    content: b,
                    tool_calls: b_calls,
                    ..
                },
            ) => a == b && a_calls == b_calls,
            (Self::Tool(a), Self::Tool(b)) => a == b,
            _ => false,
        }
    }
}

/// Equal when they say the same to a model (the kept chat data is not compared).
impl PartialEq for ToolResult {
    fn eq(&self, other: &Self) -> bool {
        self.tool_call_id == other.tool_call_id
            && self.tool_name == other.tool_name
            && self.outcome == other.outcome
    }
}

impl ToolResult {
    /// The result of `tool_call_id` (tool `tool_name`), without chat data.
    pub fn new(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        outcome: ToolOutcome,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            outcome,
            chat_data: Vec::new(),
        }
    }
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum ToolOutcome {
    Result(Value),
    Error(ToolError),
}

/// A tool error as the model sees it: a stable code and a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
            chat: None,
            finish: None,
        }
    }

    /// A model's turn as a step stages it: its text and calls, with the reasoning it streamed
    /// and when it answered (ms since the epoch), which the chat shows.
    pub fn answered(
        content: impl Into<String>,
        tool_calls: Vec<ToolCall>,
        reasoning: Vec<Reasoning>,
        answered_at: u64,
    ) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls,
            chat: Some(Box::new(AssistantExtras {
                reasoning,
                answered_at: Some(answered_at),
            })),
            finish: None,
        }
    }

    pub fn tool_result(call: &ToolCall, outcome: ToolOutcome) -> Self {
        Self::Tool(ToolResult::new(&call.id, &call.name, outcome))
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
    /// A server tool call asked a person mid-call (an MCP server's elicitation) and nobody
    /// answered within the question's window.
    pub const QUESTION_TIMED_OUT: &str = "question_timed_out";
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
