//! The same scenarios through both clients of the `Client` trait, HTTP and gRPC, against one real
//! server: the same chunks, the same answers, the same typed refusals, and streams that reopen
//! from the last sequence without losing or repeating a chunk.

use baton_client::{Client, Error, GrpcClient, HttpClient};
use baton_core::{
    ApiError, ChunkKind, ErrorCode, Refusal, StreamChunk,
    api::{ResumeMode, ResumeRequest, StopResponse},
    chunk::EndStatus,
    message::ToolOutcome,
    refusal::Payload,
    store::{Continuation, Status},
    submit::{INVALID_SUBMIT_MESSAGE, SubmitAnswer, SubmitStatus},
};
use baton_tests::{Harness, SUBMIT_LIMIT_BYTES, WAIT_LIMIT, agents, api_error, chunks_through};
use baton_worker::{ServerOptions, ops::MAX_JSON_DEPTH};
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;

mod auth;

/// Both clients of a harness, named for assertion messages.
fn clients(harness: &Harness) -> [(&'static str, &dyn Client); 2] {
    [("http", &harness.client), ("grpc", &harness.grpc_client)]
}

/// The text of a run's `text_delta` chunks, joined.
fn text_of(chunks: &[StreamChunk]) -> String {
    chunks
        .iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// The chunks' type names, with the text deltas left out (their number depends on the words).
fn shape_of(chunks: &[StreamChunk]) -> Vec<&'static str> {
    chunks
        .iter()
        .map(|chunk| chunk.kind.name())
        .filter(|name| *name != "text_delta")
        .collect()
}

fn sequences_of(chunks: &[StreamChunk]) -> Vec<u64> {
    chunks.iter().map(|chunk| chunk.sequence).collect()
}

/// `asker_only` up to its suspension, and its resumed run: the chunk types, deltas left out.
const ASKER_ONLY_SUSPENDED: [&str; 5] = [
    "run_start",
    "step_start",
    "tool_start",
    "step_end",
    "suspended",
];
const ASKER_ONLY_RESUMED: [&str; 5] = ["run_start", "tool_end", "step_start", "step_end", "end"];

/// Asserts that what a reader `seen` through its reconnections is the whole stream, each chunk
/// exactly once and in order, and that the stream has the expected `shape`.
fn assert_exactly_once(seen: &[StreamChunk], whole: &[StreamChunk], shape: &[&str], context: &str) {
    assert_eq!(seen, whole, "{context}");
    assert_eq!(
        sequences_of(whole),
        (1..=whole.len() as u64).collect::<Vec<_>>(),
        "{context}"
    );
    assert_eq!(shape_of(whole), shape, "{context}");
}

/// Reads `count` chunks of one stream connection, then drops the connection.
async fn read_then_drop(
    client: &dyn Client,
    session_id: &str,
    after: u64,
    count: usize,
) -> Vec<StreamChunk> {
    let connection = client.subscribe(session_id, after).await.unwrap();
    let read = connection.take(count).map(|chunk| chunk.unwrap()).collect();
    tokio::time::timeout(WAIT_LIMIT, read)
        .await
        .expect("chunks in time")
}

/// Reads one stream connection until it ends by itself.
async fn read_to_close(client: &dyn Client, session_id: &str, after: u64) -> Vec<StreamChunk> {
    let connection = client.subscribe(session_id, after).await.unwrap();
    let read = connection.map(|chunk| chunk.unwrap()).collect();
    tokio::time::timeout(WAIT_LIMIT, read)
        .await
        .expect("the stream ends in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_started_through_either_client_streams_the_same_chunks_through_both() {
    let harness = Harness::start(agents::registry()).await;
    for (name, starter) in clients(&harness) {
        let message = format!("hello over {name}");
        let started = starter.start("chatter", &message).await.unwrap();
        let session_id = &started.session_id;
        let via_http = chunks_through(&harness.client, session_id, 0, WAIT_LIMIT, false).await;
        let via_grpc = chunks_through(&harness.grpc_client, session_id, 0, WAIT_LIMIT, false).await;
        assert_eq!(via_grpc, via_http, "started over {name}");
        assert_eq!(
            shape_of(&via_http),
            ["run_start", "step_start", "step_end", "end"],
            "started over {name}"
        );
        assert_eq!(text_of(&via_http), format!("first: {message}"));
        let last = via_http.last().unwrap();
        assert_eq!(
            sequences_of(&via_http),
            (1..=last.sequence).collect::<Vec<_>>()
        );
        assert_eq!(last.header.run_id, started.run_id);
        assert_eq!(last.header.stream_id, started.stream_id);

        let status_http = harness.client.status(session_id).await.unwrap();
        let status_grpc = harness.grpc_client.status(session_id).await.unwrap();
        assert_eq!(status_grpc, status_http, "started over {name}");
        assert_eq!(status_http.status, Status::Completed);
        assert_eq!(status_http.output, Some(format!("first: {message}")));
        assert_eq!(status_http.step_count, 1);
        assert_eq!(status_http.last_sequence, last.sequence);
        assert_eq!(status_http.workflow_id, Some(started.workflow_id));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_session_is_answered_resumed_and_ended_through_either_client() {
    let harness = Harness::start(agents::registry()).await;
    for (name, client) in clients(&harness) {
        let started = client.start("asker_only", "go").await.unwrap();
        let session_id = &started.session_id;
        let suspended = chunks_through(client, session_id, 0, WAIT_LIMIT, true).await;
        assert_eq!(
            shape_of(&suspended),
            [
                "run_start",
                "step_start",
                "tool_start",
                "step_end",
                "suspended"
            ],
            "over {name}"
        );
        let paused = client.status(session_id).await.unwrap();
        assert_eq!(paused.status, Status::SuspendedClientTool);
        assert_eq!(
            paused.suspension.map(|s| s.tool_call_ids),
            Some(vec!["call_1_1".to_owned()])
        );

        let reply = ToolOutcome::Result(json!({"answer": "Ada"}));
        let answer = client.submit(session_id, "call_1_1", &reply).await.unwrap();
        assert_eq!(
            answer,
            SubmitAnswer {
                status: SubmitStatus::Accepted,
                continuation: Continuation::CallerResumes,
            },
            "over {name}"
        );
        let again = client.submit(session_id, "call_1_1", &reply).await.unwrap();
        assert_eq!(again.status, SubmitStatus::AlreadyCompleted, "over {name}");

        let resumed = client.resume(session_id).await.unwrap();
        assert_eq!(resumed.session_id, *session_id);
        assert_eq!(resumed.status, Status::Active);
        assert!(resumed.workflow_id.is_some(), "over {name}");

        let after = suspended.last().unwrap().sequence;
        let rest = chunks_through(client, session_id, after, WAIT_LIMIT, false).await;
        assert_eq!(shape_of(&rest), ASKER_ONLY_RESUMED, "over {name}");
        assert_eq!(rest[0].sequence, after + 1);
        assert_eq!(rest[0].header.run_id, resumed.run_id);
        let ChunkKind::End { status, output, .. } = &rest.last().unwrap().kind else {
            unreachable!("the shape ends with end");
        };
        assert_eq!(*status, EndStatus::Completed);
        assert_eq!(output.as_deref(), Some(r#"Hello {"answer":"Ada"}"#));
        let ended = client.status(session_id).await.unwrap();
        assert_eq!(ended.status, Status::Completed);
        assert_eq!(ended.step_count, 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_interrupted_through_either_client_and_a_second_stop_is_refused_alike() {
    let harness = Harness::start(agents::registry()).await;
    let mut refusals = Vec::new();
    for (name, client) in clients(&harness) {
        let session_id = harness.suspended_session("asker_only").await;
        let run_id = harness.client.status(&session_id).await.unwrap().run_id;
        let stopped = client.stop(&session_id, false).await.unwrap();
        assert_eq!(
            stopped,
            StopResponse {
                session_id: session_id.clone(),
                run_id,
                status: Status::Interrupted,
            },
            "over {name}"
        );
        let refused = api_error(client.stop(&session_id, true).await.unwrap_err());
        assert_eq!(
            refused,
            ApiError::new(
                ErrorCode::RunNotActive,
                "the session is interrupted; no run to stop"
            ),
            "over {name}"
        );
        refusals.push(refused);
    }
    assert_eq!(refusals[0], refusals[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_map_to_the_same_typed_error_on_both_transports() {
    let harness = Harness::start(agents::registry()).await;
    // Not verbose: neither the name sent nor the server's agent types come back.
    let unknown_agent = ApiError::new(ErrorCode::UnknownAgentType, "unknown agent type");
    for (name, client) in clients(&harness) {
        let refused = api_error(client.start("nobody", "hi").await.unwrap_err());
        assert_eq!(refused, unknown_agent, "over {name}");
    }
    harness.assert_nothing_written().await;

    let no_session = ApiError::new(ErrorCode::SessionNotFound, "no session nosuchsession");
    let malformed = ApiError::new(ErrorCode::ValidationError, "malformed sessionId");
    let no_message = ApiError::new(
        ErrorCode::ValidationError,
        "mode with_message needs a message",
    );
    let not_a_submit = ApiError::new(ErrorCode::ValidationError, INVALID_SUBMIT_MESSAGE);
    let session_id = harness.suspended_session("asker_only").await;
    let oversized = json!({"sessionId": session_id, "toolCallId": "call_1_1",
        "result": "x".repeat(SUBMIT_LIMIT_BYTES)});
    let oversized_size = serde_json::to_string(&oversized["result"]).unwrap().len();
    let too_large = ApiError::new(
        ErrorCode::ValidationPayloadTooLarge,
        format!("the tool result is {oversized_size} bytes; the limit is {SUBMIT_LIMIT_BYTES}"),
    )
    .with(Refusal::PayloadTooLarge {
        cause: Payload::ToolResult,
        limit_bytes: SUBMIT_LIMIT_BYTES as u64,
        size_bytes: oversized_size as u64,
    });
    let body_cap = 4 * SUBMIT_LIMIT_BYTES;
    let huge = json!({"sessionId": session_id, "toolCallId": "call_1_1",
        "result": "x".repeat(body_cap)});
    let huge_size = serde_json::to_string(&huge).unwrap().len();
    let body_too_large = ApiError::new(
        ErrorCode::ValidationPayloadTooLarge,
        format!("the request body is {huge_size} bytes; the limit is {body_cap}"),
    )
    .with(Refusal::PayloadTooLarge {
        cause: Payload::RequestBody,
        limit_bytes: body_cap as u64,
        size_bytes: huge_size as u64,
    });
    let mut nested = json!("bottom");
    for _ in 0..MAX_JSON_DEPTH {
        nested = json!([nested]);
    }
    let too_deep = json!({"sessionId": session_id, "toolCallId": "call_1_1", "result": nested});
    let nests_too_deep = ApiError::new(
        ErrorCode::ValidationError,
        format!("the body nests JSON deeper than {MAX_JSON_DEPTH} levels"),
    )
    .with(Refusal::JsonTooDeep {
        limit_depth: MAX_JSON_DEPTH as u64,
    });
    let mut unknown_calls = Vec::new();
    for (name, client) in clients(&harness) {
        let refused = api_error(client.status("nosuchsession").await.unwrap_err());
        assert_eq!(refused, no_session, "status over {name}");
        let refused = api_error(client.status("no such session!").await.unwrap_err());
        assert_eq!(refused, malformed, "status over {name}");
        let refused = api_error(client.resume("nosuchsession").await.unwrap_err());
        assert_eq!(refused, no_session, "resume over {name}");
        let first = client.follow("nosuchsession", 0).next().await.unwrap();
        assert_eq!(
            api_error(first.unwrap_err()),
            no_session,
            "follow over {name}"
        );
        let request = ResumeRequest {
            session_id: session_id.clone(),
            mode: ResumeMode::WithMessage,
            message: None,
            abandon_pending: false,
            checkpoint_id: None,
        };
        let refused = api_error(client.resume_with(&request).await.unwrap_err());
        assert_eq!(refused, no_message, "resume over {name}");
        let refused = api_error(
            client
                .submit_body(&json!({"nonsense": 1}))
                .await
                .unwrap_err(),
        );
        assert_eq!(refused, not_a_submit, "submit over {name}");
        let refused = api_error(client.submit_body(&oversized).await.unwrap_err());
        assert_eq!(refused, too_large, "submit over {name}");
        let refused = api_error(client.submit_body(&huge).await.unwrap_err());
        assert_eq!(refused, body_too_large, "submit over {name}");
        let refused = api_error(client.submit_body(&too_deep).await.unwrap_err());
        assert_eq!(refused, nests_too_deep, "submit over {name}");
        let reply = ToolOutcome::Result(json!({"answer": "Ada"}));
        let refused = api_error(
            client
                .submit(&session_id, "call_9_9", &reply)
                .await
                .unwrap_err(),
        );
        assert_eq!(
            refused.code,
            ErrorCode::UnknownToolCall,
            "submit over {name}"
        );
        unknown_calls.push(refused);
    }
    assert_eq!(unknown_calls[0], unknown_calls[1]);
    // None of those refusals touched the suspended session.
    let state = harness.client.status(&session_id).await.unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool);
    assert_eq!(state.step_count, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_dropped_mid_session_and_reopened_from_its_last_sequence_repeats_and_loses_nothing()
 {
    let harness = Harness::start(agents::registry()).await;
    for (name, client) in clients(&harness) {
        let started = client.start("asker", "go").await.unwrap();
        let session_id = &started.session_id;
        // Two chunks, then the connection is dropped while the first run is still going.
        let mut seen = read_then_drop(client, session_id, 0, 2).await;
        assert_eq!(sequences_of(&seen), [1, 2], "over {name}");
        // Reopened from the last sequence, up to the suspension; dropped again there.
        let reopened = chunks_through(client, session_id, 2, WAIT_LIMIT, true).await;
        seen.extend(reopened);
        let suspended_at = seen.last().unwrap().sequence;
        assert_eq!(seen.last().unwrap().kind.name(), "suspended", "over {name}");

        let reply = ToolOutcome::Result(json!({"answer": "yes"}));
        client.submit(session_id, "call_1_2", &reply).await.unwrap();
        client.resume(session_id).await.unwrap();
        // A raw connection from the suspension: it ends by itself after the `end` chunk.
        seen.extend(read_to_close(client, session_id, suspended_at).await);

        let whole = read_to_close(client, session_id, 0).await;
        let shape = [
            "run_start",
            "step_start",
            "tool_start",
            "tool_start",
            "tool_end",
            "step_end",
            "suspended",
            "run_start",
            "tool_end",
            "step_start",
            "step_end",
            "end",
        ];
        assert_exactly_once(&seen, &whole, &shape, name);
        assert_eq!(text_of(&whole), r#"The user said {"answer":"yes"}"#);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transport_failure_is_not_a_typed_error() {
    let unreachable = baton_client::GrpcClient::new("grpc://127.0.0.1:1").unwrap();
    let failed = unreachable.status("s").await.unwrap_err();
    let Error::Grpc(status) = failed else {
        panic!("expected a gRPC transport failure, got {failed:?}");
    };
    assert_eq!(status.code(), tonic::Code::Unavailable);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_follow_outlives_a_restart_of_the_service_and_delivers_every_chunk_once() {
    let mut harness = Harness::start(agents::registry()).await;
    let started = harness.grpc_client.start("asker_only", "go").await.unwrap();
    let session_id = &started.session_id;
    let mut follow = harness.grpc_client.follow(session_id, 0);
    let mut seen = Vec::new();
    while seen.last().map(|chunk: &StreamChunk| chunk.kind.name()) != Some("suspended") {
        let next = tokio::time::timeout(WAIT_LIMIT, follow.next())
            .await
            .expect("in time");
        seen.push(next.unwrap().unwrap());
    }
    // The follower's connection ends with the old service; the session goes on meanwhile.
    harness.restart_grpc().await;
    let reply = ToolOutcome::Result(json!({"answer": "Ada"}));
    harness
        .client
        .submit(session_id, "call_1_1", &reply)
        .await
        .unwrap();
    harness.client.resume(session_id).await.unwrap();
    let rest: Vec<StreamChunk> = tokio::time::timeout(WAIT_LIMIT, follow.collect::<Vec<_>>())
        .await
        .expect("the follow ends in time")
        .into_iter()
        .map(|chunk| chunk.unwrap())
        .collect();
    seen.extend(rest);

    let whole = read_to_close(&harness.client, session_id, 0).await;
    let shape = [ASKER_ONLY_SUSPENDED, ASKER_ONLY_RESUMED].concat();
    assert_exactly_once(&seen, &whole, &shape, "grpc");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_and_usage_answer_the_same_through_both_clients() {
    let harness = Harness::start(agents::registry()).await;
    let session_id = harness.suspended_session("asker").await;
    let snapshot = harness.client.snapshot(&session_id).await.unwrap();
    assert_eq!(
        harness.grpc_client.snapshot(&session_id).await.unwrap(),
        snapshot
    );
    assert_eq!(snapshot.status, Status::SuspendedClientTool);
    assert_eq!((snapshot.step_count, snapshot.checkpoint_id), (1, Some(1)));
    assert_eq!(snapshot.messages, harness.messages(&session_id).await);

    let reply = ToolOutcome::Result(json!({"answer": "yes"}));
    harness
        .grpc_client
        .submit(&session_id, "call_1_2", &reply)
        .await
        .unwrap();
    harness.resume_to_end(&session_id).await;
    let usage = harness.client.usage(&session_id).await.unwrap();
    assert_eq!(harness.grpc_client.usage(&session_id).await.unwrap(), usage);
    assert_eq!(usage.session_id, session_id);
    assert_eq!(usage.rollup.models["scripted"].calls, 2);
    assert_eq!(
        usage.rollup.tool_calls.into_iter().collect::<Vec<_>>(),
        [("add".to_owned(), 1), ("ask_user".to_owned(), 1)]
    );
    let ended = harness.grpc_client.snapshot(&session_id).await.unwrap();
    assert_eq!(
        (ended.status, ended.stream_sequence),
        (Status::Completed, -1)
    );

    for (name, client) in clients(&harness) {
        let missing = api_error(client.usage("nosuchsession").await.unwrap_err());
        assert_eq!(
            missing,
            ApiError::new(ErrorCode::SessionNotFound, "no session nosuchsession"),
            "usage over {name}"
        );
        let missing = api_error(client.snapshot("nosuchsession").await.unwrap_err());
        assert_eq!(
            missing.code,
            ErrorCode::SessionNotFound,
            "snapshot over {name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trimmed_stream_answers_truncated_on_both_transports() {
    let options = ServerOptions {
        stream_max_chunks: 4,
        ..baton_tests::open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let started = harness.grpc_client.start("two_steps", "go").await.unwrap();
    harness.run_result(&started.workflow_id).await.unwrap();
    let session_id = &started.session_id;
    let last = harness
        .grpc_client
        .status(session_id)
        .await
        .unwrap()
        .last_sequence;
    let floor = last - 4;
    let truncated = ApiError::new(
        ErrorCode::Truncated,
        "the stream no longer holds the chunks after 0; read the snapshot and follow from its \
         streamSequence",
    )
    .with(Refusal::Truncated {
        oldest_retained_sequence: floor,
    });
    for (name, client) in clients(&harness) {
        let mut follow = client.follow(session_id, 0);
        let refused = api_error(follow.next().await.unwrap().unwrap_err());
        assert_eq!(refused, truncated, "over {name}");
        assert!(follow.next().await.is_none(), "over {name}");
        let kept = read_to_close(client, session_id, floor).await;
        assert_eq!(
            sequences_of(&kept),
            (floor + 1..=last).collect::<Vec<_>>(),
            "over {name}"
        );
        assert_eq!(kept.last().unwrap().kind.name(), "end", "over {name}");
    }
}
