//! The body `useChat`'s `DefaultChatTransport` posts, and what the route reads from it: the chat
//! id, the trigger, the agent type (an app body field) and the trailing message, nothing more.
//! The rest of `messages` is the client's copy of the history and is never trusted: the history
//! comes from Redis.

use super::files::user_extras;
use baton_core::{ApiError, ErrorCode, message::UserExtras};
use serde::Deserialize;
use serde_json::Value;

/// The body of `POST /chat`. Fields the app adds beside these are allowed and ignored.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatBody {
    /// The chat id: the Baton session it maps to.
    pub id: String,
    pub messages: Vec<Value>,
    pub trigger: Trigger,
    /// On an auto-send, the trailing assistant message's id.
    #[serde(default)]
    pub message_id: Option<String>,
    /// The agent type, needed by the message that starts the chat.
    #[serde(default)]
    pub agent: Option<String>,
    /// The `userId`, `tags` and `metadata` of the session the chat's first message starts
    /// (ignored on later messages: a session's metadata is fixed at its start).
    #[serde(flatten)]
    pub meta: baton_core::SessionMeta,
}

/// What the client asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    SubmitMessage,
    RegenerateMessage,
}

/// The trailing message of a request, as far as the route reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Trailing {
    /// A user message: its text parts joined, and what it carries besides (its id, metadata and
    /// file parts, checked by `files.rs`).
    User { text: String, extras: UserExtras },
    /// An assistant message: its id and its tool parts, in order, with the index of the step
    /// each belongs to (the count of `step-start` parts before it).
    Assistant {
        id: String,
        tool_parts: Vec<ToolPart>,
        last_step: usize,
    },
}

/// A tool part of the trailing assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPart {
    pub tool_call_id: String,
    pub step: usize,
    pub provider_executed: bool,
    pub input: Value,
    pub state: PartState,
}

/// The state of a tool part, as far as it answers anything.
#[derive(Debug, Clone, PartialEq)]
pub enum PartState {
    Output(Value),
    OutputError(String),
    ApprovalResponded {
        approval_id: String,
        approved: bool,
        reason: Option<String>,
    },
    /// Not an answer (streaming, awaiting, denied by an earlier answer, ...).
    Other,
}

/// The most parts the trailing message may have (text, files, a turn's steps and tool calls).
pub const MAX_MESSAGE_PARTS: usize = 1000;

pub(super) fn malformed(message: &str) -> ApiError {
    ApiError::new(ErrorCode::ValidationError, message)
}

impl ChatBody {
    /// The trailing message, read strictly enough to act on: a `user` message with text, or an
    /// `assistant` message with an id.
    pub fn trailing(&self) -> Result<Trailing, ApiError> {
        let message = self
            .messages
            .last()
            .ok_or_else(|| malformed("messages must not be empty"))?;
        let parts = message
            .get("parts")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("the trailing message has no parts"))?;
        if parts.len() > MAX_MESSAGE_PARTS {
            return Err(malformed(&format!(
                "the trailing message has {} parts; the limit is {MAX_MESSAGE_PARTS}",
                parts.len()
            )));
        }
        match message.get("role").and_then(Value::as_str) {
            Some("user") => {
                let text: Vec<&str> = parts
                    .iter()
                    .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|part| part.get("text").and_then(Value::as_str))
                    .collect();
                Ok(Trailing::User {
                    text: text.join("\n"),
                    extras: user_extras(message, parts)?,
                })
            }
            Some("assistant") => {
                let id = message
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("the trailing assistant message has no id"))?;
                let mut step = 0;
                let mut tool_parts = Vec::new();
                for part in parts {
                    let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
                    if kind == "step-start" {
                        step += 1;
                    } else if kind.starts_with("tool-") || kind == "dynamic-tool" {
                        tool_parts.push(tool_part(part, step)?);
                    }
                }
                Ok(Trailing::Assistant {
                    id: id.to_owned(),
                    tool_parts,
                    last_step: step,
                })
            }
            _ => Err(malformed(
                "the trailing message must be a user or an assistant message",
            )),
        }
    }
}

