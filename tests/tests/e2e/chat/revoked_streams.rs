//! A token revoked while its streams are open ends them within seconds, on every transport: the
//! chat's answer (an `error` chunk, then `[DONE]`), `GET /sse` (a last `error` event,
//! `unauthorized`) and gRPC `Subscribe` (an `UNAUTHENTICATED` status), each waited on with a
//! generous time-out rather than asserted after a sleep.

use baton_client::{Client as _, Error, GrpcClient};
use baton_core::{AgentRegistry, ErrorCode};
use baton_tests::{Harness, agents, keyed_options, remote_agents};
use futures::StreamExt;
use serde_json::{Value, json};
use std::{sync::Arc, time::Duration};

const KEY: &str = "operator-key";

/// Well beyond the revocation's recheck (2 s): a stream still open by then was not ended.
const ENDS_WITHIN: Duration = Duration::from_secs(15);

/// A response body, read a chunk of bytes at a time.
type Body = futures::stream::BoxStream<'static, reqwest::Result<axum::body::Bytes>>;

/// Reads `response`'s body until its first chunk of bytes; the rest is read by [`rest_of`].
async fn opened(response: reqwest::Response) -> (String, Body) {
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream().boxed();
    let first = tokio::time::timeout(ENDS_WITHIN, body.next())
        .await
        .expect("the stream sends its first bytes")
        .expect("the stream is open")
        .unwrap();
    (String::from_utf8_lossy(&first).into_owned(), body)
}

/// The rest of a body, up to its end; `None` when it has not ended within [`ENDS_WITHIN`].
async fn rest_of(mut text: String, mut body: Body) -> Option<String> {
    let read = async {
        while let Some(Ok(bytes)) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
        text
    };
    tokio::time::timeout(ENDS_WITHIN, read).await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_tokens_open_streams_end_on_every_transport() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let registry =
        AgentRegistry::new([agents::asker_only(), remote_agents::gated(gate.clone())]).unwrap();
    let harness = Harness::start_with(registry, keyed_options(KEY)).await;
    // Opened whatever happens (a failed assertion too), so the harness's worker can stop.
    let _open = OpenOnDrop(gate.clone());
    let base = format!("http://{}", harness.address);
    let http = reqwest::Client::new();
    let post = |path: &str, bearer: &str, body: Value| {
        http.post(format!("{base}{path}"))
            .bearer_auth(bearer)
            .json(&body)
            .send()
    };
    let user = uuid::Uuid::new_v4().simple().to_string();
    let minted: Value = post(
        "/tokens",
        KEY,
        json!({"userId": &user, "agents": ["asker_only", "gated"], "ttlSecs": 600}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let token = minted["token"].as_str().unwrap().to_owned();
    // A session of the user's that waits for its person: its follows stay open.
    let started: Value = post(
        "/start",
        KEY,
        json!({"agent": "asker_only", "message": "hi", "userId": &user}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let session = started["sessionId"].as_str().unwrap().to_owned();

    // The user's three streams, each open and sending.
    let sse = http
        .get(format!("{base}/sse?sessionId={session}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let (sse_text, sse_body) = opened(sse).await;
    let chat = post(
        "/chat",
        &token,
        json!({"id": uuid::Uuid::new_v4().simple().to_string(), "trigger": "submit-message",
            "agent": "gated",
            "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "go"}]}]}),
    )
    .await
    .unwrap();
    let (chat_text, chat_body) = opened(chat).await;
    let grpc = GrpcClient::with_bearer(&harness.grpc_address.to_string(), &token).unwrap();
    let mut subscribed = grpc.subscribe(&session, 0).await.unwrap();
    let first = tokio::time::timeout(ENDS_WITHIN, subscribed.next())
        .await
        .unwrap();
    assert!(matches!(first, Some(Ok(_))), "{first:?}");

    let revoked = post("/tokens/revoke", KEY, json!({"token": &token}))
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);

    // All three are waited on at once: each must end, typed, whichever ends first.
    let grpc_end = async {
        let mut last = None;
        while let Some(item) = subscribed.next().await {
            last = Some(item);
        }
        last
    };
    let (sse_text, chat_text, grpc_last) = tokio::join!(
        rest_of(sse_text, sse_body),
        rest_of(chat_text, chat_body),
        tokio::time::timeout(ENDS_WITHIN, grpc_end),
    );
    let still_open: Vec<&str> = [
        ("SSE", sse_text.is_none()),
        ("chat", chat_text.is_none()),
        ("gRPC", grpc_last.is_err()),
    ]
    .into_iter()
    .filter_map(|(transport, open)| open.then_some(transport))
    .collect();
    assert!(
        still_open.is_empty(),
        "still open after the revocation: {still_open:?}"
    );
    let (sse_text, chat_text) = (sse_text.unwrap(), chat_text.unwrap());
    assert!(sse_text.contains("event: error"), "{sse_text}");
    assert!(sse_text.contains("unauthorized"), "{sse_text}");
    assert!(chat_text.contains(r#""type":"error""#), "{chat_text}");
    assert!(
        chat_text.trim_end().ends_with("data: [DONE]"),
        "{chat_text}"
    );
    match grpc_last.unwrap() {
        Some(Err(Error::Api(refused))) => assert_eq!(refused.code, ErrorCode::Unauthorized),
        other => panic!("the gRPC stream did not end unauthorized: {other:?}"),
    }
}

/// Opens the gate when dropped.
struct OpenOnDrop(Arc<tokio::sync::Semaphore>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.add_permits(1);
    }
}
