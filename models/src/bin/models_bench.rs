//! `models-bench`: how fast the adapters turn a long streamed response into a turn, and how much
//! latency they add to each chunk on its way from the socket to the delta channel.
//!
//! ```text
//! cargo run --release -p baton-models --bin models-bench [-- EVENTS]
//! ```
//!
//! Throughput: a synthetic response in each provider's exact wire format (EVENTS text deltas,
//! default 50,000, then one tool call in 2,000 argument fragments) decoded in memory, read in
//! 16 KiB pieces, one event per piece, and cut awkwardly (mid-`data:`, mid-UTF-8, mid-event end).
//!
//! Latency: over loopback HTTP, a server sends one event per chunk and waits until the client
//! has it before sending the next; each chunk's time from the server's write to its arrival is
//! measured through the whole adapter (hyper, SSE decoding, JSON, the delta channel) and through
//! a bare `reqwest` byte stream. The difference is what the adapter adds.

use baton_core::model::{Model, ModelRequest};
use baton_models::{
    ApiKey, ModelConfig, Provider,
    replay::{read_request, split_awkwardly, write_chunk, write_head},
};
use futures::StreamExt;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::{net::TcpListener, sync::mpsc};

const TOOL_FRAGMENTS: usize = 2_000;
const LATENCY_EVENTS: usize = 2_000;
const MEASURE_FOR: Duration = Duration::from_secs(2);

fn main() {
    let events: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("EVENTS is a number"))
        .unwrap_or(50_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime starts");

    println!("Parse throughput ({events} text deltas + 1 tool call in {TOOL_FRAGMENTS} fragments)");
    println!(
        "{:<10} {:<30} {:>9} {:>8} {:>10} {:>10}",
        "provider", "reads", "body MB", "events", "MB/s", "ns/event"
    );
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let events = synthetic_events(provider, events);
        let body = events.concat();
        let sixteen_kib: Vec<&[u8]> = body.chunks(16 * 1024).collect();
        let per_event: Vec<&[u8]> = events.iter().map(Vec::as_slice).collect();
        let awkward_pieces = split_awkwardly(&body);
        let awkward: Vec<&[u8]> = awkward_pieces.iter().map(Vec::as_slice).collect();
        for (reads, pieces) in [
            ("16 KiB", &sixteen_kib),
            ("one event each", &per_event),
            ("awkward cuts", &awkward),
        ] {
            let per_pass = throughput(provider, pieces);
            let seconds = per_pass.as_secs_f64();
            println!(
                "{:<10} {:<30} {:>9.2} {:>8} {:>10.1} {:>10.0}",
                provider.to_string(),
                format!("{reads} ({} reads)", pieces.len()),
                body.len() as f64 / 1e6,
                events.len(),
                body.len() as f64 / 1e6 / seconds,
                seconds * 1e9 / events.len() as f64,
            );
        }
    }

    println!();
    println!("Latency per chunk over loopback HTTP ({LATENCY_EVENTS} chunks, one event each), µs");
    println!(
        "{:<10} {:<16} {:>8} {:>8} {:>8} {:>8}",
        "provider", "path", "p50", "p90", "p99", "max"
    );
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let events = synthetic_events(provider, LATENCY_EVENTS);
        let raw = runtime.block_on(latency(provider, &events, false));
        let adapter = runtime.block_on(latency(provider, &events, true));
        for (path, samples) in [("bare reqwest", &raw), ("adapter", &adapter)] {
            println!(
                "{:<10} {:<16} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
                provider.to_string(),
                path,
                percentile(samples, 0.50),
                percentile(samples, 0.90),
                percentile(samples, 0.99),
                percentile(samples, 1.0),
            );
        }
        println!(
            "{:<10} {:<16} {:>8.1} {:>8.1} {:>8.1}",
            provider.to_string(),
            "added",
            percentile(&adapter, 0.50) - percentile(&raw, 0.50),
            percentile(&adapter, 0.90) - percentile(&raw, 0.90),
            percentile(&adapter, 0.99) - percentile(&raw, 0.99),
        );
    }
}

/// The best time of one decoding pass over `pieces`, over repeated passes.
fn throughput(provider: Provider, pieces: &[&[u8]]) -> Duration {
    let started = Instant::now();
    let mut best = Duration::MAX;
    let mut passes = 0;
    while passes < 3 || started.elapsed() < MEASURE_FOR {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let pass = Instant::now();
        let turn = baton_models::decode_body(provider, pieces.iter().copied(), &sender)
            .expect("the synthetic body decodes");
        best = best.min(pass.elapsed());
        assert_eq!(turn.tool_calls.len(), 1);
        assert!(receiver.try_recv().is_ok());
        passes += 1;
    }
    best
}

