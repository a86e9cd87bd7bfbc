//! One error body everywhere: no route and a wrong method answer it as every refusal does, a 401
//! names its scheme, the bearer scheme is case-insensitive, every JSON route wants a JSON content
//! type, and what the parser said (field names, positions, echoed values, the server's agent
//! types) is in an answer only when the server runs with `--verbose-errors`.

use axum::{
    body::Body,
    http::{Request, StatusCode, header},
    response::Response,
};
use baton_core::{ApiError, ErrorCode};
use baton_tests::{Harness, agents, keyed_options};
use baton_worker::{ServerOptions, router, state::AppState};
use http_body_util::BodyExt;
use tower::ServiceExt;

const KEY: &str = "refusals-operator-key";

fn with_keys() -> ServerOptions {
    keyed_options(KEY)
}

/// Sends one request to the router without a socket; the response and its body as an error.
async fn send(state: &AppState, request: Request<Body>) -> (Response<()>, ApiError) {
    let response = router(state.clone()).oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    let content_type = parts.headers.get(header::CONTENT_TYPE).cloned();
    let error: ApiError = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "{}: the body is not the error body ({e}): {:?}",
            parts.status,
            String::from_utf8_lossy(&bytes)
        )
    });
    assert_eq!(
        content_type.as_ref().and_then(|v| v.to_str().ok()),
        Some("application/json"),
        "{error:?}"
    );
    assert_eq!(
        error.retryable,
        error.code.presentation().retryable,
        "{error:?}"
    );
    (Response::from_parts(parts, ()), error)
}

