//! What both adapters need from Baton's conversation model: a check that every tool call has
//! its one result, the text a tool result becomes, and tool calls assembled from streamed
//! argument pieces.

use baton_core::{
    message::{Message, ToolCall, ToolOutcome, ToolResult},
    model::{Error, ErrorKind},
};
use serde_json::Value;
use std::{borrow::Cow, collections::HashMap};

/// Refuses a log in which a tool call lacks its result, has two, or a result answers no call
/// before it: both APIs refuse such a request, and saying why here is clearer than their 400.
fn check_tool_results(messages: &[Message]) -> Result<(), Error> {
    let mut open: HashMap<&str, &str> = HashMap::new();
    for message in messages {
        match message {
            Message::Assistant { tool_calls, .. } => {
                if let Some((id, _)) = open.iter().next() {
                    return Err(unanswered(id));
                }
                for call in tool_calls {
                    open.insert(&call.id, &call.name);
                }
            }
            Message::Tool(result) => {
                if open.remove(result.tool_call_id.as_str()).is_none() {
                    return Err(Error::new(
                        ErrorKind::Failed,
                        format!(
                            "the log has a result for tool call {:?}, which no assistant message \
                             before it made (or which already has one)",
                            result.tool_call_id
                        ),
                    ));
                }
            }
            Message::System { .. } | Message::User { .. } => {}
        }
    }
    match open.keys().next() {
        Some(id) => Err(unanswered(id)),
        None => Ok(()),
    }
}

/// The log as the provider knows it, after [`check_tool_results`]: a call Baton renamed (its
/// model id repeated one of the session tree's) goes back under the provider's own id, and so
/// does its result. Borrowed as it is when no call was renamed.
pub(crate) fn provider_messages(messages: &[Message]) -> Result<Cow<'_, [Message]>, Error> {
    check_tool_results(messages)?;
    let renamed: HashMap<&str, &str> = messages
        .iter()
        .flat_map(|message| match message {
            Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            _ => &[],
        })
        .filter_map(|call| Some((call.id.as_str(), call.provider_id.as_deref()?)))
        .collect();
    if renamed.is_empty() {
        return Ok(Cow::Borrowed(messages));
    }
    let provider_id = |id: &str| renamed.get(id).map_or(id, |provider| provider).to_owned();
    Ok(Cow::Owned(
        messages
            .iter()
            .map(|message| match message {
                Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } => Message::Assistant {
                    content: content.clone(),
                    tool_calls: tool_calls
                        .iter()
                        .map(|call| ToolCall {
                            id: provider_id(&call.id),
                            provider_id: None,
                            ..call.clone()
                        })
                        .collect(),
                    // What a chat shows beside the turn is not the provider's.
                    chat: None,
                    finish: None,
                },
                Message::Tool(result) => Message::Tool(ToolResult {
                    tool_call_id: provider_id(&result.tool_call_id),
                    ..result.clone()
                }),
                other => other.clone(),
            })
            .collect(),
    ))
}

fn unanswered(id: &str) -> Error {
    Error::new(
        ErrorKind::Failed,
        format!("tool call {id:?} has no result in the log"),
    )
}

/// The text a tool outcome becomes for the model, and whether it is an error. A string result
/// is sent as it is, any other result as JSON; an error as the JSON of its code and message.
pub(crate) fn tool_result_text(outcome: &ToolOutcome) -> (String, bool) {
    match outcome {
        ToolOutcome::Result(Value::String(text)) => (text.clone(), false),
        ToolOutcome::Result(value) => (value.to_string(), false),
        ToolOutcome::Error(error) => (
            serde_json::json!({"code": error.code, "message": error.message}).to_string(),
            true,
        ),
    }
}

/// A tool call whose arguments are still arriving.
#[derive(Debug, Default, Clone)]
pub(crate) struct PartialCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl PartialCall {
    /// The finished call: its arguments must be JSON (none at all means `{}`).
    pub(crate) fn finish(self) -> Result<ToolCall, Error> {
        if self.id.is_empty() || self.name.is_empty() {
            return Err(Error::new(
                ErrorKind::BadResponse,
                format!(
                    "a tool call came without its id or name (id {:?}, name {:?})",
                    self.id, self.name
                ),
            ));
        }
        let arguments = if self.arguments.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(&self.arguments).map_err(|e| {
                Error::new(
                    ErrorKind::BadResponse,
                    format!(
                        "the arguments of tool call {} ({}) are not JSON: {e}",
                        self.id, self.name
                    ),
                )
            })?
        };
        Ok(ToolCall {
            id: self.id,
            name: self.name,
            arguments,
            provider_id: None,
        })
    }
}

/// An event that is not the provider's JSON.
pub(crate) fn bad_event(provider: &str, error: &serde_json::Error, data: &str) -> Error {
    let mut shown: String = data.chars().take(200).collect();
    if shown.len() < data.len() {
        shown.push('…');
    }
    Error::new(
        ErrorKind::BadResponse,
        format!("{provider} sent an event that is not its format ({error}): {shown}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::message::ToolError;
    use serde_json::json;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "add".into(),
            arguments: json!({}),
            provider_id: None,
        }
    }

    #[test]
    fn every_call_needs_exactly_one_result() {
        let ok = Message::tool_result(&call("a"), ToolOutcome::Result(json!(1)));
        let good = [
            Message::system("s"),
            Message::user("u"),
            Message::assistant("", vec![call("a"), call("b")]),
            Message::tool_result(&call("b"), ToolOutcome::Result(json!(2))),
            ok.clone(),
            Message::assistant("done", vec![]),
        ];
        assert!(check_tool_results(&good).is_ok());
        let missing = &good[..4];
        assert_eq!(
            check_tool_results(missing).unwrap_err().message,
            "tool call \"a\" has no result in the log"
        );
        let twice = [good[..5].to_vec(), vec![ok]].concat();
        assert!(
            check_tool_results(&twice)
                .unwrap_err()
                .message
                .contains("already has one")
        );
    }

    #[test]
    fn results_become_text_and_arguments_must_be_json() {
        assert_eq!(
            tool_result_text(&ToolOutcome::Result(json!("noon"))),
            ("noon".to_owned(), false)
        );
        assert_eq!(
            tool_result_text(&ToolOutcome::Result(json!({"a": 1}))),
            ("{\"a\":1}".to_owned(), false)
        );
        assert_eq!(
            tool_result_text(&ToolOutcome::Error(ToolError::new("tool_failed", "boom"))),
            (
                "{\"code\":\"tool_failed\",\"message\":\"boom\"}".to_owned(),
                true
            )
        );
        let partial = |arguments: &str| PartialCall {
            id: "c".into(),
            name: "n".into(),
            arguments: arguments.into(),
        };
        assert_eq!(partial("").finish().unwrap().arguments, json!({}));
        assert_eq!(
            partial("{\"a\": [1, 2]}").finish().unwrap().arguments,
            json!({"a": [1, 2]})
        );
        let bad = partial("{\"a\": ").finish().unwrap_err();
        assert_eq!(bad.kind, ErrorKind::BadResponse);
        assert!(
            bad.message
                .starts_with("the arguments of tool call c (n) are not JSON")
        );
    }
}
