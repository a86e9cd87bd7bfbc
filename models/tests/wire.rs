//! The adapters against their real wire formats: recorded responses (`tests/fixtures/`) replayed
//! byte for byte by a local server, cut at awkward places; the exact requests Baton sends.

use baton_core::{
    message::{FilePart, Message, ToolCall, ToolError, ToolOutcome, UserExtras},
    model::{Delta, Error, ErrorKind, Model, ModelRequest, ModelTurn, Usage},
    tool::ToolSpec,
};
use baton_models::{
    Anthropic, ApiKey, ModelConfig, OpenAi, Provider, Settings,
    replay::{Replay, Reply, Then, split_awkwardly},
};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::mpsc;

const KEY: &str = "sk-test-0123456789-secret";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn settings(provider: Provider, model: &str, replay: &Replay) -> Settings {
    let base_url = match provider {
        Provider::OpenAi => format!("{}/v1", replay.base_url()),
        Provider::Anthropic => replay.base_url(),
    };
    let mut config = ModelConfig::new(provider, model);
    config.base_url = Some(base_url);
    config.temperature = Some(0.2);
    config.max_tokens = Some(256);
    config.timeout = Some(Duration::from_secs(30));
    Settings::new(&config, Some(ApiKey::new(KEY)))
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        provider_id: None,
    }
}

/// A log with everything the mapping must carry: a system prompt, two parallel calls, a result
/// and a tool error, then a user message right after the results.
fn conversation() -> Vec<Message> {
    let calculator = call(
        "call_1",
        "calculator",
        json!({"operation": "multiply", "a": 6, "b": 7}),
    );
    let clock = call("call_2", "clock", json!({}));
    vec![
        Message::system("You are terse."),
        Message::user("What is 6 × 7, and what time is it?"),
        Message::assistant("Let me check.", vec![calculator.clone(), clock.clone()]),
        Message::tool_result(&calculator, ToolOutcome::Result(json!(42))),
        Message::tool_result(
            &clock,
            ToolOutcome::Error(ToolError::new("tool_failed", "clock unplugged")),
        ),
        Message::user("Try the clock again."),
    ]
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "clock".into(),
        description: "Tells the current UTC time.".into(),
        input_schema: json!({"type": "object", "properties": {}}),
    }]
}

/// Runs one call and returns its outcome and the text deltas it streamed, in order.
async fn generate(
    model: &dyn Model,
    messages: &[Message],
) -> (Result<ModelTurn, Error>, Vec<String>) {
    let (outcome, deltas) = generate_streamed(model, messages).await;
    let texts = deltas
        .into_iter()
        .filter_map(|delta| match delta {
            Delta::Text(text) => Some(text),
            Delta::Reasoning(_) => None,
        })
        .collect();
    (outcome, texts)
}

/// Runs one call and returns its outcome and every delta it streamed (text and reasoning), in
/// order.
async fn generate_streamed(
    model: &dyn Model,
    messages: &[Message],
) -> (Result<ModelTurn, Error>, Vec<Delta>) {
    let tools = tools();
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let outcome = model
        .generate(
            ModelRequest {
                messages,
                tools: &tools,
            },
            sender,
        )
        .await;
    let mut deltas = Vec::new();
    while let Ok(delta) = receiver.try_recv() {
        deltas.push(delta);
    }
    (outcome, deltas)
}

async fn openai(replies: Vec<Reply>) -> (OpenAi, Replay) {
    let replay = Replay::start(replies).await;
    let model = OpenAi::new(settings(Provider::OpenAi, "gpt-4o-mini", &replay)).unwrap();
    (model, replay)
}

async fn anthropic(replies: Vec<Reply>) -> (Anthropic, Replay) {
    let replay = Replay::start(replies).await;
    let model =
        Anthropic::new(settings(Provider::Anthropic, "claude-sonnet-4-5", &replay)).unwrap();
    (model, replay)
}

