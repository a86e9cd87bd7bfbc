//! Agent runs on the real model adapters, end to end: a local server replays recorded OpenAI
//! and Anthropic streams, a real Temporal dev server runs the workflow, a real Redis holds the
//! session. Tool call → tool result → answer; a retried 529; a final 401; an interrupt that
//! closes the model's stream.

use baton_client::Client as _;
use baton_core::{
    Agent, AgentRegistry, ChunkKind, ErrorCode, Message, Model, StreamChunk, Usage,
    chunk::EndStatus,
    config::{ModelConfig, Provider},
    message::{ToolCall, ToolOutcome},
    store::SessionAddress,
    tool::tool,
};
use baton_models::{
    ApiKey,
    replay::{Recorded, Replay, Reply, Then, split_awkwardly},
};
use baton_tests::{Harness, WAIT_LIMIT};
use serde_json::{Value, json};
use std::sync::Arc;

const KEY: &str = "sk-test-e2e-key";
const QUESTION: &str = "What is 6 × 7, and what time is it?";
const ANSWER: &str = "6 × 7 = 42, and it is 2026-11-30T04:00:00Z — déjà vu 🎉";
const NOW: &str = "2026-11-30T04:00:00Z";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../models/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn streamed(name: &str) -> Reply {
    Reply::stream(split_awkwardly(&fixture(name)))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Arithmetic {
    operation: String,
    a: i64,
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// An agent on `model` with a calculator and a clock that always says [`NOW`].
fn agent(model: Arc<dyn Model>) -> AgentRegistry {
    let calculator = tool(
        "calculator",
        "Multiplies a and b.",
        |input: Arithmetic| async move {
            match input.operation.as_str() {
                "multiply" => Ok(input.a * input.b),
                other => Err(format!("cannot {other}")),
            }
        },
    )
    .inline();
    let clock = tool("clock", "Tells the current UTC time.", |_: Nothing| async {
        Ok::<_, String>(NOW)
    })
    .inline();
    let agent = Agent::builder("assistant")
        .system_prompt("You are terse.")
        .model(model)
        .tool(calculator)
        .tool(clock)
        .max_steps(3)
        .build()
        .unwrap();
    AgentRegistry::new([agent]).unwrap()
}

fn model(provider: Provider, replay: &Replay) -> Arc<dyn Model> {
    let (name, base_url) = match provider {
        Provider::OpenAi => ("gpt-4o-mini", format!("{}/v1", replay.base_url())),
        Provider::Anthropic => ("claude-sonnet-4-5", replay.base_url()),
    };
    let mut config = ModelConfig::new(provider, name);
    config.base_url = Some(base_url);
    // Longer than any wait of these tests: only a cancellation may end a quiet stream early.
    config.timeout = Some(WAIT_LIMIT * 10);
    baton_models::build(&config, Some(ApiKey::new(KEY))).unwrap()
}

/// What one session did: its chunks up to `end`, its log, and the requests the model server got.
struct Run {
    chunks: Vec<StreamChunk>,
    messages: Vec<Message>,
    /// Per committed step: the model's name and its usage, as stored in Redis.
    usage: Vec<(String, Usage)>,
    requests: Vec<Recorded>,
}

async fn run(provider: Provider, replies: Vec<Reply>) -> Run {
    let mut replay = Replay::start(replies).await;
    let harness = Harness::start(agent(model(provider, &replay))).await;
    let started = harness.client.start("assistant", QUESTION).await.unwrap();
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let messages = harness.messages(&started.session_id).await;
    let usage = harness
        .store
        .usage_records(&SessionAddress::root(&started.session_id))
        .await
        .unwrap()
        .into_iter()
        .map(|record| (record.model, record.usage))
        .collect();
    Run {
        chunks,
        messages,
        usage,
        requests: replay.requests_so_far(),
    }
}

fn end(chunks: &[StreamChunk]) -> (&EndStatus, Option<&str>, Option<ErrorCode>, &Usage) {
    match &chunks.last().unwrap().kind {
        ChunkKind::End {
            status,
            output,
            error,
            usage,
            ..
        } => (
            status,
            output.as_deref(),
            error.as_ref().map(|e| e.code),
            &usage.tokens,
        ),
        other => panic!("the last chunk is not the end: {other:?}"),
    }
}

/// Asserts that the run completed with [`ANSWER`] and used `usage` in all.
fn assert_completed(chunks: &[StreamChunk], usage: Usage) {
    let (status, output, error, total) = end(chunks);
    assert_eq!(
        (status, output, error),
        (&EndStatus::Completed, Some(ANSWER), None)
    );
    assert_eq!(total, &usage);
}

fn text_deltas(chunks: &[StreamChunk], of_step: u32) -> Vec<&str> {
    chunks
        .iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::TextDelta { step, delta } if *step == of_step => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        provider_id: None,
    }
}

/// The log of a completed run whose first turn called the two tools.
fn expected_log(first_text: &str, calculator_id: &str, clock_id: &str) -> Vec<Message> {
    let calculator = call(
        calculator_id,
        "calculator",
        json!({"operation": "multiply", "a": 6, "b": 7}),
    );
    let clock = call(clock_id, "clock", json!({}));
    vec![
        Message::system("You are terse."),
        Message::user(QUESTION),
        Message::assistant(first_text, vec![calculator.clone(), clock.clone()]),
        Message::tool_result(&calculator, ToolOutcome::Result(json!(42))),
        Message::tool_result(&clock, ToolOutcome::Result(json!(NOW))),
        Message::assistant(ANSWER, vec![]),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_agent_calls_tools_then_answers() {
    let run = run(
        Provider::OpenAi,
        vec![
            streamed("openai_tool_calls.sse"),
            streamed("openai_text.sse"),
        ],
    )
    .await;
    assert_completed(
        &run.chunks,
        Usage {
            input_tokens: 1203 + 1310,
            output_tokens: 49 + 24,
            cache_read_input_tokens: 1152,
            cache_creation_input_tokens: 0,
        },
    );
    assert_eq!(
        text_deltas(&run.chunks, 2),
        [
            "6 × 7 = 42",
            ", and it is ",
            "2026-11-30T04:00:00Z",
            " — déjà vu 🎉"
        ]
    );
    let usage = |input_tokens, output_tokens, cache_read_input_tokens| Usage {
        input_tokens,
        output_tokens,
        cache_read_input_tokens,
        cache_creation_input_tokens: 0,
    };
    assert_eq!(
        run.usage,
        [
            ("gpt-4o-mini".to_owned(), usage(1203, 49, 0)),
            ("gpt-4o-mini".to_owned(), usage(1310, 24, 1152)),
        ]
    );
    let (calculator_id, clock_id) = (
        "call_Qm3nV8sLk2TzR1yWc5Hx0Ad9",
        "call_Zp4eJ7uBn1XsK0qLt8Wm6Fc2",
    );
    assert_eq!(run.messages, expected_log("", calculator_id, clock_id));

    assert_eq!(run.requests.len(), 2);
    let first = run.requests[0].json();
    assert_eq!(
        first["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": QUESTION},
        ])
    );
    let tool_names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tool_names, ["calculator", "clock"]);
    assert_eq!(
        run.requests[1].json()["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": calculator_id, "type": "function", "function": {"name": "calculator",
                    "arguments": "{\"a\":6,\"b\":7,\"operation\":\"multiply\"}"}},
                {"id": clock_id, "type": "function", "function": {"name": "clock",
                    "arguments": "{}"}},
            ]},
            {"role": "tool", "tool_call_id": calculator_id, "content": "42"},
            {"role": "tool", "tool_call_id": clock_id, "content": NOW},
        ])
    );
    for request in &run.requests {
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_repeating_its_call_ids_gets_them_back_and_the_log_has_batons_own() {
    // A server that answers the same ids every request (the recorded exchange, twice).
    let run = run(
        Provider::OpenAi,
        vec![
            streamed("openai_tool_calls.sse"),
            streamed("openai_tool_calls.sse"),
            streamed("openai_text.sse"),
        ],
    )
    .await;
    let (status, output, ..) = end(&run.chunks);
    assert_eq!((status, output), (&EndStatus::Completed, Some(ANSWER)));
    let (calculator_id, clock_id) = (
        "call_Qm3nV8sLk2TzR1yWc5Hx0Ad9",
        "call_Zp4eJ7uBn1XsK0qLt8Wm6Fc2",
    );
    // The second turn's calls are Baton's own in the log and on the stream, the model's kept.
    let Message::Assistant { tool_calls, .. } = &run.messages[5] else {
        panic!("{:?}", run.messages[5]);
    };
    let ids: Vec<(&str, Option<&str>)> = tool_calls
        .iter()
        .map(|call| (call.id.as_str(), call.provider_id.as_deref()))
        .collect();
    assert_eq!(ids[0].1, Some(calculator_id));
    assert_eq!(ids[1].1, Some(clock_id));
    assert!(ids.iter().all(|(id, _)| id.starts_with("bt_")), "{ids:?}");
    let announced: Vec<&str> = run
        .chunks
        .iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::ToolStart { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(announced, [calculator_id, clock_id, ids[0].0, ids[1].0]);
    // The provider is sent its own ids back, on both turns' calls and results.
    let sent = run.requests[2].json();
    let mut sent_ids: Vec<&str> = Vec::new();
    for message in sent["messages"].as_array().unwrap() {
        if let Some(calls) = message["tool_calls"].as_array() {
            sent_ids.extend(calls.iter().map(|call| call["id"].as_str().unwrap()));
        }
        sent_ids.extend(message["tool_call_id"].as_str());
    }
    assert_eq!(
        sent_ids,
        [calculator_id, clock_id, calculator_id, clock_id]
            .into_iter()
            .cycle()
            .take(8)
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_agent_calls_tools_then_answers_after_an_overloaded_attempt() {
    let run = run(
        Provider::Anthropic,
        vec![
            streamed("anthropic_tool_use.sse"),
            // The answer's first attempt meets an overloaded API; the retry gets through.
            Reply::error(529, &fixture("anthropic_error_529.json")).header("retry-after", "1"),
            streamed("anthropic_text.sse"),
        ],
    )
    .await;
    assert_completed(
        &run.chunks,
        Usage {
            input_tokens: (472 + 1800) + (590 + 1200),
            output_tokens: 89 + 27,
            cache_read_input_tokens: 1800,
            cache_creation_input_tokens: 1200,
        },
    );
    assert_eq!(
        text_deltas(&run.chunks, 1),
        ["Let me work that out — ", "and look at the clock."]
    );
    assert_eq!(
        text_deltas(&run.chunks, 2),
        [
            "6 × 7 = 42",
            ", and it is 2026-11-30T04:00:00Z",
            " — déjà vu 🎉"
        ]
    );
    let (calculator_id, clock_id) = (
        "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        "toolu_01HqB9Lp2uWQm6zEwJ1dKf8c",
    );
    assert_eq!(
        run.messages,
        expected_log(
            "Let me work that out — and look at the clock.",
            calculator_id,
            clock_id
        )
    );

    assert_eq!(run.requests.len(), 3);
    // The retried request is the same request.
    assert_eq!(run.requests[1].body, run.requests[2].body);
    let second = run.requests[2].json();
    assert_eq!(second["system"], json!("You are terse."));
    assert_eq!(
        second["messages"],
        json!([
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me work that out — and look at the clock."},
                {"type": "tool_use", "id": calculator_id, "name": "calculator",
                    "input": {"operation": "multiply", "a": 6, "b": 7}},
                {"type": "tool_use", "id": clock_id, "name": "clock", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": calculator_id, "content": "42"},
                {"type": "tool_result", "tool_use_id": clock_id, "content": NOW},
            ]},
        ])
    );
    for request in &run.requests {
        assert_eq!(request.header("x-api-key"), Some(KEY));
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_fails_the_run_at_once_with_model_auth_failed() {
    let run = run(
        Provider::OpenAi,
        vec![Reply::error(401, &fixture("openai_error_401.json"))],
    )
    .await;
    let (status, output, error, _) = end(&run.chunks);
    assert_eq!(
        (status, output, error),
        (&EndStatus::Failed, None, Some(ErrorCode::ModelAuthFailed))
    );
    // Not retried: one request, and the log holds only what the session started with.
    assert_eq!(run.requests.len(), 1);
    assert_eq!(
        run.messages,
        [Message::system("You are terse."), Message::user(QUESTION)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_closes_the_model_stream() {
    // The model streams its first words, then goes quiet with the connection open.
    let text = fixture("openai_text.sse");
    let first_two_events = text
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w == b"\n\n")
        .nth(1)
        .map(|(at, _)| at + 2)
        .unwrap();
    let replay = Replay::start(vec![
        Reply::stream(split_awkwardly(&text[..first_two_events])).then(Then::Hang),
    ])
    .await;
    let harness = Harness::start(agent(model(Provider::OpenAi, &replay))).await;
    let started = harness.client.start("assistant", QUESTION).await.unwrap();
    let session = started.session_id;

    // Wait for the first delta: the call is under way, its stream open.
    let mut follow = std::pin::pin!(harness.client.follow(&session, 0));
    let first_delta = tokio::time::timeout(WAIT_LIMIT, async {
        use futures::StreamExt;
        while let Some(chunk) = follow.next().await {
            if let ChunkKind::TextDelta { delta, .. } = chunk.unwrap().kind {
                return delta;
            }
        }
        panic!("the stream ended before any delta")
    })
    .await
    .expect("the first delta arrives");
    assert_eq!(first_delta, "6 × 7 = 42");

    harness.client.stop(&session, false).await.unwrap();
    tokio::time::timeout(WAIT_LIMIT, replay.dropped())
        .await
        .expect("the interrupted run's model call closes its HTTP stream");
    let chunks = harness.chunks_until_end(&session, WAIT_LIMIT).await;
    let (status, _, _, _) = end(&chunks);
    assert_eq!(status, &EndStatus::Interrupted);
}
