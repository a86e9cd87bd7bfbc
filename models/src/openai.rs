//! OpenAI-compatible Chat Completions (`POST {base_url}/chat/completions`, `stream: true`): the
//! hosted API and local servers that speak it (vLLM, Ollama, llama.cpp server, LM Studio).
//!
//! Text arrives as `choices[0].delta.content`; a tool call as pieces under
//! `choices[0].delta.tool_calls[]`, keyed by `index`, the first piece carrying its id and name
//! and every piece a fragment of the arguments' JSON text. With `stream_options.include_usage`
//! a last chunk with no choices carries the usage; `data: [DONE]` ends the stream.

use crate::{
    ApiKey, Settings,
    conversation::{PartialCall, bad_event, provider_messages, tool_result_text},
    http::StreamState,
    http::{self, ProviderError},
    sse,
    wire::{HttpModel, WireFormat},
};
use baton_core::{
    message::Message,
    model::{Delta, Error, ErrorKind, ModelRequest, ModelTurn, Usage},
    tool::ToolSpec,
};
use reqwest::{StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tokio::sync::mpsc;

/// The hosted API's base URL, used when the configuration names none.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The Chat Completions wire format.
#[derive(Debug, Clone, Copy)]
pub struct ChatCompletions;

/// A model behind an OpenAI-compatible Chat Completions endpoint.
pub type OpenAi = HttpModel<ChatCompletions>;

impl WireFormat for ChatCompletions {
    type Stream = OpenAiStream;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const PATH: &'static str = "/chat/completions";

    fn headers(api_key: Option<&ApiKey>) -> Result<header::HeaderMap, Error> {
        let mut headers = header::HeaderMap::new();
        if let Some(key) = api_key {
            headers.insert(
                header::AUTHORIZATION,
                key.header_value(&format!("Bearer {}", key.0))?,
            );
        }
        Ok(headers)
    }

    fn request_body(settings: &Settings, request: ModelRequest<'_>) -> Result<Value, Error> {
        let messages = provider_messages(request.messages)?;
        let mut body = json!({
            "model": settings.model,
            "messages": messages.iter().map(message).collect::<Vec<_>>(),
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !request.tools.is_empty() {
            body["tools"] = request.tools.iter().map(tool).collect();
        }
        if let Some(temperature) = settings.temperature {
            body["temperature"] = json!(temperature);
        }
        // `max_tokens`, which every compatible server knows (OpenAI also takes the newer
        // `max_completion_tokens`).
        if let Some(max_tokens) = settings.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        Ok(body)
    }

    /// A refused request: the status decides, refined by what the body says.
    fn classify(status: StatusCode, body: &[u8]) -> Error {
        let error = ProviderError::from_body(body, provider_error);
        let kind = match http::kind_of_status(status) {
            ErrorKind::Rejected if is_context_length(&error) => ErrorKind::ContextLengthExceeded,
            // A spent quota answers 429 too, but waiting does not refill it.
            ErrorKind::RateLimited if error.code == "insufficient_quota" => ErrorKind::Rejected,
            kind => kind,
        };
        Error::new(kind, http::describe(Some(status), &error))
    }
}

fn message(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User {
            content,
            chat: Some(extras),
        } if !extras.files.is_empty() => {
            // Content parts: the text, then each file (an image by URL, any other as a file).
            let mut parts = Vec::with_capacity(extras.files.len() + 1);
            if !content.is_empty() {
                parts.push(json!({"type": "text", "text": content}));
            }
            parts.extend(extras.files.iter().map(|file| {
                if file.media_type.starts_with("image/") {
                    json!({"type": "image_url", "image_url": {"url": file.url}})
                } else {
                    let mut part = json!({"file_data": file.url});
                    if let Some(name) = &file.filename {
                        part["filename"] = json!(name);
                    }
                    json!({"type": "file", "file": part})
                }
            }));
            json!({"role": "user", "content": parts})
        }
        Message::User { content, .. } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } if !tool_calls.is_empty() => json!({
            "role": "assistant",
            // The API wants null, not "", beside tool calls when there is no text.
            "content": if content.is_empty() { Value::Null } else { json!(content) },
            "tool_calls": tool_calls.iter().map(|call| json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments.to_string()},
            })).collect::<Vec<_>>(),
        }),
        Message::Assistant { content, .. } => json!({"role": "assistant", "content": content}),
        Message::Tool(result) => {
            let (text, is_error) = tool_result_text(&result.outcome);
            // Chat Completions has no error flag on a tool message: an error says so in its text.
            let content = if is_error {
                format!("{{\"error\":{text}}}")
            } else {
                text
            };
            json!({"role": "tool", "tool_call_id": result.tool_call_id, "content": content})
        }
    }
}

fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.input_schema,
        },
    })
}

/// The state of one streamed response.
#[derive(Debug, Default)]
pub struct OpenAiStream {
    text: String,
    /// By the provider's `index`.
    calls: BTreeMap<u32, PartialCall>,
    usage: Usage,
}

#[derive(Deserialize)]
struct Chunk {
    /// Some servers send `null` instead of `[]` on the usage chunk.
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<ChoiceDelta>,
}