#[tokio::test]
async fn openai_sends_the_exact_request_and_streams_text_and_usage() {
    let (model, mut replay) = openai(vec![Reply::stream(split_awkwardly(&fixture(
        "openai_text.sse",
    )))])
    .await;
    let (turn, deltas) = generate(&model, &conversation()).await;
    let turn = turn.unwrap();
    assert_eq!(
        deltas,
        [
            "6 × 7 = 42",
            ", and it is ",
            "2026-11-30T04:00:00Z",
            " — déjà vu 🎉"
        ]
    );
    assert_eq!(
        turn,
        ModelTurn {
            text: "6 × 7 = 42, and it is 2026-11-30T04:00:00Z — déjà vu 🎉".into(),
            tool_calls: vec![],
            usage: Usage {
                input_tokens: 1310,
                output_tokens: 24,
                cache_read_input_tokens: 1152,
                cache_creation_input_tokens: 0,
            },
        }
    );

    let request = replay.next_request().await;
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    assert_eq!(request.header("x-api-key"), None);
    assert_eq!(
        request.json(),
        json!({
            "model": "gpt-4o-mini",
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.2,
            "max_tokens": 256,
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "What is 6 × 7, and what time is it?"},
                {"role": "assistant", "content": "Let me check.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "calculator",
                        "arguments": "{\"a\":6,\"b\":7,\"operation\":\"multiply\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "clock",
                        "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "42"},
                {"role": "tool", "tool_call_id": "call_2",
                    "content": "{\"error\":{\"code\":\"tool_failed\",\"message\":\"clock unplugged\"}}"},
                {"role": "user", "content": "Try the clock again."},
            ],
            "tools": [{"type": "function", "function": {"name": "clock",
                "description": "Tells the current UTC time.",
                "parameters": {"type": "object", "properties": {}}}}],
        })
    );
}

#[tokio::test]
async fn openai_assembles_parallel_tool_calls_from_fragments() {
    let (model, _replay) = openai(vec![Reply::stream(split_awkwardly(&fixture(
        "openai_tool_calls.sse",
    )))])
    .await;
    let (turn, deltas) = generate(&model, &[Message::user("6 × 7? And the time?")]).await;
    let turn = turn.unwrap();
    assert!(deltas.is_empty());
    assert_eq!(turn.text, "");
    assert_eq!(
        turn.tool_calls,
        [
            call(
                "call_Qm3nV8sLk2TzR1yWc5Hx0Ad9",
                "calculator",
                json!({"operation": "multiply", "a": 6, "b": 7})
            ),
            call("call_Zp4eJ7uBn1XsK0qLt8Wm6Fc2", "clock", json!({})),
        ]
    );
    assert_eq!(
        (turn.usage.input_tokens, turn.usage.output_tokens),
        (1203, 49)
    );
}

#[tokio::test]
async fn anthropic_sends_the_exact_request_and_assembles_tool_use_blocks() {
    let (model, mut replay) = anthropic(vec![Reply::stream(split_awkwardly(&fixture(
        "anthropic_tool_use.sse",
    )))])
    .await;
    let (turn, deltas) = generate(&model, &conversation()).await;
    let turn = turn.unwrap();
    assert_eq!(
        deltas,
        ["Let me work that out — ", "and look at the clock."]
    );
    assert_eq!(
        turn,
        ModelTurn {
            text: "Let me work that out — and look at the clock.".into(),
            tool_calls: vec![
                call(
                    "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                    "calculator",
                    json!({"operation": "multiply", "a": 6, "b": 7})
                ),
                call("toolu_01HqB9Lp2uWQm6zEwJ1dKf8c", "clock", json!({})),
            ],
            usage: Usage {
                input_tokens: 472 + 1800,
                output_tokens: 89,
                cache_read_input_tokens: 1800,
                cache_creation_input_tokens: 0,
            },
        }
    );

    let request = replay.next_request().await;
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(
        request.json(),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 256,
            "temperature": 0.2,
            "stream": true,
            "system": "You are terse.",
            "messages": [
                {"role": "user", "content": "What is 6 × 7, and what time is it?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "call_1", "name": "calculator",
                        "input": {"operation": "multiply", "a": 6, "b": 7}},
                    {"type": "tool_use", "id": "call_2", "name": "clock", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "42"},
                    {"type": "tool_result", "tool_use_id": "call_2", "is_error": true,
                        "content": "{\"code\":\"tool_failed\",\"message\":\"clock unplugged\"}"},
                    {"type": "text", "text": "Try the clock again."},
                ]},
            ],
            "tools": [{"name": "clock", "description": "Tells the current UTC time.",
                "input_schema": {"type": "object", "properties": {}}}],
        })
    );
}

