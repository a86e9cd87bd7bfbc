//! A deterministic model driven by a script, for tests and the offline demo.
//!
//! The script is a list of turns. The model answers the conversation with the turn whose index is
//! the number of assistant messages already in the log, so a retried call gives the same answer.
//! A turn's text may name earlier tool results: `{{result:<tool>}}` becomes the latest result of
//! that tool (strings without quotes, other values as JSON), `{{input}}` the latest user message
//! and `{{files}}` the media types of its file parts (comma-separated; empty without any). The
//! strings of a call's arguments may name them too.

use crate::{
    message::{Message, ToolCall, ToolOutcome},
    model::{self, Delta, Model, ModelRequest, ModelTurn, Usage},
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

/// One scripted assistant turn.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedTurn {
    /// Streamed as reasoning before the text (word by word, as text is); not part of the turn.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
}

/// A tool call in a scripted turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// The scripted model.
#[derive(Debug, Clone, Default)]
pub struct ScriptedModel {
    turns: Vec<ScriptedTurn>,
    /// Tool call ids are `<prefix>_<turn>_<position>`; `call` unless set.
    call_id_prefix: Option<String>,
}

impl ScriptedModel {
    pub fn new(turns: Vec<ScriptedTurn>) -> Self {
        Self {
            turns,
            call_id_prefix: None,
        }
    }

    /// Builder: tool call ids start with `prefix` instead of `call`. Ids must be unique within
    /// a session tree (a submit finds a call by its id on the root), as a real model's are; the
    /// agents of one scripted tree each take their own prefix.
    pub fn call_id_prefix(mut self, prefix: &str) -> Self {
        self.call_id_prefix = Some(prefix.to_owned());
        self
    }

    /// Builder: add a turn that calls one tool.
    pub fn call(mut self, tool: &str, arguments: Value) -> Self {
        self.turns.push(ScriptedTurn {
            reasoning: String::new(),
            text: String::new(),
            tool_calls: vec![ScriptedCall {
                name: tool.to_owned(),
                arguments,
            }],
        });
        self
    }

    /// Builder: add a turn that calls several tools at once.
    pub fn call_all(mut self, calls: &[(&str, Value)]) -> Self {
        self.turns.push(ScriptedTurn {
            reasoning: String::new(),
            text: String::new(),
            tool_calls: calls
                .iter()
                .map(|(name, arguments)| ScriptedCall {
                    name: (*name).to_owned(),
                    arguments: arguments.clone(),
                })
                .collect(),
        });
        self
    }

    /// Builder: add a turn that answers with text and calls nothing.
    pub fn answer(mut self, text: &str) -> Self {
        self.turns.push(ScriptedTurn {
            reasoning: String::new(),
            text: text.to_owned(),
            tool_calls: Vec::new(),
        });
        self
    }

    /// Builder: the last turn added streams `reasoning` before its text.
    pub fn reasoning(mut self, reasoning: &str) -> Self {
        if let Some(turn) = self.turns.last_mut() {
            turn.reasoning = reasoning.to_owned();
        }
        self
    }
}

#[async_trait]
impl Model for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<Delta>,
    ) -> Result<ModelTurn, model::Error> {
        let index = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let turn = self.turns.get(index).ok_or_else(|| {
            model::Error::permanent(format!(
                "the script has {} turns and turn {} was asked for",
                self.turns.len(),
                index + 1
            ))
        })?;
        for piece in split_keeping_spaces(&turn.reasoning) {
            // A closed receiver only means nobody streams this call; the turn is still valid.
            let _ = deltas.send(Delta::Reasoning(piece.to_owned()));
        }
        let text = render(&turn.text, request.messages);
        for piece in split_keeping_spaces(&text) {
            let _ = deltas.send(Delta::Text(piece.to_owned()));
        }
        let tool_calls = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(position, call)| ToolCall {
                id: format!(
                    "{}_{}_{}",
                    self.call_id_prefix.as_deref().unwrap_or("call"),
                    index + 1,
                    position + 1
                ),
                name: call.name.clone(),
                arguments: rendered_arguments(&call.arguments, request.messages),
                provider_id: None,
            })
            .collect();
        let input_tokens = request.messages.iter().map(|m| json_len(m) / 4).sum();
        Ok(ModelTurn {
            usage: Usage {
                input_tokens,
                output_tokens: text.split_whitespace().count() as u64,
                ..Usage::default()
            },
            text,
            tool_calls,
        })
    }
}

