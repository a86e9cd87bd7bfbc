//! A server tool asking a person mid-call (an MCP server's elicitation is one): the question
//! ([`Ask`]), the person's [`PersonAnswer`], and the runtime's [`Asker`], which the worker sets
//! on each call's [`ToolContext`](super::ToolContext). The call waits, its run still active,
//! within the question's window; past it the answer is [`AskError::TimedOut`] and the call goes
//! on without one. The question is answered through the tree's root like a client call, under
//! the question's own id. A tool that can instead stop and be called again with the answer (an
//! MCP server's `input_required`) answers [`Called::Asked`] where the run may suspend: the run
//! suspends on the question with nothing held, and the call goes on when the session resumes.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// A question for a person: what to ask and the JSON Schema of the answer's content.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub message: String,
    pub schema: Value,
    /// The longest the call waits for the answer.
    pub window: Duration,
}

/// What the person answered: content matching the question's schema, or no content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum PersonAnswer {
    /// The person answered with `content`.
    Accept { content: Value },
    /// The person chose not to answer; the call goes on without.
    Decline,
    /// The person dismissed the question and what asked it.
    Cancel,
}

impl PersonAnswer {
    /// The `action` tag, as serialized.
    pub fn action(&self) -> &'static str {
        match self {
            Self::Accept { .. } => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }

    /// A submitted result read as an answer: `{"action": …, "content"?: …}` as such, any other
    /// value as the content of an `accept`.
    pub fn from_result(result: Value) -> Self {
        let tagged = result.as_object().is_some_and(|object| {
            object.contains_key("action")
                && object.keys().all(|key| key == "action" || key == "content")
        });
        if tagged && let Ok(answer) = serde_json::from_value::<Self>(result.clone()) {
            return answer;
        }
        Self::Accept { content: result }
    }
}

/// A call that stopped to ask a person where the run may suspend on it (an MCP server's
/// `input_required` result): what it asks, the JSON Schema of the answer's content, and what the
/// tool needs to go on ([`ServerTool::continue_call`](super::ServerTool::continue_call)), which
/// Baton keeps with the pending call and never reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Asked {
    pub message: String,
    pub schema: Value,
    pub continuation: Value,
    /// How long the person may take, in milliseconds (the agent's client-tool timeout if none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<u64>,
}

/// How a call that may suspend the run ended: with its result, or asking a person.
#[derive(Debug, Clone, PartialEq)]
pub enum Called {
    Done(Value),
    Asked(Asked),
}

impl PersonAnswer {
    /// A submitted outcome read as an answer: a result as [`Self::from_result`] reads it, an
    /// error result as a decline.
    pub fn from_outcome(outcome: &crate::message::ToolOutcome) -> Self {
        match outcome {
            crate::message::ToolOutcome::Result(value) => Self::from_result(value.clone()),
            crate::message::ToolOutcome::Error(_) => Self::Decline,
        }
    }

    /// Why this answer does not match a question's `schema` (its content's first mismatch), if
    /// it does not: only an accept carries content.
    pub fn mismatch(&self, schema: &Value) -> Option<String> {
        match self {
            Self::Accept { content } => content_mismatch(schema, content),
            Self::Decline | Self::Cancel => None,
        }
    }
}

/// Why a question got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// The call runs where no person can be asked (a tool called outside a run).
    #[error("no person can be asked here")]
    NoPerson,
    /// Nobody answered within the window.
    #[error("no answer within {} s", .0.as_secs_f64())]
    TimedOut(Duration),
    /// The run stopped or moved on while the question was open.
    #[error("the run no longer works on this call")]
    RunEnded,
    /// The question could not be stored or read.
    #[error("the question could not be asked: {0}")]
    Store(String),
}

/// Asks a person for a call, the worker's side (see the module).
#[async_trait::async_trait]
pub trait Asker: Send + Sync {
    /// Asks `ask` for the call of `context` (whose tool is `tool_name`) and waits for the answer
    /// within its window.
    async fn ask(
        &self,
        context: &super::ToolContext,
        tool_name: &str,
        ask: Ask,
    ) -> Result<PersonAnswer, AskError>;
}

/// Why `content` does not match a question's `schema` (its first mismatch), if it does not. A
/// schema that is no JSON Schema (a server's mistake) refuses nothing.
pub fn content_mismatch(schema: &Value, content: &Value) -> Option<String> {
    let validator = jsonschema::validator_for(schema).ok()?;
    let first = validator.iter_errors(content).next()?;
    Some(first.to_string())
}

/// A new question's id: `bt_q` and 20 hex digits (a model's call id, even deduplicated, never
/// has that form).
pub fn new_question_id() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("bt_q{}", &hex[..20])
}

/// Whether `id` has the form of a question's id (see [`new_question_id`]).
pub fn is_question_id(id: &str) -> bool {
    id.strip_prefix("bt_q")
        .is_some_and(|hex| hex.len() == 20 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The tool name a question is listed under where a person sees calls (`useChat`'s tool part,
/// `/pending`, `/status`): its id is the question's (`bt_q…`), answered as a client tool's.
pub const QUESTION_TOOL: &str = "question";

/// A question's input as a person sees it listed: what it asks, the call that asks, and until
/// when.
pub fn question_input(message: &str, tool: &str, tool_call_id: &str, deadline_at: u64) -> Value {
    serde_json::json!({
        "message": message,
        "tool": tool,
        "toolCallId": tool_call_id,
        "deadlineAt": deadline_at,
    })
}

/// A question's render hint: a form of its schema.
pub fn question_render(schema: &Value) -> Value {
    serde_json::json!({ "kind": "elicitation", "outputSchema": schema })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn question_ids_have_their_own_form() {
        let id = new_question_id();
        assert!(is_question_id(&id), "{id}");
        assert!(!is_question_id("bt_0123456789abcdef0123"));
        assert!(!is_question_id("bt_q0123"));
        assert!(!is_question_id("call_1"));
    }

    #[test]
    fn an_error_result_declines_and_only_an_accepts_content_is_checked() {
        use crate::message::{ToolError, ToolOutcome};
        let error = ToolOutcome::Error(ToolError::new("client_tool_error", "no"));
        assert_eq!(PersonAnswer::from_outcome(&error), PersonAnswer::Decline);
        let schema = json!({"type": "object", "required": ["ok"]});
        let empty = PersonAnswer::from_outcome(&ToolOutcome::Result(json!({})));
        assert!(empty.mismatch(&schema).is_some());
        let ok = PersonAnswer::from_outcome(&ToolOutcome::Result(json!({"ok": true})));
        assert_eq!(ok.mismatch(&schema), None);
        assert_eq!(PersonAnswer::Decline.mismatch(&schema), None);
    }

    #[test]
    fn a_submitted_result_is_an_answer_tagged_or_the_content_of_an_accept() {
        assert_eq!(
            PersonAnswer::from_result(json!({"action": "decline"})),
            PersonAnswer::Decline
        );
        assert_eq!(
            PersonAnswer::from_result(json!({"action": "accept", "content": {"ok": true}})),
            PersonAnswer::Accept {
                content: json!({"ok": true})
            }
        );
        // A content that happens to have an action field among others is content.
        let content = json!({"action": "deploy", "target": "prod"});
        assert_eq!(
            PersonAnswer::from_result(content.clone()),
            PersonAnswer::Accept { content }
        );
        assert_eq!(
            PersonAnswer::from_result(json!({"action": "later"})),
            PersonAnswer::Accept {
                content: json!({"action": "later"})
            }
        );
    }
}