#[tokio::test]
async fn anthropic_streams_text_with_pings_and_cache_writes() {
    let (model, _replay) = anthropic(vec![Reply::stream(split_awkwardly(&fixture(
        "anthropic_text.sse",
    )))])
    .await;
    let (turn, deltas) = generate(&model, &[Message::user("go")]).await;
    let turn = turn.unwrap();
    assert_eq!(
        deltas,
        [
            "6 × 7 = 42",
            ", and it is 2026-11-30T04:00:00Z",
            " — déjà vu 🎉"
        ]
    );
    assert_eq!(turn.text, deltas.concat());
    assert_eq!(
        turn.usage,
        Usage {
            input_tokens: 590 + 1200,
            output_tokens: 27,
            cache_read_input_tokens: 0,
            cache_creation_input_tokens: 1200,
        }
    );
}

/// The stream and refusal cases of one adapter: (reply, expected kind, retry-after, message part).
type Case = (Reply, ErrorKind, Option<Duration>, &'static str);

async fn assert_failures(model: &dyn Model, replay: &Replay, cases: Vec<Case>) {
    for (reply, kind, retry_after, says) in cases {
        replay.push(reply);
        let (outcome, _) = generate(model, &[Message::user("go")]).await;
        let error = outcome.expect_err(says);
        assert_eq!(error.kind, kind, "{error}");
        assert_eq!(error.retry_after, retry_after, "{error}");
        assert!(error.message.contains(says), "{error} should say {says:?}");
        assert!(!error.message.contains(KEY), "{error} shows the key");
    }
}

/// `body` without its last `drop` bytes, cut awkwardly.
fn cut_short(body: &[u8], drop: usize) -> Vec<Vec<u8>> {
    split_awkwardly(&body[..body.len() - drop])
}

#[tokio::test]
async fn openai_failures_are_typed() {
    let (model, replay) = openai(vec![]).await;
    let text = fixture("openai_text.sse");
    let done = b"data: [DONE]\n\n".len();
    let echoed = format!("{{\"error\":\"key {KEY} is revoked\"}}");
    let cases: Vec<Case> = vec![
        (
            Reply::error(403, echoed.as_bytes()),
            ErrorKind::Authentication,
            None,
            "HTTP 403: key [api key] is revoked",
        ),
        (
            Reply::error(401, &fixture("openai_error_401.json")),
            ErrorKind::Authentication,
            None,
            "HTTP 401 invalid_request_error invalid_api_key: Incorrect API key provided",
        ),
        (
            Reply::error(429, &fixture("openai_error_429.json"))
                .header("retry-after", "1")
                .header("retry-after-ms", "343"),
            ErrorKind::RateLimited,
            Some(Duration::from_millis(343)),
            "HTTP 429 tokens rate_limit_exceeded: Rate limit reached",
        ),
        (
            Reply::error(400, &fixture("openai_error_context.json")),
            ErrorKind::ContextLengthExceeded,
            None,
            "maximum context length is 128000 tokens",
        ),
        (
            Reply::error(404, b"{\"error\":\"model 'gpt-5-nano' not found\"}"),
            ErrorKind::Rejected,
            None,
            "HTTP 404: model 'gpt-5-nano' not found",
        ),
        (
            Reply::error(503, b"upstream connect error or disconnect/reset before headers")
                .header("retry-after", "2"),
            ErrorKind::Unavailable,
            Some(Duration::from_secs(2)),
            "HTTP 503: upstream connect error",
        ),
        (
            Reply::stream(cut_short(&text, done)),
            ErrorKind::Truncated,
            None,
            "the stream ended before its end marker",
        ),
        (
            Reply::stream(cut_short(&text, done + 30)),
            ErrorKind::Truncated,
            None,
            "the stream ended in the middle of an event",
        ),
        (
            Reply::stream(cut_short(&text, done + 30)).then(Then::Cut),
            ErrorKind::Network,
            None,
            "POST http://127.0.0.1",
        ),
        (
            Reply::stream(split_awkwardly(&fixture("openai_bad_arguments.sse"))),
            ErrorKind::BadResponse,
            None,
            "the arguments of tool call call_Qm3nV8sLk2TzR1yWc5Hx0Ad9 (calculator) are not JSON",
        ),
        (
            Reply::stream(vec![b"data: {\"id\": \"chatcmpl-1\", \"choices\": [\n\n".to_vec()]),
            ErrorKind::BadResponse,
            None,
            "OpenAI sent an event that is not its format",
        ),
        (
            Reply::stream(vec![
                b"data: {\"error\":{\"message\":\"The server had an error while processing your request. Sorry about that!\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n".to_vec(),
            ]),
            ErrorKind::Unavailable,
            None,
            "server_error: The server had an error",
        ),
    ];
    assert_failures(&model, &replay, cases).await;
}

#[tokio::test]
async fn anthropic_failures_are_typed() {
    let (model, replay) = anthropic(vec![]).await;
    let tool_use = fixture("anthropic_tool_use.sse");
    let stop = b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".len();
    let cases: Vec<Case> = vec![
        (
            Reply::error(529, &fixture("anthropic_error_529.json")).header("retry-after", "3"),
            ErrorKind::Unavailable,
            Some(Duration::from_secs(3)),
            "HTTP 529 overloaded_error: Overloaded (request req_011CVd7kGx2yHn4pTq9Rb3Ls)",
        ),
        (
            Reply::error(401, &fixture("anthropic_error_401.json")),
            ErrorKind::Authentication,
            None,
            "HTTP 401 authentication_error: invalid x-api-key",
        ),
        (
            Reply::error(400, &fixture("anthropic_error_context.json")),
            ErrorKind::ContextLengthExceeded,
            None,
            "prompt is too long: 208310 tokens > 200000 maximum",
        ),
        (
            Reply::stream(split_awkwardly(&fixture("anthropic_overloaded_event.sse"))),
            ErrorKind::Unavailable,
            None,
            "overloaded_error: Overloaded",
        ),
        (
            Reply::stream(cut_short(&tool_use, stop)),
            ErrorKind::Truncated,
            None,
            "the stream ended before its end marker",
        ),
        (
            Reply::stream(vec![
                b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":7}\n\n"
                    .to_vec(),
            ]),
            ErrorKind::BadResponse,
            None,
            "Anthropic sent an event that is not its format",
        ),
    ];
    assert_failures(&model, &replay, cases).await;
}

#[tokio::test]
async fn a_log_with_an_unanswered_call_is_refused_before_any_request() {
    let (model, mut replay) = anthropic(vec![]).await;
    let calculator = call("call_1", "calculator", json!({}));
    let (outcome, _) = generate(
        &model,
        &[
            Message::user("go"),
            Message::assistant("", vec![calculator]),
        ],
    )
    .await;
    let error = outcome.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Failed);
    assert_eq!(
        error.message,
        "tool call \"call_1\" has no result in the log"
    );
    assert!(replay.requests_so_far().is_empty());
}

