//! The HTTP handlers without a socket (`router().oneshot`): every refusal has its status and typed
//! body, and writes nothing to Redis or Temporal.

use axum::{
    body::Body,
    http::{Request, StatusCode, header},
};
use baton_core::ErrorCode;
use baton_tests::{Harness, agents};

fn start(body: &str) -> Request<Body> {
    Request::post("/start")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap()
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_typed_and_write_nothing() {
    let harness = Harness::server_only(agents::registry()).await;
    let too_long = format!(
        r#"{{"agent":"two_steps","message":"{}"}}"#,
        "x".repeat((1 << 20) + 1)
    );
    let cases: Vec<(Request<Body>, StatusCode, ErrorCode, &str)> = vec![
        (
            start(r#"{"agent":"nope","message":"hi"}"#),
            StatusCode::NOT_FOUND,
            ErrorCode::UnknownAgentType,
            "unknown agent type",
        ),
        (
            start(r#"{"agent":"two_steps","message":" "}"#),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
            "empty",
        ),
        (
            start(r#"{"agent":"two_steps"}"#),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
            "not a valid request",
        ),
        (
            start(r#"{"agent":"two_steps","message":"hi","sessionId":"mine"}"#),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
            "sessionId",
        ),
        (
            start("{"),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
            "",
        ),
        (
            // Over the body guard (4× the test's 1 KiB result limit): refused unread.
            start(&too_long),
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::ValidationPayloadTooLarge,
            "limit",
        ),
        (
            start(&format!(
                r#"{{"agent":"two_steps","message":"hi","x":{}1{}}}"#,
                "[".repeat(65),
                "]".repeat(65)
            )),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
            "deeper than 64",
        ),
        (
            Request::post("/resume")
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::TRANSFER_ENCODING, "chunked")
                .body(Body::from(r#"{"sessionId":"s","mode":"continue"}"#))
                .unwrap(),
            StatusCode::LENGTH_REQUIRED,
            ErrorCode::ValidationError,
            "Content-Length",
        ),
        (
            Request::post("/start")
                .body(Body::from(r#"{"agent":"two_steps","message":"hi"}"#))
                .unwrap(),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
            "Content-Type",
        ),
        (
            get("/status?sessionId=nosuchsession"),
            StatusCode::NOT_FOUND,
            ErrorCode::SessionNotFound,
            "nosuchsession",
        ),
        (
            get("/status?sessionId=a__b"),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
            "sessionId",
        ),
        (
            get("/status"),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
            "sessionId",
        ),
        (
            get("/sse?sessionId=nosuchsession"),
            StatusCode::NOT_FOUND,
            ErrorCode::SessionNotFound,
            "",
        ),
        (
            get("/sse?sessionId=x&fromSequence=-1"),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
            "query string",
        ),
    ];
    for (request, status, code, mentions) in cases {
        let described = format!("{} {}", request.method(), request.uri());
        let (got_status, error) = harness.refusal(request).await;
        assert_eq!(
            (got_status, error.code),
            (status, code),
            "{described}: {}",
            error.error
        );
        assert_eq!(error.retryable, code.presentation().retryable);
        assert!(
            error.error.contains(mentions),
            "{described}: {:?} should mention {mentions:?}",
            error.error
        );
    }
    harness.assert_nothing_written().await;
}