fn authorized(method: &str, uri: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {KEY}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_and_a_wrong_method_answer_the_one_error_body() {
    let harness = Harness::server_only_with(agents::registry(), with_keys()).await;
    for uri in ["/nope", "/chat/c1/stream/extra", "/start/", "/", "/SSE"] {
        let (response, error) = send(
            &harness.state,
            authorized("GET", uri).body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(
            (response.status(), error.code),
            (StatusCode::NOT_FOUND, ErrorCode::RouteNotFound),
            "GET {uri}"
        );
        // Without credentials too: an unknown path reveals nothing either way.
        let (response, error) = send(
            &harness.state,
            Request::get(uri).body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{error:?}");
    }
    for (method, uri, allowed) in [
        ("GET", "/start", "POST"),
        ("DELETE", "/chat", "GET,POST"),
        ("POST", "/status", "GET"),
        ("PUT", "/submit-tool-result", "POST"),
        ("POST", "/healthz", "GET"),
    ] {
        let (response, error) = send(
            &harness.state,
            authorized(method, uri).body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(
            (response.status(), error.code),
            (StatusCode::METHOD_NOT_ALLOWED, ErrorCode::MethodNotAllowed),
            "{method} {uri}"
        );
        let allow = response.headers()[header::ALLOW].to_str().unwrap();
        for method in allowed.split(',') {
            assert!(allow.contains(method), "{uri}: Allow {allow:?}");
        }
        assert!(error.details.is_empty(), "not verbose: {error:?}");
    }
    harness.assert_nothing_written().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_names_the_bearer_scheme_which_is_case_insensitive() {
    let harness = Harness::server_only_with(agents::registry(), with_keys()).await;
    for authorization in [None, Some("Basic abc"), Some("Bearer wrong")] {
        let mut request = Request::get("/status?sessionId=s1");
        if let Some(authorization) = authorization {
            request = request.header(header::AUTHORIZATION, authorization);
        }
        let (response, error) = send(&harness.state, request.body(Body::empty()).unwrap()).await;
        assert_eq!(
            (response.status(), error.code),
            (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized)
        );
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Bearer realm=\"baton\"",
            "{authorization:?}"
        );
    }
    for scheme in ["bearer", "BEARER", "bEaReR"] {
        let request = Request::get("/status?sessionId=s1")
            .header(header::AUTHORIZATION, format!("{scheme} {KEY}"))
            .body(Body::empty())
            .unwrap();
        let (response, error) = send(&harness.state, request).await;
        assert_eq!(
            (response.status(), error.code),
            (StatusCode::NOT_FOUND, ErrorCode::SessionNotFound),
            "{scheme}: authenticated, then the session is looked up"
        );
    }
    // The gRPC service reads the same header the same way.
    let grpc =
        baton_client::GrpcClient::with_bearer(&harness.grpc_address.to_string(), KEY).unwrap();
    let missing = baton_client::Client::status(&grpc, "s1").await.unwrap_err();
    assert_eq!(
        baton_tests::api_error(missing).code,
        ErrorCode::SessionNotFound
    );
    harness.assert_nothing_written().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_json_route_refuses_a_body_that_is_not_json_typed() {
    let harness = Harness::server_only(agents::registry()).await;
    let bodies = [
        ("/start", r#"{"agent":"two_steps","message":"hi"}"#.to_owned()),
        (
            "/chat",
            r#"{"id":"c1","trigger":"submit-message","agent":"two_steps","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}]}"#.to_owned(),
        ),
        (
            "/submit-tool-result",
            r#"{"sessionId":"s1","toolCallId":"c1","result":1}"#.to_owned(),
        ),
        ("/resume", r#"{"sessionId":"s1","mode":"continue"}"#.to_owned()),
    ];
    for (uri, body) in &bodies {
        for content_type in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            None,
        ] {
            let mut request = Request::post(*uri);
            if let Some(content_type) = content_type {
                request = request.header(header::CONTENT_TYPE, content_type);
            }
            let (response, error) = send(
                &harness.state,
                request.body(Body::from(body.clone())).unwrap(),
            )
            .await;
            assert_eq!(
                (response.status(), error.code),
                (StatusCode::BAD_REQUEST, ErrorCode::ValidationError),
                "{uri} as {content_type:?}"
            );
            assert!(error.error.contains("Content-Type"), "{uri}: {error:?}");
        }
    }
    // The media type is case-insensitive and may carry parameters.
    let request = Request::post("/resume")
        .header(header::CONTENT_TYPE, "Application/JSON; charset=utf-8")
        .body(Body::from(r#"{"sessionId":"s1","mode":"continue"}"#))
        .unwrap();
    let (response, error) = send(&harness.state, request).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND, "{error:?}");
    harness.assert_nothing_written().await;
}

/// The refusals whose message a parser or a lookup could fill: (request, status, code).
fn detailed_refusals() -> Vec<(Request<Body>, StatusCode, ErrorCode)> {
    let json = |uri: &str, body: String| {
        Request::post(uri)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    // As long as the test server's body cap (4 KiB) lets through.
    let long_name = "a".repeat(3_000);
    vec![
        (
            json(
                "/start",
                format!(r#"{{"agent":"{long_name}","message":"hi"}}"#),
            ),
            StatusCode::NOT_FOUND,
            ErrorCode::UnknownAgentType,
        ),
        (
            json("/start", r#"{"agent":"two_steps"}"#.to_owned()),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
        ),
        (
            json(
                "/start",
                r#"{"agent":"two_steps","message":"hi","secretField":1}"#.to_owned(),
            ),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
        ),
        (
            json("/chat", format!(r#"{{"id":5,"x":"{long_name}"}}"#)),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
        ),
        (
            json("/resume", "{\n\n  \"sessionId\": ".to_owned()),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
        ),
        (
            Request::get("/sse?sessionId=x&fromSequence=-1")
                .body(Body::empty())
                .unwrap(),
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationError,
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parser_details_and_agent_types_are_told_only_in_verbose_answers() {
    let harness = Harness::server_only(agents::registry()).await;
    for (request, status, code) in detailed_refusals() {
        let described = format!("{} {}", request.method(), request.uri());
        let (response, error) = send(&harness.state, request).await;
        assert_eq!(
            (response.status(), error.code),
            (status, code),
            "{described}"
        );
        assert!(error.details.is_empty(), "{described}: {error:?}");
        let body = serde_json::to_string(&error).unwrap();
        for leak in [
            "aaaa",
            "two_steps",
            "chatter",
            "message",
            "secretField",
            "line",
            "column",
            "invalid type",
            "fromSequence",
        ] {
            assert!(!body.contains(leak), "{described} tells {leak:?}: {body}");
        }
    }
    let mut verbose = harness.state.clone();
    std::sync::Arc::make_mut(&mut verbose.options).verbose_errors = true;
    for (request, status, code) in detailed_refusals() {
        let described = format!("{} {}", request.method(), request.uri());
        let (response, error) = send(&verbose, request).await;
        assert_eq!(
            (response.status(), error.code),
            (status, code),
            "{described}"
        );
        let details = error.details["details"].as_str().unwrap_or_default();
        assert!(!details.is_empty(), "{described}: {error:?}");
        assert!(
            details.len() < 1024,
            "{described}: bounded even when verbose"
        );
    }
    let (_, unknown) = send(&verbose, detailed_refusals().remove(0).0).await;
    assert!(
        unknown.details["details"]
            .as_str()
            .unwrap()
            .contains("two_steps"),
        "verbose answers list the agent types: {unknown:?}"
    );
    harness.assert_nothing_written().await;
}
