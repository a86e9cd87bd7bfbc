//! Anthropic Messages (`POST {base_url}/v1/messages`, `stream: true`).
//!
//! The answer streams as content blocks: `content_block_start` opens a `text` or `tool_use`
//! block at an index, `content_block_delta` adds a `text_delta` or an `input_json_delta` (a
//! fragment of the tool input's JSON text), `content_block_stop` closes it. A `thinking` block's
//! `thinking_delta`s stream as reasoning deltas and are not kept in the turn. `message_start`
//! carries the input usage, `message_delta` the cumulative output usage, `message_stop` ends the
//! stream; `ping` may come at any time and `error` replaces the rest.
//!
//! Baton's log maps onto the API's alternating turns: system messages become the top-level
//! `system`, consecutive tool results (and a user message after them) one `user` message of
//! `tool_result` blocks, a tool error a block with `is_error: true`.

use crate::{
    ApiKey, Settings,
    conversation::{PartialCall, bad_event, provider_messages, tool_result_text},
    http::StreamState,
    http::{self, ProviderError},
    sse,
    wire::{HttpModel, WireFormat},
};
use baton_core::{
    message::{Message, UserExtras},
    model::{Delta, Error, ErrorKind, ModelRequest, ModelTurn, Usage},
};
use reqwest::{StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};
use std::{borrow::Cow, collections::BTreeMap};
use tokio::sync::mpsc;

/// The hosted API's base URL, used when the configuration names none.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version Baton speaks (sent as `anthropic-version`).
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is sent when the configuration sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Messages wire format.
#[derive(Debug, Clone, Copy)]
pub struct Messages;

/// A model behind the Anthropic Messages API.
pub type Anthropic = HttpModel<Messages>;

impl WireFormat for Messages {
    type Stream = AnthropicStream;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const PATH: &'static str = "/v1/messages";

    fn headers(api_key: Option<&ApiKey>) -> Result<header::HeaderMap, Error> {
        let mut headers = header::HeaderMap::new();
        headers.insert(
            "anthropic-version",
            header::HeaderValue::from_static(API_VERSION),
        );
        if let Some(key) = api_key {
            headers.insert("x-api-key", key.header_value(&key.0)?);
        }
        Ok(headers)
    }

    /// A refused request: the body's error type decides, the status where the type is unknown.
    fn classify(status: StatusCode, body: &[u8]) -> Error {
        let error = ProviderError::from_body(body, provider_error);
        let by_status = http::kind_of_status(status);
        let kind = match kind_of_type(&error, by_status) {
            // Server trouble stays retryable whatever the body calls it.
            _ if by_status == ErrorKind::Unavailable => ErrorKind::Unavailable,
            kind => kind,
        };
        Error::new(kind, http::describe(Some(status), &error))
    }

    fn request_body(settings: &Settings, request: ModelRequest<'_>) -> Result<Value, Error> {
        let messages = provider_messages(request.messages)?;
        let mut system = Vec::new();
        let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
        for message in messages.iter() {
            let (role, blocks) = match message {
                Message::System { content } => {
                    system.push(content.as_str());
                    continue;
                }
                Message::User { content, chat } => ("user", user_blocks(content, chat.as_deref())),
                Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } => {
                    let mut blocks = Vec::new();
                    // The API refuses empty text blocks.
                    if !content.is_empty() {
                        blocks.push(text_block(content));
                    }
                    blocks.extend(tool_calls.iter().map(|call| {
                        json!({"type": "tool_use", "id": call.id, "name": call.name,
                               "input": call.arguments})
                    }));
                    ("assistant", blocks)
                }
                Message::Tool(result) => {
                    let (text, is_error) = tool_result_text(&result.outcome);
                    let mut block = json!({"type": "tool_result",
                        "tool_use_id": result.tool_call_id, "content": text});
                    if is_error {
                        block["is_error"] = json!(true);
                    }
                    ("user", vec![block])
                }
            };
            if blocks.is_empty() {
                continue;
            }
            // Roles alternate: what follows a message of the same role joins it.
            match turns.last_mut() {
                Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
                _ => turns.push((role, blocks)),
            }
        }
        let messages: Vec<Value> = turns
            .into_iter()
            .map(|(role, mut blocks)| {
                // A lone text block is sent as plain string content.
                let content = match blocks.as_mut_slice() {
                    [only] if only["type"] == "text" => only["text"].take(),
                    _ => Value::Array(blocks),
                };
                json!({"role": role, "content": content})
            })
            .collect();
        let mut body = json!({
            "model": settings.model,
            "max_tokens": settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
            "stream": true,
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|spec| {
                    json!({"name": spec.name, "description": spec.description,
                           "input_schema": spec.input_schema})
                })
                .collect();
        }
        if let Some(temperature) = settings.temperature {
            body["temperature"] = json!(temperature);
        }
        Ok(body)
    }
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A user message's blocks: its files (an `image`, or a `document` for a PDF, from base64
/// data), then its text (none when empty: the API refuses empty text blocks).
fn user_blocks(content: &str, extras: Option<&UserExtras>) -> Vec<Value> {
    let files = extras.map_or(&[][..], |extras| extras.files.as_slice());
    let mut blocks: Vec<Value> = files
        .iter()
        .map(|file| {
            let kind = if file.media_type.starts_with("image/") {
                "image"
            } else {
                "document"
            };
            json!({"type": kind, "source": {"type": "base64", "media_type": file.media_type,
                   "data": file.base64_data()}})
        })
        .collect();
    if !content.is_empty() || blocks.is_empty() {
        blocks.push(text_block(content));
    }
    blocks
}