/// The replay server's promise, on which the tests above rest: the client's reads see exactly
/// the pieces chosen, however the kernel packs them.
#[tokio::test]
async fn the_client_reads_the_replayed_pieces_one_by_one() {
    use futures::StreamExt;
    let body = fixture("anthropic_tool_use.sse");
    let pieces = split_awkwardly(&body);
    let replay = Replay::start(vec![Reply::stream(pieces.clone())]).await;
    let response = reqwest::Client::new()
        .post(replay.base_url())
        .body("{}")
        .send()
        .await
        .unwrap();
    let mut reads = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(read) = stream.next().await {
        reads.push(read.unwrap().to_vec());
    }
    assert_eq!(pieces.len(), 34);
    assert_eq!(reads, pieces);
}

/// A user message with an image and a PDF beside its text, as a chat client sends it.
fn with_files() -> Vec<Message> {
    let file = |media_type: &str, data: &str, filename: Option<&str>| FilePart {
        media_type: media_type.into(),
        url: format!("data:{media_type};base64,{data}"),
        filename: filename.map(str::to_owned),
    };
    let extras = UserExtras {
        id: Some("client-1".into()),
        metadata: Some(json!({"lang": "en"})),
        files: vec![
            file("image/png", "iVBORw0KGgo=", None),
            file("application/pdf", "JVBERi0xLjQ=", Some("trip.pdf")),
        ],
        // What a chat shows beside the message, never sent to a model.
        received_at: Some(1_700_000_000_000),
    };
    vec![Message::user_with("What is in these?", extras)]
}