/// Each event of a long answer in `provider`'s wire format, as the API frames them.
fn synthetic_events(provider: Provider, text_deltas: usize) -> Vec<Vec<u8>> {
    let words = [
        "Baton ",
        "runs ",
        "agents ",
        "durably; ",
        "état ",
        "naïve ",
        "🎉 ",
        "42, ",
    ];
    let fragments: Vec<String> = {
        let arguments = json!({"operation": "multiply", "a": 6, "b": 7,
            "note": "x".repeat(TOOL_FRAGMENTS * 4)})
        .to_string();
        let step = arguments.len().div_ceil(TOOL_FRAGMENTS);
        arguments
            .as_bytes()
            .chunks(step)
            .map(|c| String::from_utf8(c.to_vec()).expect("ASCII arguments"))
            .collect()
    };
    let mut events = Vec::new();
    match provider {
        Provider::OpenAi => {
            let chunk = |delta: serde_json::Value, finish: serde_json::Value, usage| {
                let body = json!({"id": "chatcmpl-AXq8RZ1s3nOe0Hb1uYp2Kd7fLmN4c",
                    "object": "chat.completion.chunk", "created": 1_732_950_000,
                    "model": "gpt-4o-mini-2024-07-18", "service_tier": "default",
                    "system_fingerprint": "fp_0ba0d124f1",
                    "choices": [{"index": 0, "delta": delta, "logprobs": null,
                        "finish_reason": finish}],
                    "usage": usage});
                format!("data: {body}\n\n").into_bytes()
            };
            events.push(chunk(
                json!({"role": "assistant", "content": ""}),
                json!(null),
                json!(null),
            ));
            for i in 0..text_deltas {
                events.push(chunk(
                    json!({"content": words[i % words.len()]}),
                    json!(null),
                    json!(null),
                ));
            }
            events.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "calculator", "arguments": ""}}]}),
                json!(null),
                json!(null),
            ));
            for fragment in &fragments {
                events.push(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}),
                    json!(null),
                    json!(null),
                ));
            }
            events.push(chunk(json!({}), json!("tool_calls"), json!(null)));
            events.push(b"data: [DONE]\n\n".to_vec());
        }
        Provider::Anthropic => {
            let event = |name: &str, body: serde_json::Value| {
                format!("event: {name}\ndata: {body}\n\n").into_bytes()
            };
            events.push(event(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_01",
                    "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 472, "output_tokens": 1}}}),
            ));
            events.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
            ));
            for i in 0..text_deltas {
                events.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": words[i % words.len()]}}),
                ));
            }
            events.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block":
                    {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {}}}),
            ));
            for fragment in &fragments {
                events.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 1,
                        "delta": {"type": "input_json_delta", "partial_json": fragment}}),
                ));
            }
            events.push(event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 9000}}),
            ));
            events.push(event("message_stop", json!({"type": "message_stop"})));
        }
    }
    events
}

/// Microseconds from each chunk's write to its arrival, chunks sent one at a time: through the
/// adapter (arrival = its delta on the channel) or through a bare byte stream.
async fn latency(provider: Provider, events: &[Vec<u8>], through_adapter: bool) -> Vec<f64> {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let address = listener.local_addr().expect("an address");
    let (arrived, mut next) = mpsc::unbounded_channel::<Instant>();
    // The text deltas, one delta each, are measured; the events before them (the opening)
    // and after them (the tool call, the end) are sent unmeasured.
    let is_text = |event: &Vec<u8>| {
        let text = String::from_utf8_lossy(event);
        text.contains("text_delta")
            || text.contains("\"content\":\"") && !text.contains("\"content\":\"\"")
    };
    let first = events.iter().position(is_text).expect("text events");
    let end = first + events[first..].iter().take_while(|e| is_text(e)).count();
    let opening = events[..first].to_vec();
    let text_events = events[first..end].to_vec();
    let closing = events[end..].to_vec();
    let count = text_events.len();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("the client connects");
        socket.set_nodelay(true).expect("nodelay");
        let mut buffer = Vec::new();
        read_request(&mut socket, &mut buffer)
            .await
            .expect("a request");
        let headers = [("content-type".to_owned(), "text/event-stream".to_owned())];
        write_head(&mut socket, 200, &headers).await.expect("head");
        for event in &opening {
            write_chunk(&mut socket, event).await.expect("write");
        }
        let mut samples = Vec::with_capacity(text_events.len());
        for event in &text_events {
            let sent = Instant::now();
            write_chunk(&mut socket, event).await.expect("write");
            let at = next.recv().await.expect("the client reports each arrival");
            samples.push(at.duration_since(sent).as_secs_f64() * 1e6);
        }
        for event in &closing {
            write_chunk(&mut socket, event).await.expect("write");
        }
        use tokio::io::AsyncWriteExt;
        let _ = socket.write_all(b"0\r\n\r\n").await;
        samples
    });

    if through_adapter {
        let mut config = ModelConfig::new(provider, "bench");
        config.base_url = Some(match provider {
            Provider::OpenAi => format!("http://{address}/v1"),
            Provider::Anthropic => format!("http://{address}"),
        });
        let model = baton_models::build(&config, Some(ApiKey::new("bench"))).expect("a model");
        let (sender, mut deltas) = mpsc::unbounded_channel();
        let messages = [baton_core::Message::user("go")];
        let call = tokio::spawn(async move {
            model
                .generate(
                    ModelRequest {
                        messages: &messages,
                        tools: &[],
                    },
                    sender,
                )
                .await
        });
        for _ in 0..count {
            if deltas.recv().await.is_none() {
                panic!("the call ended early: {:?}", call.await);
            }
            arrived.send(Instant::now()).expect("the server waits");
        }
        call.await.expect("no panic").expect("the stream decodes");
    } else {
        let response = reqwest::Client::new()
            .post(format!("http://{address}/"))
            .body("{}")
            .send()
            .await
            .expect("a response");
        let mut chunks = response.bytes_stream();
        for _ in 0..count {
            chunks.next().await.expect("a chunk").expect("bytes");
            arrived.send(Instant::now()).expect("the server waits");
        }
        while chunks.next().await.is_some() {}
    }
    let mut samples = server.await.expect("the server ends");
    samples.sort_by(f64::total_cmp);
    samples
}

fn percentile(sorted: &[f64], quantile: f64) -> f64 {
    let index = ((sorted.len() - 1) as f64 * quantile).round() as usize;
    sorted[index]
}
