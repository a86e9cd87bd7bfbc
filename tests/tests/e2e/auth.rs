//! Fail-closed auth: operator keys, session tokens bound to their session, and refusals (401,
//! 403) that read and write nothing.

use axum::{
    body::Body,
    http::{Request, StatusCode, header},
};
use baton_client::Client as _;
use baton_client::HttpClient;
use baton_core::{ApiError, ErrorCode, store::Status};
use baton_tests::{Harness, WAIT_LIMIT, agents, api_error};
use baton_worker::{
    ServerOptions,
    auth::{Auth, BuiltinAuth},
    router,
};
use std::{sync::Arc, time::Duration};
use tower::ServiceExt;

const KEY: &str = "operator-key";

fn with_keys() -> ServerOptions {
    ServerOptions {
        auth: Auth::Builtin(Arc::new(BuiltinAuth::new(
            vec![KEY.into()],
            b"test secret",
            Duration::from_secs(600),
        ))),
        ..Default::default()
    }
}

fn start_request(bearer: Option<&str>) -> Request<Body> {
    let mut request = Request::post("/start").header(header::CONTENT_TYPE, "application/json");
    if let Some(bearer) = bearer {
        request = request.header(header::AUTHORIZATION, format!("Bearer {bearer}"));
    }
    request
        .body(Body::from(r#"{"agent":"chatter","message":"hi"}"#))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_valid_credentials_are_refused_and_write_nothing() {
    let harness = Harness::server_only_with(agents::registry(), with_keys()).await;
    for bearer in [None, Some("wrong-key"), Some("v1.s.99999999999.AAAA")] {
        let (status, error) = harness.refusal(start_request(bearer)).await;
        assert_eq!(
            (status, error.code),
            (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized)
        );
    }
    // Every route but /healthz authenticates before reading anything, even a chunked body.
    let sse = Request::get("/sse?sessionId=x")
        .body(Body::empty())
        .unwrap();
    assert_eq!(harness.refusal(sse).await.0, StatusCode::UNAUTHORIZED);
    let chunked = Request::post("/submit-tool-result")
        .header(header::TRANSFER_ENCODING, "chunked")
        .body(Body::from("{}"))
        .unwrap();
    assert_eq!(harness.refusal(chunked).await.0, StatusCode::UNAUTHORIZED);
    let health = router(harness.state.clone())
        .oneshot(Request::get("/healthz").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    harness.assert_nothing_written().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unconfigured_server_refuses_to_serve_and_answers_nothing() {
    let harness = Harness::server_only_with(agents::registry(), ServerOptions::default()).await;
    let (status, error) = harness.refusal(start_request(Some(KEY))).await;
    assert_eq!(
        (status, error.code),
        (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized)
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let refused = baton_worker::serve(listener, harness.state.clone(), async {}).await;
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("--allow-unauthenticated")
    );
    harness.assert_nothing_written().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_token_acts_on_its_own_session_only() {
    let harness = Harness::start_with(agents::registry(), with_keys()).await;
    let base = format!("http://{}", harness.address);
    let operator = HttpClient::with_bearer(&base, KEY).unwrap();
    let mine = operator.start("chatter", "hello").await.unwrap();
    let theirs = operator.start("chatter", "hey").await.unwrap();
    let token = mine
        .token
        .clone()
        .expect("built-in auth issues a session token");
    let holder = HttpClient::with_bearer(&base, &token).unwrap();

    // Its own session: follow it to the end and read its status.
    let mut chunks = std::pin::pin!(holder.follow(&mine.session_id, 0));
    let follow = async {
        use futures::StreamExt;
        while let Some(chunk) = chunks.next().await {
            if matches!(chunk.unwrap().kind, baton_core::ChunkKind::End { .. }) {
                break;
            }
        }
    };
    tokio::time::timeout(WAIT_LIMIT, follow).await.unwrap();
    let state = holder.status(&mine.session_id).await.unwrap();
    assert_eq!(state.status, Status::Completed);

    // Another session: 403, for reads and writes alike; and no new sessions.
    let refused = api_error(holder.status(&theirs.session_id).await.unwrap_err());
    assert_eq!(refused.code, ErrorCode::SessionMismatch);
    let refused = api_error(
        holder
            .send_message(&theirs.session_id, "take over", false)
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code, ErrorCode::SessionMismatch);
    let refused = api_error(holder.stop(&theirs.session_id, true).await.unwrap_err());
    assert_eq!(refused.code, ErrorCode::SessionMismatch);
    harness
        .run_result(&theirs.workflow_id)
        .await
        .expect("the other session's run was not stopped");
    let refused = api_error(holder.start("chatter", "more").await.unwrap_err());
    assert_eq!(refused.code, ErrorCode::Forbidden);

    // Its own next turn is allowed.
    holder
        .send_message(&mine.session_id, "again", false)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_may_name_sessions_only_where_the_server_allows_it() {
    let options = ServerOptions {
        allow_client_session_ids: true,
        ..with_keys()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let chosen = baton_tests::unique("chosen");
    let start = |bearer: &str| {
        reqwest::Client::new()
            .post(format!("http://{}/start", harness.address))
            .bearer_auth(bearer)
            .json(&serde_json::json!({"agent": "chatter", "message": "hi", "sessionId": chosen}))
            .send()
    };
    let started: baton_core::api::StartResponse = start(KEY).await.unwrap().json().await.unwrap();
    assert_eq!(started.session_id, chosen);
    let token = started.token.unwrap();
    let holder = HttpClient::with_bearer(format!("http://{}", harness.address), &token).unwrap();
    assert_eq!(holder.status(&chosen).await.unwrap().session_id, chosen);

    let again = start(KEY).await.unwrap();
    assert_eq!(again.status(), StatusCode::CONFLICT);
    let error: ApiError = again.json().await.unwrap();
    assert_eq!(error.code, ErrorCode::SessionAlreadyExists);
    // A session token cannot start sessions at all.
    let refused = start(&token).await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);

    // An id whose Redis state is gone (here: another key prefix) but whose workflow Temporal
    // still has is refused the same way, before anything is written.
    let elsewhere = Harness::server_only_with(
        agents::registry(),
        ServerOptions {
            allow_client_session_ids: true,
            ..with_keys()
        },
    )
    .await;
    let request = Request::post("/start")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {KEY}"))
        .body(Body::from(
            serde_json::json!({"agent": "chatter", "message": "hi", "sessionId": chosen})
                .to_string(),
        ))
        .unwrap();
    let (status, error) = elsewhere.refusal(request).await;
    assert_eq!(
        (status, error.code),
        (StatusCode::CONFLICT, ErrorCode::SessionAlreadyExists)
    );
    assert_eq!(elsewhere.keys().await, Vec::<String>::new());
}