/// The `messages` of the request `model` sends for [`with_files`] (answered by `replay`).
async fn sent_with_files(model: &dyn Model, replay: &mut Replay) -> Value {
    let (turn, _) = generate(model, &with_files()).await;
    turn.unwrap();
    replay.next_request().await.json()["messages"].take()
}

#[tokio::test]
async fn openai_sends_file_parts_as_image_url_and_file_content() {
    let (model, mut replay) = openai(vec![Reply::stream(split_awkwardly(&fixture(
        "openai_text.sse",
    )))])
    .await;
    assert_eq!(
        sent_with_files(&model, &mut replay).await,
        json!([{"role": "user", "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0xLjQ=",
                                      "filename": "trip.pdf"}},
        ]}])
    );
}

#[tokio::test]
async fn anthropic_sends_file_parts_as_image_and_document_blocks() {
    let (model, mut replay) = anthropic(vec![Reply::stream(split_awkwardly(&fixture(
        "anthropic_text.sse",
    )))])
    .await;
    assert_eq!(
        sent_with_files(&model, &mut replay).await,
        json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                            "data": "JVBERi0xLjQ="}},
            {"type": "text", "text": "What is in these?"},
        ]}])
    );
}

#[tokio::test]
async fn reasoning_streams_apart_from_the_text_and_stays_out_of_the_turn() {
    let (anthropic, _replay) = anthropic(vec![Reply::stream(split_awkwardly(&fixture(
        "anthropic_thinking.sse",
    )))])
    .await;
    let (openai, _replay) = openai(vec![Reply::stream(split_awkwardly(&fixture(
        "openai_reasoning.sse",
    )))])
    .await;
    let reasoning = |text: &str| Delta::Reasoning(text.into());
    let text = |text: &str| Delta::Text(text.into());

    // Anthropic: the thinking block's deltas first, in order (its signature is not reasoning),
    // then the text; the turn holds the text and the call only.
    let (turn, deltas) = generate_streamed(&anthropic, &conversation()).await;
    let turn = turn.unwrap();
    assert_eq!(
        deltas,
        [
            reasoning("6 × 7 is 42; "),
            reasoning("the time needs the clock — déjà vu."),
            text("It is 42; "),
            text("checking the clock."),
        ]
    );
    assert_eq!(
        turn,
        ModelTurn {
            text: "It is 42; checking the clock.".into(),
            tool_calls: vec![call("toolu_01PmX4cR8dWq2Zs6Yk9Lh3Tb", "clock", json!({}))],
            usage: Usage {
                input_tokens: 512,
                output_tokens: 131,
                cache_read_input_tokens: 0,
                cache_creation_input_tokens: 0,
            },
        }
    );

    // OpenAI-compatible (DeepSeek's shape): `reasoning_content` deltas, then `content`.
    let (turn, deltas) = generate_streamed(&openai, &conversation()).await;
    let turn = turn.unwrap();
    assert_eq!(
        deltas,
        [
            reasoning("6 × 7 is 42"),
            reasoning("; say it — déjà vu."),
            text("42"),
            text(" 🎉"),
        ]
    );
    assert_eq!(turn.text, "42 🎉");
    assert!(turn.tool_calls.is_empty());
    assert_eq!(turn.usage.input_tokens, 38);
    assert_eq!(turn.usage.output_tokens, 57);
}
