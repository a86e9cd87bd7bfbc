//! What a request carries reaches the log bounded and escaped: a refused request whose ids are
//! megabytes of control sequences writes short lines, each one line, on every route that logs.

use axum::{
    body::Body,
    http::{Request, header},
};
use baton_core::escape::{MAX_LOGGED_FIELD_BYTES, is_control};
use baton_tests::{Harness, agents};
use std::{
    io::Write,
    sync::{Arc, Mutex},
};
use tower::ServiceExt;

/// The formatted log, shared with the subscriber's writer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn json(uri: &str, body: String) -> Request<Body> {
    Request::post(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap()
}

/// One thread, so the handlers run where the test's subscriber is the default.
#[tokio::test(flavor = "current_thread")]
async fn request_fields_are_logged_bounded_and_on_one_line() {
    let harness = Harness::server_only(agents::registry()).await;
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    // An id of a megabyte: window-title, clear-screen and carriage-return sequences, then more.
    let id = format!(
        "\u{1b}]0;owned\u{7}\u{1b}[2J\r\n✓ completed\u{9b}{}",
        "x".repeat(1 << 20)
    );
    let escaped = serde_json::to_string(&id).unwrap();
    let requests = [
        // The chat route logs each refusal with the chat's id.
        json(
            "/chat",
            format!(
                r#"{{"id":{escaped},"trigger":"submit-message","agent":"two_steps","messages":[{{"id":"m","role":"user","parts":[{{"type":"text","text":"hi"}}]}}]}}"#
            ),
        ),
        json(
            "/chat",
            format!(r#"{{"id":"c1","trigger":"submit-message","messages":{escaped}}}"#),
        ),
    ];
    let mut verbose = harness.state.clone();
    std::sync::Arc::make_mut(&mut verbose.options).verbose_errors = true;
    std::sync::Arc::make_mut(&mut verbose.options)
        .submit_limits
        .max_result_bytes = 4 << 20;
    for request in requests {
        let response = baton_worker::router(verbose.clone())
            .oneshot(request)
            .await
            .unwrap();
        assert!(response.status().is_client_error(), "{}", response.status());
    }
    // The start route's lookups, and a submit, over a large body too.
    for request in [
        json("/start", format!(r#"{{"agent":{escaped},"message":"hi"}}"#)),
        json(
            "/submit-tool-result",
            format!(r#"{{"sessionId":"s1","toolCallId":{escaped},"result":1}}"#),
        ),
    ] {
        let response = baton_worker::router(verbose.clone())
            .oneshot(request)
            .await
            .unwrap();
        assert!(response.status().is_client_error(), "{}", response.status());
    }

    let log = captured.0.lock().unwrap().clone();
    let log = String::from_utf8(log).unwrap();
    assert!(
        log.contains("chat request refused"),
        "the chat route logged its refusals:\n{log}"
    );
    for line in log.lines() {
        assert!(
            line.len() < 8 * MAX_LOGGED_FIELD_BYTES,
            "a line of {} bytes: {}…",
            line.len(),
            &line[..200.min(line.len())]
        );
        assert!(!line.chars().any(is_control), "a raw control: {line:?}");
    }
    harness.assert_nothing_written().await;
}
