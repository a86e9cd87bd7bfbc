//! What one client can hold: followers per session and per credential (429 `rate_limited` past
//! the cap, on every follower route), connections in all (503 `server_busy`; over gRPC the
//! `server_busy` status), and a connection that never finishes its headers (closed).

use baton_client::Client as _;
use baton_core::ErrorCode;
use baton_tests::{Harness, WAIT_LIMIT, agents, api_error, keyed_options, open_options};
use baton_worker::{ServerOptions, state::ConnectionLimits, stream::FollowerCaps};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KEY: &str = "limits-operator-key";

fn capped(options: ServerOptions, per_session: usize, per_credential: usize) -> ServerOptions {
    ServerOptions {
        follower_caps: FollowerCaps {
            per_session,
            per_credential,
        },
        ..options
    }
}

/// Opens `GET /sse` of a session and answers its response (the stream stays open while held).
async fn sse(harness: &Harness, bearer: Option<&str>, session_id: &str) -> reqwest::Response {
    let mut request = reqwest::Client::new().get(format!(
        "http://{}/sse?sessionId={session_id}",
        harness.address
    ));
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    request.send().await.unwrap()
}

async fn assert_refused_429(response: reqwest::Response, mentions: &str) {
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
    let body: baton_core::ApiError = response.json().await.unwrap();
    assert_eq!(body.code, ErrorCode::RateLimited);
    assert!(body.retryable);
    assert!(body.error.contains(mentions), "{body:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_past_the_session_cap_are_refused_on_every_follower_route() {
    let harness = Harness::start_with(agents::registry(), capped(open_options(), 2, 0)).await;
    let session = harness.suspended_session("asker_only").await;
    let first = sse(&harness, None, &session).await;
    assert_eq!(first.status(), 200);
    // gRPC Subscribe is a follower of the same session.
    let grpc = harness.grpc_client.subscribe(&session, 0).await.unwrap();
    assert_refused_429(sse(&harness, None, &session).await, "session").await;
    let refused = match harness.grpc_client.subscribe(&session, 0).await {
        Err(error) => api_error(error),
        Ok(_) => panic!("a third follower over gRPC is admitted"),
    };
    assert_eq!(refused.code, ErrorCode::RateLimited);
    let reattach = reqwest::get(format!("http://{}/chat/{session}/stream", harness.address))
        .await
        .unwrap();
    assert_refused_429(reattach, "session").await;
    // Another session has places of its own.
    let other = harness.suspended_session("asker_only").await;
    assert_eq!(sse(&harness, None, &other).await.status(), 200);
    // A closed follower frees its place.
    drop(grpc);
    let admitted = tokio::time::timeout(WAIT_LIMIT, async {
        loop {
            if harness.state.streams.followers.of_session(&session) < 2 {
                break sse(&harness, None, &session).await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the dropped gRPC stream's place is freed");
    assert_eq!(admitted.status(), 200);
    drop(first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_credential_holds_at_most_its_cap_of_streams_over_all_sessions() {
    let harness = Harness::start_with(agents::registry(), capped(keyed_options(KEY), 0, 2)).await;
    let operator =
        baton_client::HttpClient::with_bearer(format!("http://{}", harness.address), KEY).unwrap();
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let started = operator.start("asker_only", "go").await.unwrap();
        sessions.push(started);
    }
    let held = [
        sse(&harness, Some(KEY), &sessions[0].session_id).await,
        sse(&harness, Some(KEY), &sessions[1].session_id).await,
    ];
    for response in &held {
        assert_eq!(response.status(), 200);
    }
    assert_refused_429(
        sse(&harness, Some(KEY), &sessions[2].session_id).await,
        "credential",
    )
    .await;
    // A session's own token is another credential.
    let token = sessions[2]
        .token
        .clone()
        .expect("built-in auth issues tokens");
    let own = sse(&harness, Some(&token), &sessions[2].session_id).await;
    assert_eq!(own.status(), 200);
}

/// Asks `/healthz` until it answers `status` (a connection's slot is taken or freed as the
/// server's accept loop gets to it).
async fn healthz_answering(address: std::net::SocketAddr, status: u16) -> reqwest::Response {
    tokio::time::timeout(WAIT_LIMIT, async {
        loop {
            let response = reqwest::get(format!("http://{address}/healthz"))
                .await
                .unwrap();
            if response.status() == status {
                break response;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("/healthz never answered {status}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_are_answered_server_busy_and_slow_headers_are_closed() {
    let options = ServerOptions {
        connection_limits: ConnectionLimits {
            max_connections: 3,
            header_read_timeout: Duration::from_secs(1),
            ..ConnectionLimits::default()
        },
        ..open_options()
    };
    let harness = Harness::server_only_with(agents::registry(), options).await;
    let address = harness.address;
    // Three connections that send a request line and never finish their headers.
    let mut idle = Vec::new();
    for _ in 0..3 {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        idle.push(stream);
    }
    // Past the cap: a typed 503, whatever the request.
    let busy = healthz_answering(address, 503).await;
    assert_eq!(busy.headers()["retry-after"], "1");
    let body: baton_core::ApiError = busy.json().await.unwrap();
    assert_eq!(body.code, ErrorCode::ServerBusy);
    assert!(body.retryable);
    // Each slow connection is closed at its header deadline: the server reads EOF on none, it
    // closes them (the peer sees the end of the stream, maybe after a 408).
    for stream in &mut idle {
        let mut answer = Vec::new();
        let read = tokio::time::timeout(WAIT_LIMIT, stream.read_to_end(&mut answer))
            .await
            .expect("the server closes a connection past its header deadline");
        assert!(read.is_ok() || answer.is_empty(), "{read:?}");
    }
    // Their places are free again.
    healthz_answering(address, 200).await;
    harness.assert_nothing_written().await;
}

/// A gRPC call on a new connection: the page of `GET /sessions`, or the typed refusal.
async fn grpc_sessions(
    address: std::net::SocketAddr,
) -> (baton_client::GrpcClient, Result<(), baton_core::ApiError>) {
    let client = baton_client::GrpcClient::new(&address.to_string()).unwrap();
    let answer = client
        .sessions(&baton_core::search::SessionSearch::default())
        .await
        .map(|_| ())
        .map_err(api_error);
    (client, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_connections_past_the_cap_are_answered_server_busy() {
    let options = ServerOptions {
        connection_limits: ConnectionLimits {
            max_grpc_connections: 1,
            ..ConnectionLimits::default()
        },
        ..open_options()
    };
    let harness = Harness::server_only_with(agents::registry(), options).await;
    // One client holds the one connection (its channel stays connected while it lives).
    let (holder, answer) = grpc_sessions(harness.grpc_address).await;
    answer.unwrap();
    let (_, refused) = grpc_sessions(harness.grpc_address).await;
    let refused = refused.expect_err("a second connection is admitted past the cap");
    assert_eq!(refused.code, ErrorCode::ServerBusy);
    assert!(refused.retryable);
    assert!(
        matches!(
            refused.details.get("retryAfter"),
            Some(serde_json::Value::Number(_))
        ),
        "{refused:?}"
    );
    // The holder's connection closed, its place is free again.
    drop(holder);
    tokio::time::timeout(WAIT_LIMIT, async {
        while grpc_sessions(harness.grpc_address).await.1.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("a freed gRPC connection slot is taken again");
    harness.assert_nothing_written().await;
}
