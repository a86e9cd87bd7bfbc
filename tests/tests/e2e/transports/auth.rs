//! The gRPC service's credentials and limits beside the HTTP API's: the same keys and tokens
//! accepted and refused alike, one submit rate limit across both transports, no service without
//! an auth configuration, and client-chosen session ids refused unless the server allows them.

use super::*;
use baton_proto::{
    convert::api_error_from_status,
    v1::{self, baton_client::BatonClient},
};
use baton_worker::auth::{Auth, BuiltinAuth};
use std::sync::Arc;

const OPERATOR_KEY: &str = "operator-key";

fn with_keys() -> ServerOptions {
    ServerOptions {
        auth: Auth::Builtin(Arc::new(BuiltinAuth::new(
            vec![OPERATOR_KEY.into()],
            b"test secret",
            Duration::from_secs(600),
        ))),
        ..Default::default()
    }
}

/// An HTTP and a gRPC client of `harness`, both with `credential`, or none.
fn clients_with(
    harness: &Harness,
    credential: Option<&str>,
) -> [(&'static str, Box<dyn Client>); 2] {
    let http = format!("http://{}", harness.address);
    let grpc = harness.grpc_address.to_string();
    match credential {
        Some(credential) => [
            (
                "http",
                Box::new(HttpClient::with_bearer(http, credential).unwrap()),
            ),
            (
                "grpc",
                Box::new(GrpcClient::with_bearer(&grpc, credential).unwrap()),
            ),
        ],
        None => [
            ("http", Box::new(HttpClient::new(http))),
            ("grpc", Box::new(GrpcClient::new(&grpc).unwrap())),
        ],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grpc_service_authenticates_like_the_http_api() {
    let harness = Harness::start_with(agents::registry(), with_keys()).await;
    for (credential, message) in [
        (None, "missing bearer credentials"),
        (Some("wrong-key"), "invalid or expired token"),
    ] {
        let unauthorized = ApiError::new(ErrorCode::Unauthorized, message);
        for (name, client) in clients_with(&harness, credential) {
            let context = format!("{name} with {credential:?}");
            let refused = api_error(client.start("chatter", "hi").await.unwrap_err());
            assert_eq!(refused, unauthorized, "{context}");
            let refused = api_error(client.status("nosuchsession").await.unwrap_err());
            assert_eq!(refused, unauthorized, "{context}");
            let first = client.follow("nosuchsession", 0).next().await.unwrap();
            assert_eq!(api_error(first.unwrap_err()), unauthorized, "{context}");
        }
    }
    harness.assert_nothing_written().await;

    let mut sessions = Vec::new();
    for (name, operator) in clients_with(&harness, Some(OPERATOR_KEY)) {
        let started = operator.start("chatter", "hello").await.unwrap();
        let token = started
            .token
            .clone()
            .expect("built-in auth issues a session token");
        sessions.push((name, started.session_id, token));
    }
    let (_, first_session, first_token) = &sessions[0];
    let (_, second_session, second_token) = &sessions[1];
    for (name, holder) in clients_with(&harness, Some(first_token)) {
        let chunks = chunks_through(holder.as_ref(), first_session, 0, WAIT_LIMIT, false).await;
        assert_eq!(chunks.last().unwrap().kind.name(), "end", "{name}");
        let state = holder.status(first_session).await.unwrap();
        assert_eq!(state.status, Status::Completed, "{name}");
        let mismatch = api_error(holder.status(second_session).await.unwrap_err());
        assert_eq!(
            mismatch,
            ApiError::new(
                ErrorCode::SessionMismatch,
                "this token is bound to another session"
            ),
            "{name}"
        );
        let forbidden = api_error(holder.start("chatter", "again").await.unwrap_err());
        assert_eq!(
            forbidden,
            ApiError::new(
                ErrorCode::Forbidden,
                "a session token cannot start sessions; use an operator or user token"
            ),
            "{name}"
        );
    }
    // A token from the gRPC start works over HTTP too: one scheme, two transports.
    let [(_, http_holder), _] = clients_with(&harness, Some(second_token));
    let state = http_holder.status(second_session).await.unwrap();
    assert_eq!(state.session_id, *second_session);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submits_over_both_transports_count_against_one_rate_limit() {
    let options = ServerOptions {
        submits_per_minute: Some(2),
        ..baton_tests::open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let session_id = harness.suspended_session("asker_only").await;
    let reply = ToolOutcome::Result(json!({"answer": "Ada"}));
    let first = harness
        .client
        .submit(&session_id, "call_1_1", &reply)
        .await
        .unwrap();
    assert_eq!(first.status, SubmitStatus::Accepted);
    let second = harness
        .grpc_client
        .submit(&session_id, "call_1_1", &reply)
        .await
        .unwrap();
    assert_eq!(second.status, SubmitStatus::AlreadyCompleted);
    // The bucket (two a minute) is empty: the next token comes in 30 seconds, on either transport.
    let limited = ApiError::new(
        ErrorCode::RateLimited,
        "more than 2 submits a minute on this session",
    )
    .with(Refusal::RetryAfter { retry_after: 30 });
    for (name, client) in clients(&harness) {
        let refused = api_error(
            client
                .submit(&session_id, "call_1_1", &reply)
                .await
                .unwrap_err(),
        );
        assert_eq!(refused, limited, "over {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grpc_service_does_not_start_without_an_auth_configuration() {
    let harness = Harness::server_only(agents::registry()).await;
    let mut state = harness.state.clone();
    std::sync::Arc::make_mut(&mut state.options).auth = Auth::Unset;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let refused = baton_worker::serve_grpc(listener, state, Default::default()).await;
    assert!(
        matches!(refused, Err(baton_worker::grpc::Error::NoAuthConfigured)),
        "{refused:?}"
    );
}

/// A raw `Start` (the `Client` trait has no session id of the caller's choosing) naming `chosen`.
async fn raw_start(harness: &Harness, chosen: &str) -> Result<v1::StartResponse, tonic::Status> {
    let mut service = BatonClient::connect(format!("http://{}", harness.grpc_address))
        .await
        .unwrap();
    let request = v1::StartRequest {
        agent: "chatter".into(),
        message: "hi".into(),
        session_id: Some(chosen.into()),
        ..Default::default()
    };
    service
        .start(request)
        .await
        .map(|answer| answer.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_chosen_session_id_over_grpc_is_refused_unless_allowed() {
    let closed = Harness::server_only(agents::registry()).await;
    let refused = raw_start(&closed, "mychosenid").await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        api_error_from_status(&refused),
        Some(ApiError::new(
            ErrorCode::ValidationError,
            "sessionId is chosen by the server; this server does not take one from clients",
        ))
    );
    closed.assert_nothing_written().await;

    let options = ServerOptions {
        allow_client_session_ids: true,
        ..baton_tests::open_options()
    };
    let open = Harness::start_with(agents::registry(), options).await;
    // Unique per run: the session id names the run's workflow, and Temporal outlives the test.
    let chosen = uuid::Uuid::new_v4().simple().to_string();
    let started = raw_start(&open, &chosen).await.unwrap();
    assert_eq!(started.session_id, chosen);
    let state = open.grpc_client.status(&chosen).await.unwrap();
    assert_eq!(state.session_id, chosen);
}
