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

/// `POST path` with `bearer` and a JSON body: the answer.
async fn post_as(
    harness: &Harness,
    bearer: &str,
    path: &str,
    body: serde_json::Value,
) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://{}{path}", harness.address))
        .bearer_auth(bearer)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Sends `request` until it is refused (at most `most` times): how many were taken, and the
/// refusal.
async fn until_refused<F, Fut>(most: usize, mut request: F) -> (usize, reqwest::Response)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = reqwest::Response>,
{
    for taken in 0..most {
        let response = request().await;
        if response.status() == 429 {
            return (taken, response);
        }
    }
    panic!("{most} requests were taken: no bucket refused one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_subject_past_its_start_or_submit_bucket_is_refused_429_and_nothing_is_written() {
    // The root's own submit bucket off, so only the subject's refuses.
    let options = ServerOptions {
        submits_per_minute: None,
        ..keyed_options(KEY)
    };
    let harness = Harness::server_only_with(agents::registry(), options).await;
    let mint = |user: &'static str| {
        let harness = &harness;
        async move {
            let body = serde_json::json!({"userId": user, "agents": ["chatter"]});
            let minted: serde_json::Value = post_as(harness, KEY, "/tokens", body)
                .await
                .json()
                .await
                .unwrap();
            minted["token"].as_str().unwrap().to_owned()
        }
    };
    let (ada, bob) = (mint("ada").await, mint("bob").await);
    let start = serde_json::json!({"agent": "chatter", "message": "hi"});
    let (started, refused) =
        until_refused(100, || post_as(&harness, &ada, "/start", start.clone())).await;
    // A burst of 20, refilled at one a second while they are sent.
    assert!((20..=25).contains(&started), "{started} starts taken");
    let retry_after: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after >= 1);
    let body: baton_core::ApiError = refused.json().await.unwrap();
    assert_eq!(body.code, ErrorCode::RateLimited);
    assert!(body.retryable);
    assert_eq!(
        body.refusal(),
        Some(baton_core::Refusal::RetryAfter { retry_after })
    );
    let sessions = |keys: Vec<String>| keys.iter().filter(|k| k.ends_with(":state")).count();
    assert_eq!(
        sessions(harness.keys().await),
        started,
        "the refused start wrote its session"
    );
    // Another subject has a bucket of its own.
    let other = post_as(&harness, &bob, "/start", start.clone()).await;
    assert_eq!(other.status(), 200);

    // Submits (here to a session that does not exist, each refused after its token) are
    // spent from the subject's submit bucket, over HTTP and gRPC alike.
    let submit = serde_json::json!({"sessionId": "s-none", "toolCallId": "c", "result": 1});
    let (submitted, refused) = until_refused(400, || {
        post_as(&harness, &ada, "/submit-tool-result", submit.clone())
    })
    .await;
    assert!((60..=90).contains(&submitted), "{submitted} submits taken");
    let body: baton_core::ApiError = refused.json().await.unwrap();
    assert_eq!(body.code, ErrorCode::RateLimited);
    let grpc =
        baton_client::GrpcClient::with_bearer(&harness.grpc_address.to_string(), &ada).unwrap();
    // The same bucket over gRPC: refused at once, or after the token or two it refilled (one a
    // second) since the last HTTP refusal, where a bucket of its own would take its burst.
    let mut taken = 0;
    loop {
        let refused = grpc.submit_body(&submit).await.map_err(api_error);
        let code = refused.unwrap_err().code;
        if code == ErrorCode::RateLimited {
            break;
        }
        assert_eq!(code, ErrorCode::UnknownToolCall, "a submit past its token");
        taken += 1;
        assert!(taken <= 3, "gRPC submits are spent from another bucket");
    }
    assert_eq!(sessions(harness.keys().await), started + 1);
}

/// Opens a connection to `address` from the loopback address `from` and sends a request line
/// without finishing its headers: the connection stays open until the header deadline.
async fn idle_connection_from(
    from: std::net::IpAddr,
    address: std::net::SocketAddr,
) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::new(from, 0)).unwrap();
    let mut stream = socket.connect(address).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    stream
}

/// A whole `GET /healthz` from the loopback address `from`: the status and the body.
async fn healthz_from(from: std::net::IpAddr, address: std::net::SocketAddr) -> (u16, String) {
    let mut stream = idle_connection_from(from, address).await;
    stream
        .write_all(b"Connection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT_LIMIT, stream.read_to_end(&mut answer))
        .await
        .expect("the server answers")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_default();
    (status, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_peer_holds_at_most_its_cap_of_connections_and_others_are_still_served() {
    // The defaults: 64 connections of one address, 512 in all.
    let harness = Harness::server_only_with(agents::registry(), open_options()).await;
    let address = harness.address;
    let (peer, other): (std::net::IpAddr, std::net::IpAddr) =
        ([127, 0, 0, 1].into(), [127, 0, 0, 2].into());
    let mut held = Vec::new();
    for _ in 0..64 {
        held.push(idle_connection_from(peer, address).await);
    }
    // Past the peer's cap: the global cap's answer, typed.
    let (status, answer) = healthz_from(peer, address).await;
    assert_eq!(status, 503, "{answer}");
    assert!(answer.contains("server_busy"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: 1"),
        "{answer}"
    );
    // Another address is served, within the global cap.
    let (status, answer) = healthz_from(other, address).await;
    assert_eq!(status, 200, "{answer}");
    // The peer's places free as its connections close.
    drop(held);
    tokio::time::timeout(WAIT_LIMIT, async {
        while healthz_from(peer, address).await.0 != 200 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("a freed place of the peer is taken again");

    // gRPC: one peer holds at most 64 connections too.
    let mut clients = Vec::new();
    for _ in 0..64 {
        let (client, answer) = grpc_sessions(harness.grpc_address).await;
        answer.unwrap();
        clients.push(client);
    }
    let (_, refused) = grpc_sessions(harness.grpc_address).await;
    let refused = refused.expect_err("a peer's connection is admitted past its cap");
    assert_eq!(refused.code, ErrorCode::ServerBusy);
    drop(clients);
    harness.assert_nothing_written().await;
}