#[derive(Deserialize)]
struct ChoiceDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    /// Reasoning, as DeepSeek, vLLM, Qwen and other OpenAI-compatible servers stream it.
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Deserialize)]
struct CallDelta {
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl StreamState for OpenAiStream {
    fn on_event(
        &mut self,
        event: sse::Event<'_>,
        deltas: &mpsc::UnboundedSender<Delta>,
    ) -> Result<bool, Error> {
        if event.data == "[DONE]" {
            return Ok(true);
        }
        let chunk: Chunk =
            serde_json::from_str(event.data).map_err(|e| bad_event("OpenAI", &e, event.data))?;
        if let Some(error) = chunk.error {
            let error = provider_error(&error);
            return Err(Error::new(
                kind_of_stream_error(&error),
                http::describe(None, &error),
            ));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
                cache_read_input_tokens: usage
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                cache_creation_input_tokens: 0,
            };
        }
        // Only one completion is asked for (no `n`): choice 0 is the turn.
        let delta = chunk
            .choices
            .unwrap_or_default()
            .into_iter()
            .find(|choice| choice.index == 0)
            .and_then(|choice| choice.delta);
        if let Some(delta) = delta {
            if let Some(reasoning) = delta.reasoning_content.filter(|r| !r.is_empty()) {
                // A closed receiver only means nobody streams this call.
                let _ = deltas.send(Delta::Reasoning(reasoning));
            }
            for text in [delta.content, delta.refusal].into_iter().flatten() {
                if !text.is_empty() {
                    self.text.push_str(&text);
                    let _ = deltas.send(Delta::Text(text));
                }
            }
            for piece in delta.tool_calls.unwrap_or_default() {
                self.add_call_piece(piece);
            }
        }
        Ok(false)
    }

    fn finish(self) -> Result<ModelTurn, Error> {
        Ok(ModelTurn {
            text: self.text,
            tool_calls: self
                .calls
                .into_values()
                .map(PartialCall::finish)
                .collect::<Result<_, _>>()?,
            usage: self.usage,
        })
    }
}

impl OpenAiStream {
    fn add_call_piece(&mut self, piece: CallDelta) {
        let last = self.calls.keys().next_back().copied();
        // A server that leaves out `index` starts a new call with each new id.
        let index = piece.index.unwrap_or_else(|| match (&piece.id, last) {
            (Some(id), Some(last)) if !id.is_empty() && self.calls[&last].id != *id => last + 1,
            (_, Some(last)) => last,
            (_, None) => 0,
        });
        let call = self.calls.entry(index).or_default();
        if let Some(id) = piece.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(function) = piece.function {
            if let Some(name) = function.name.filter(|name| !name.is_empty()) {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }
}

/// `{"error": {"message", "type", "code"}}`, or the looser shapes of compatible servers
/// (`{"error": "text"}`, `{"message": …}`, `{"detail": …}`).
fn provider_error(value: &Value) -> ProviderError {
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let inner = value.get("error").unwrap_or(value);
    match inner {
        Value::String(message) => ProviderError {
            message: message.clone(),
            ..ProviderError::default()
        },
        _ => ProviderError {
            kind: text(inner.get("type")),
            code: text(inner.get("code")),
            message: text(inner.get("message").or_else(|| inner.get("detail"))),
        },
    }
}

fn is_context_length(error: &ProviderError) -> bool {
    let message = error.message.to_ascii_lowercase();
    error.code == "context_length_exceeded"
        || error.kind == "exceed_context_size_error"
        || message.contains("maximum context length")
        || message.contains("context length exceeded")
}

/// An error sent inside a stream that had started well.
fn kind_of_stream_error(error: &ProviderError) -> ErrorKind {
    if is_context_length(error) {
        ErrorKind::ContextLengthExceeded
    } else if error.code.contains("rate_limit") || error.kind.contains("rate_limit") {
        ErrorKind::RateLimited
    } else if error.kind == "invalid_request_error" {
        ErrorKind::Rejected
    } else {
        ErrorKind::Unavailable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(lines: &[&str]) -> Result<(ModelTurn, Vec<String>), Error> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut state = OpenAiStream::default();
        let mut ended = false;
        for data in lines {
            ended = state.on_event(sse::Event { event: "", data }, &tx)?;
        }
        assert!(ended, "the test stream ends with [DONE]");
        drop(tx);
        let mut streamed = Vec::new();
        while let Ok(delta) = rx.try_recv() {
            if let Delta::Text(text) = delta {
                streamed.push(text);
            }
        }
        Ok((state.finish()?, streamed))
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id() {
        let (turn, streamed) = feed(&[
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{\"v\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":"{}"}}]}}]}"#,
            r#"{"choices":null,"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(streamed, ["Hi"]);
        let calls: Vec<(String, String, Value)> = turn
            .tool_calls
            .into_iter()
            .map(|c| (c.id, c.name, c.arguments))
            .collect();
        assert_eq!(
            calls,
            [
                ("a".into(), "x".into(), json!({"v": 1})),
                ("b".into(), "y".into(), json!({}))
            ]
        );
        assert_eq!(turn.usage.input_tokens, 3);
        assert_eq!(turn.usage.output_tokens, 2);
    }

    #[test]
    fn errors_are_classified_by_status_and_body() {
        let cases = [
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
                ErrorKind::ContextLengthExceeded,
            ),
            (
                400,
                r#"{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}"#,
                ErrorKind::Rejected,
            ),
            (
                429,
                r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
                ErrorKind::Rejected,
            ),
            (
                429,
                r#"{"error":{"message":"Rate limit reached","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#,
                ErrorKind::RateLimited,
            ),
            (
                404,
                r#"{"error":"model 'llama9' not found"}"#,
                ErrorKind::Rejected,
            ),
            (503, "upstream connect error", ErrorKind::Unavailable),
        ];
        for (status, body, kind) in cases {
            let error =
                ChatCompletions::classify(StatusCode::from_u16(status).unwrap(), body.as_bytes());
            assert_eq!(error.kind, kind, "{status} {body}");
        }
        let described = ChatCompletions::classify(
            StatusCode::NOT_FOUND,
            br#"{"error":"model 'llama9' not found"}"#,
        );
        assert_eq!(described.message, "HTTP 404: model 'llama9' not found");
    }
}