/// The state of one streamed response.
#[derive(Debug, Default)]
pub struct AnthropicStream {
    text: String,
    /// Tool-use blocks by their content index; text blocks only add to `text`.
    calls: BTreeMap<u64, ToolUse>,
    usage: WireUsage,
}

#[derive(Debug, Default)]
struct ToolUse {
    call: PartialCall,
    /// The `input` of `content_block_start`, used when no `input_json_delta` follows.
    initial_input: Value,
}

/// One event, read as a flat struct of optional fields rather than an enum tagged by `type`:
/// a tagged enum makes serde buffer the whole event first, which took a third of the time.
/// Strings borrow from the event where they have no escapes.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<EventDelta<'a>>,
    #[serde(default, borrow)]
    content_block: Option<Block<'a>>,
    #[serde(default)]
    message: Option<StartMessage>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct EventDelta<'a> {
    /// `message_delta`'s delta has no type.
    #[serde(rename = "type", default, borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    /// A `thinking_delta`'s piece of reasoning.
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    /// A `thinking` block's opening text (usually empty: it comes as deltas).
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Later counts replace earlier ones (`message_delta`'s are cumulative); absent ones stay.
    fn update(&mut self, newer: WireUsage) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = newer
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = newer
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
    }
}

impl StreamState for AnthropicStream {
    fn on_event(
        &mut self,
        event: sse::Event<'_>,
        deltas: &mpsc::UnboundedSender<Delta>,
    ) -> Result<bool, Error> {
        let parsed: Event<'_> =
            serde_json::from_str(event.data).map_err(|e| bad_event("Anthropic", &e, event.data))?;
        let malformed = |what: &str| {
            Error::new(
                ErrorKind::BadResponse,
                format!("Anthropic sent a {} event without {what}", parsed.kind),
            )
        };
        match parsed.kind.as_ref() {
            "message_start" => {
                let message = parsed
                    .message
                    .as_ref()
                    .ok_or_else(|| malformed("message"))?;
                if let Some(usage) = message.usage {
                    self.usage.update(usage);
                }
            }
            "content_block_start" => {
                let index = parsed.index.ok_or_else(|| malformed("index"))?;
                let block = parsed
                    .content_block
                    .ok_or_else(|| malformed("content_block"))?;
                match block.kind.as_ref() {
                    "text" => self.push_text(block.text.as_deref().unwrap_or(""), deltas),
                    "tool_use" => {
                        self.calls.insert(
                            index,
                            ToolUse {
                                call: PartialCall {
                                    id: block.id.unwrap_or_default(),
                                    name: block.name.unwrap_or_default(),
                                    arguments: String::new(),
                                },
                                initial_input: block.input.unwrap_or(Value::Null),
                            },
                        );
                    }
                    // A thinking block's text streams as reasoning (its deltas); thinking and
                    // server-side blocks have no place in Baton's log.
                    "thinking" => {
                        push_reasoning(block.thinking.as_deref().unwrap_or(""), deltas);
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = parsed.index.ok_or_else(|| malformed("index"))?;
                let delta = parsed.delta.ok_or_else(|| malformed("delta"))?;
                match delta.kind.as_ref() {
                    "text_delta" => self.push_text(delta.text.as_deref().unwrap_or(""), deltas),
                    "thinking_delta" => {
                        push_reasoning(delta.thinking.as_deref().unwrap_or(""), deltas);
                    }
                    "input_json_delta" => {
                        let tool_use = self.calls.get_mut(&index).ok_or_else(|| {
                            Error::new(
                                ErrorKind::BadResponse,
                                format!(
                                    "an input_json_delta for block {index}, which is no tool_use"
                                ),
                            )
                        })?;
                        tool_use
                            .call
                            .arguments
                            .push_str(delta.partial_json.as_deref().unwrap_or(""));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(usage) = parsed.usage {
                    self.usage.update(usage);
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let error = provider_error(parsed.error.as_ref().unwrap_or(&Value::Null));
                return Err(Error::new(
                    kind_of_type(&error, ErrorKind::Unavailable),
                    http::describe(None, &error),
                ));
            }
            // `ping`, `content_block_stop`, and event types added after this adapter was
            // written, which the API's versioning policy asks clients to skip.
            _ => {}
        }
        Ok(false)
    }

    fn finish(self) -> Result<ModelTurn, Error> {
        let tool_calls = self
            .calls
            .into_values()
            .map(|mut tool_use| {
                let no_fragments = tool_use.call.arguments.trim().is_empty();
                if no_fragments && tool_use.initial_input.is_object() {
                    tool_use.call.arguments = tool_use.initial_input.to_string();
                }
                tool_use.call.finish()
            })
            .collect::<Result<_, _>>()?;
        let usage = self.usage;
        let cache_read = usage.cache_read_input_tokens.unwrap_or(0);
        let cache_creation = usage.cache_creation_input_tokens.unwrap_or(0);
        Ok(ModelTurn {
            text: self.text,
            tool_calls,
            usage: Usage {
                // Anthropic counts cache reads and writes apart from `input_tokens`.
                input_tokens: usage.input_tokens.unwrap_or(0) + cache_read + cache_creation,
                output_tokens: usage.output_tokens.unwrap_or(0),
                cache_read_input_tokens: cache_read,
                cache_creation_input_tokens: cache_creation,
            },
        })
    }
}

impl AnthropicStream {
    fn push_text(&mut self, text: &str, deltas: &mpsc::UnboundedSender<Delta>) {
        if !text.is_empty() {
            self.text.push_str(text);
            // A closed receiver only means nobody streams this call.
            let _ = deltas.send(Delta::Text(text.to_owned()));
        }
    }
}

/// Streams a piece of a thinking block (its `signature_delta`s are not reasoning, and are
/// dropped with the block).
fn push_reasoning(text: &str, deltas: &mpsc::UnboundedSender<Delta>) {
    if !text.is_empty() {
        // A closed receiver only means nobody streams this call.
        let _ = deltas.send(Delta::Reasoning(text.to_owned()));
    }
}

/// `{"type": "error", "error": {"type", "message", "details"?}, "request_id"?}` or the inner
/// object alone (the stream's `error` event).
fn provider_error(value: &Value) -> ProviderError {
    let inner = value.get("error").unwrap_or(value);
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    let mut message = text(&inner["message"]);
    if let Some(request) = value["request_id"].as_str() {
        message.push_str(&format!(" (request {request})"));
    }
    ProviderError {
        kind: text(&inner["type"]),
        code: text(&inner["details"]["error_code"]),
        message,
    }
}

/// The kind an Anthropic error type means; `fallback` for a type it does not know.
fn kind_of_type(error: &ProviderError, fallback: ErrorKind) -> ErrorKind {
    match error.kind.as_str() {
        "invalid_request_error" if error.message.contains("prompt is too long") => {
            ErrorKind::ContextLengthExceeded
        }
        "invalid_request_error" | "not_found_error" | "request_too_large" | "billing_error" => {
            ErrorKind::Rejected
        }
        "authentication_error" | "permission_error" => ErrorKind::Authentication,
        // A spent monthly limit is a 429 too, but waiting minutes does not lift it.
        "rate_limit_error" if error.code == "enforced_spend_limit_reached" => ErrorKind::Rejected,
        "rate_limit_error" => ErrorKind::RateLimited,
        "overloaded_error" | "api_error" | "timeout_error" => ErrorKind::Unavailable,
        _ => fallback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified_by_type_then_status() {
        let cases = [
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_1"}"#,
                ErrorKind::ContextLengthExceeded,
            ),
            (
                401,
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
                ErrorKind::Authentication,
            ),
            (
                404,
                r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}"#,
                ErrorKind::Rejected,
            ),
            (
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}"#,
                ErrorKind::RateLimited,
            ),
            (
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"spend limit","details":{"error_code":"enforced_spend_limit_reached"}}}"#,
                ErrorKind::Rejected,
            ),
            (
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ErrorKind::Unavailable,
            ),
            (500, "<html>bad gateway</html>", ErrorKind::Unavailable),
        ];
        for (status, body, kind) in cases {
            let error = Messages::classify(StatusCode::from_u16(status).unwrap(), body.as_bytes());
            assert_eq!(error.kind, kind, "{status} {body}");
        }
        let first = Messages::classify(StatusCode::BAD_REQUEST, cases[0].1.as_bytes());
        assert_eq!(
            first.message,
            "HTTP 400 invalid_request_error: prompt is too long: 208310 tokens > 200000 maximum \
             (request req_1)"
        );
    }
}