fn tool_part(part: &Value, step: usize) -> Result<ToolPart, ApiError> {
    let text = |field: &str| part.get(field).and_then(Value::as_str);
    let tool_call_id = text("toolCallId")
        .ok_or_else(|| malformed("a tool part has no toolCallId"))?
        .to_owned();
    let state = match text("state") {
        Some("output-available") => {
            PartState::Output(part.get("output").cloned().unwrap_or(Value::Null))
        }
        Some("output-error") => PartState::OutputError(
            text("errorText")
                .unwrap_or("the client tool failed")
                .to_owned(),
        ),
        Some("approval-responded") => {
            let approval = part.get("approval").unwrap_or(&Value::Null);
            let approved = approval
                .get("approved")
                .and_then(Value::as_bool)
                .ok_or_else(|| malformed("an approval-responded part has no approval.approved"))?;
            PartState::ApprovalResponded {
                approval_id: approval
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                approved,
                reason: approval
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            }
        }
        _ => PartState::Other,
    };
    Ok(ToolPart {
        tool_call_id,
        step,
        provider_executed: part
            .get("providerExecuted")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        input: part.get("input").cloned().unwrap_or(Value::Null),
        state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(messages: Value) -> ChatBody {
        serde_json::from_value(json!({
            "id": "chat1", "messages": messages, "trigger": "submit-message",
            "agent": "a", "appField": 1
        }))
        .unwrap()
    }

    #[test]
    fn only_the_trailing_message_is_read() {
        let user = body(json!([
            {"id": "x", "role": "assistant", "parts": "not even parts"},
            {"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}, {"type": "reasoning"}]}
        ]));
        assert_eq!(
            user.trailing().unwrap(),
            Trailing::User {
                text: "hi".into(),
                extras: UserExtras {
                    id: Some("u".into()),
                    ..Default::default()
                }
            }
        );
        let answered = body(json!([{ "id": "a1", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "tool-add", "toolCallId": "c0", "state": "output-available", "output": 3,
             "providerExecuted": true, "input": {}},
            {"type": "step-start"},
            {"type": "text", "text": "..."},
            {"type": "tool-ask", "toolCallId": "c1", "state": "output-error", "errorText": "no",
             "input": {"q": 1}},
            {"type": "tool-send", "toolCallId": "c2", "state": "approval-responded", "input": {},
             "approval": {"id": "r::c2", "approved": false, "reason": "nope"}},
            {"type": "tool-ask", "toolCallId": "c3", "state": "input-available", "input": {}}
        ]}]));
        let Trailing::Assistant {
            id,
            tool_parts,
            last_step,
        } = answered.trailing().unwrap()
        else {
            panic!("an assistant message")
        };
        assert_eq!((id.as_str(), last_step), ("a1", 2));
        assert_eq!(tool_parts.len(), 4);
        assert!(tool_parts[0].provider_executed && tool_parts[0].step == 1);
        assert_eq!(tool_parts[1].state, PartState::OutputError("no".into()));
        assert_eq!(
            tool_parts[2].state,
            PartState::ApprovalResponded {
                approval_id: "r::c2".into(),
                approved: false,
                reason: Some("nope".into())
            }
        );
        assert_eq!(tool_parts[3].state, PartState::Other);
        assert!(body(json!([])).trailing().is_err());
        let text = json!({"type": "text", "text": "a"});
        let many = |count| {
            let parts = vec![text.clone(); count];
            body(json!([{"id": "u", "role": "user", "parts": parts}])).trailing()
        };
        assert!(many(MAX_MESSAGE_PARTS).is_ok());
        assert_eq!(
            many(MAX_MESSAGE_PARTS + 1).unwrap_err().code,
            ErrorCode::ValidationError
        );
        assert!(
            body(json!([{"id": "s", "role": "system", "parts": []}]))
                .trailing()
                .is_err()
        );
    }
}