/// The length of `message`'s JSON, counted as it is written rather than written out: the log
/// grows with every round, and writing all of it out again at every step only to count it was
/// a visible share of a worker's CPU in issue 40's profile.
fn json_len(message: &Message) -> u64 {
    struct Counted(u64);
    impl std::io::Write for Counted {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counted = Counted(0);
    match serde_json::to_writer(&mut counted, message) {
        Ok(()) => counted.0,
        Err(_) => 0,
    }
}

/// Splits text into word-sized deltas, each word keeping the whitespace that follows it.
fn split_keeping_spaces(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(' ')
}

/// A call's arguments with each string that names a result or the input rendered (see
/// [`render`]); other values as they are.
fn rendered_arguments(arguments: &Value, messages: &[Message]) -> Value {
    match arguments {
        Value::String(text) if text.contains("{{") => Value::String(render(text, messages)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| rendered_arguments(item, messages))
                .collect(),
        ),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, value)| (key.clone(), rendered_arguments(value, messages)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn render(template: &str, messages: &[Message]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = after[..end].trim();
        out.push_str(&lookup(name, messages).unwrap_or_else(|| format!("{{{{{name}}}}}")));
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

fn lookup(placeholder: &str, messages: &[Message]) -> Option<String> {
    if placeholder == "input" {
        return messages.iter().rev().find_map(|m| match m {
            Message::User { content, .. } => Some(content.clone()),
            _ => None,
        });
    }
    if placeholder == "files" {
        return messages.iter().rev().find_map(|m| match m {
            Message::User { chat, .. } => Some(chat.as_ref().map_or_else(String::new, |extras| {
                let types: Vec<&str> = extras.files.iter().map(|f| f.media_type.as_str()).collect();
                types.join(",")
            })),
            _ => None,
        });
    }
    let tool = placeholder.strip_prefix("result:")?;
    messages.iter().rev().find_map(|m| match m {
        Message::Tool(result) if result.tool_name == tool => Some(match &result.outcome {
            ToolOutcome::Result(Value::String(s)) => s.clone(),
            ToolOutcome::Result(other) => other.to_string(),
            ToolOutcome::Error(error) => format!("error {}", error.code),
        }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_messages_length_is_its_jsons() {
        let call = ToolCall {
            id: "call_1_1".into(),
            name: "ask".into(),
            arguments: json!({"q": "caf\u{e9} \"quoted\"", "n": [1, 2.5]}),
            provider_id: None,
        };
        for message in [
            Message::user("go"),
            Message::assistant("thinking \u{2014} then", vec![call.clone()]),
            Message::tool_result(&call, ToolOutcome::Result(json!({"answer": "yes"}))),
        ] {
            let written = serde_json::to_string(&message).unwrap();
            assert_eq!(json_len(&message), written.len() as u64, "{written}");
        }
    }

    #[tokio::test]
    async fn a_calls_argument_strings_render_the_results_and_the_input() {
        let model = ScriptedModel::default().call("ask", json!({})).call(
            "note",
            json!({"text": "{{result:ask}} ({{input}})", "tags": ["{{input}}", 1]}),
        );
        let ask = ToolCall {
            id: "call_1_1".into(),
            name: "ask".into(),
            arguments: json!({}),
            provider_id: None,
        };
        let log = vec![
            Message::user("go"),
            Message::assistant("", vec![ask.clone()]),
            Message::tool_result(&ask, ToolOutcome::Result(json!("buy milk"))),
        ];
        let (tx, _rx) = mpsc::unbounded_channel();
        let turn = model
            .generate(
                ModelRequest {
                    messages: &log,
                    tools: &[],
                },
                tx,
            )
            .await
            .unwrap();
        assert_eq!(
            turn.tool_calls[0].arguments,
            json!({"text": "buy milk (go)", "tags": ["go", 1]})
        );
    }

    #[tokio::test]
    async fn turns_follow_the_log_and_render_results() {
        let model = ScriptedModel::default()
            .call("add", json!({"a": 2, "b": 3}))
            .answer("Sum is {{result:add}} for {{input}} {{result:nothing}}")
            .reasoning("add then say");
        let mut log = vec![Message::system("s"), Message::user("2+3?")];
        let (tx, mut rx) = mpsc::unbounded_channel();
        let first = model
            .generate(
                ModelRequest {
                    messages: &log,
                    tools: &[],
                },
                tx,
            )
            .await
            .unwrap();
        assert_eq!(first.text, "");
        assert_eq!(first.tool_calls.len(), 1);
        assert_eq!(first.tool_calls[0].id, "call_1_1");
        assert_eq!(first.tool_calls[0].arguments, json!({"a": 2, "b": 3}));
        assert!(rx.recv().await.is_none());

        log.push(Message::assistant("", first.tool_calls.clone()));
        log.push(Message::tool_result(
            &first.tool_calls[0],
            ToolOutcome::Result(json!(5)),
        ));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let second = model
            .generate(
                ModelRequest {
                    messages: &log,
                    tools: &[],
                },
                tx,
            )
            .await
            .unwrap();
        assert_eq!(second.text, "Sum is 5 for 2+3? {{result:nothing}}");
        assert!(second.tool_calls.is_empty());
        let (mut streamed, mut reasoning) = (String::new(), String::new());
        while let Some(delta) = rx.recv().await {
            match delta {
                Delta::Text(text) => streamed.push_str(&text),
                // All of the reasoning comes before any text.
                Delta::Reasoning(text) if streamed.is_empty() => reasoning.push_str(&text),
                Delta::Reasoning(text) => panic!("reasoning {text:?} after text"),
            }
        }
        assert_eq!(streamed, second.text);
        assert_eq!(reasoning, "add then say");

        log.push(Message::assistant(second.text, vec![]));
        let (tx, _rx) = mpsc::unbounded_channel();
        let exhausted = model
            .generate(
                ModelRequest {
                    messages: &log,
                    tools: &[],
                },
                tx,
            )
            .await;
        let exhausted = exhausted.unwrap_err();
        assert_eq!(exhausted.kind, model::ErrorKind::Failed);
        assert!(!exhausted.retryable());
    }
}
