//! Who owns what across services and users (issue 35's high and medium items): a remote child
//! belongs to the service that started it through the mount and to its caller's session, so a
//! producer's user with the consumer's `userId` never reads, lists or answers it (HTTP and
//! gRPC); an open producer still authenticates its mount; a service key acts only on the
//! mount's routes; a start of an existing session attaches only for the caller that made it; a
//! user token's `root` search sees only its own trees; and a relayed call answered on the
//! producer's side leaves the consumer's inbox.

use crate::mount::{MountClient, chosen_id};
use crate::remote_relay::{child_of, one_pending};
use baton_client::{Client as _, GrpcClient, HttpClient};
use baton_core::{
    AgentRegistry,
    api::StartRequest,
    message::ToolOutcome,
    search::{PersonCallKind, SessionSearch},
    store::SessionAddress,
    subagent::SubAgent,
};
use baton_tests::{
    Harness, TEST_SERVICE_KEY, WAIT_LIMIT, api_error,
    bearer_api::{BearerApi, code},
    keyed_options, open_options,
    remote_agents::{self, delegating},
    test_service_keys,
};
use baton_worker::{ServerOptions, auth::ServiceKeys};
use serde_json::json;
use std::time::Duration;

const OPERATOR: &str = "an operator key of at least thirty-two bytes";
const OTHER_SERVICE_KEY: &str = "another service's key of at least 32 bytes";

/// A producer serving `ask_then_approve` behind [`OPERATOR`] and the test service key, and the
/// consumer calling it as the remote child of `remote_delegator`.
async fn producer_and_consumer() -> (Harness, Harness) {
    let registry = AgentRegistry::new([remote_agents::ask_then_approve()]).unwrap();
    let producer = Harness::start_with(registry, keyed_options(OPERATOR)).await;
    let url = format!("http://{}/agents", producer.address);
    let remote = remote_agents::remote(&url, "ask_then_approve");
    let consumer = Harness::start(delegating(SubAgent::remote("research", "asks", remote))).await;
    (producer, consumer)
}

/// Starts the consumer's `remote_delegator` for `user` and waits until its root lists the
/// remote child's question; the root and the child's id on the producer.
async fn paused_for(consumer: &Harness, user: &str) -> (String, String) {
    let started = consumer
        .client
        .start_request(StartRequest {
            user_id: Some(user.to_owned()),
            ..StartRequest::new("remote_delegator", "go")
        })
        .await
        .unwrap();
    let root = started.session_id;
    one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;
    let child = child_of(&consumer.store, &root).await;
    (root, child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_user_with_the_callers_user_id_never_reads_lists_or_answers_its_remote_child() {
    let (producer, consumer) = producer_and_consumer().await;
    let (root, child) = paused_for(&consumer, "ada").await;
    let api = BearerApi::new(&producer, OPERATOR);
    let ada = api.mint("ada", &["ask_then_approve"]).await;
    let child_address = SessionAddress::root(&child);
    let owned = producer
        .store
        .session(&child_address)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(owned.meta.user_id.as_deref(), Some("ada"));
    let owner = owned
        .owner
        .as_ref()
        .expect("a mount start records its owner");
    assert_eq!(owner.service, baton_tests::TEST_SERVICE);
    assert_eq!(owner.caller_session_id.as_deref(), Some(root.as_str()));

    // Every read of the API refuses it, and no search lists it.
    for path in ["/status", "/snapshot", "/usage", "/sse"] {
        let answer = api.get(&ada, &format!("{path}?sessionId={child}")).await;
        assert_eq!(code(&answer), (403, "session_mismatch"), "{path}");
    }
    let answer = api.get(&ada, &format!("/chat/{child}/snapshot")).await;
    assert_eq!(code(&answer), (403, "session_mismatch"));
    for path in [
        "/sessions",
        "/pending",
        "/sessions?userId=ada",
        "/pending?userId=ada",
    ] {
        let (status, page) = api.get(&ada, path).await;
        assert_eq!(status, 200, "{path}");
        assert!(!page.to_string().contains(&child), "{path}: {page}");
    }
    for root_search in ["/sessions", "/pending"] {
        let (status, page) = api.get(&ada, &format!("{root_search}?root={child}")).await;
        assert_eq!(status, 200);
        assert!(!page.to_string().contains(&child), "{root_search}: {page}");
    }

    // Nor does it answer or steer it.
    let before = producer.store.session(&child_address).await.unwrap();
    let status = producer
        .store
        .session(&child_address)
        .await
        .unwrap()
        .unwrap();
    let call_id = status.suspension.as_ref().unwrap().tool_call_ids[0].clone();
    let answer = api
        .post(
            &ada,
            "/submit-tool-result",
            json!({"sessionId": child, "toolCallId": call_id, "result": {"answer": "Mallory"}}),
        )
        .await;
    assert_eq!(code(&answer), (403, "session_mismatch"));
    for (route, body) in [
        ("/resume", json!({"sessionId": child, "mode": "continue"})),
        ("/interrupt", json!({"sessionId": child})),
        ("/abort", json!({"sessionId": child})),
    ] {
        let answer = api.post(&ada, route, body).await;
        assert_eq!(code(&answer), (403, "session_mismatch"), "{route}");
    }
    // The mount does not take a user token at all.
    let mount = MountClient::at(&format!("{}/agents", api.base), Some(&ada));
    let (status, refused) = mount.get("ask_then_approve", "status", &child).await;
    assert_eq!(
        (status.as_u16(), refused["code"].as_str()),
        (403, Some("forbidden"))
    );
    assert_eq!(
        producer.store.session(&child_address).await.unwrap(),
        before
    );

    // gRPC says the same.
    let grpc = GrpcClient::with_bearer(&producer.grpc_address.to_string(), &ada).unwrap();
    let refused = api_error(grpc.status(&child).await.unwrap_err());
    assert_eq!(refused.code, baton_core::ErrorCode::SessionMismatch);
    let listed = grpc.pending(&SessionSearch::default()).await.unwrap();
    assert!(listed.calls.iter().all(|call| call.session_id != child));
    let rooted = SessionSearch {
        root: Some(child.clone()),
        ..SessionSearch::default()
    };
    assert!(grpc.sessions(&rooted).await.unwrap().sessions.is_empty());

    // The person answers through the consumer's root, as ever.
    let question = one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;
    consumer
        .client
        .submit(
            &root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"answer": "Ada"})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_tokens_root_search_sees_only_its_own_trees_on_both_transports() {
    let harness =
        Harness::start_with(baton_tests::agents::registry(), keyed_options(OPERATOR)).await;
    let api = BearerApi::new(&harness, OPERATOR);
    let ada = api.mint("ada", &["asker_only"]).await;
    let bob = api.mint("bob", &["asker_only"]).await;
    let (status, started) = api
        .post(
            &bob,
            "/start",
            json!({"agent": "asker_only", "message": "secret plans"}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let bobs = started["sessionId"].as_str().unwrap().to_owned();
    let operator =
        HttpClient::with_bearer(format!("http://{}", harness.address), OPERATOR).unwrap();
    baton_tests::chunks_through(&operator, &bobs, 0, WAIT_LIMIT, true).await;
    harness.index_settled().await;
    for path in ["/sessions", "/pending"] {
        let (status, own) = api.get(&bob, &format!("{path}?root={bobs}")).await;
        assert_eq!(status, 200);
        assert!(own.to_string().contains(&bobs), "bob sees his own: {own}");
        let (status, page) = api.get(&ada, &format!("{path}?root={bobs}")).await;
        assert_eq!(status, 200);
        assert!(!page.to_string().contains(&bobs), "{path}: {page}");
        assert!(!page.to_string().contains("secret plans"), "{path}: {page}");
    }
    let grpc = GrpcClient::with_bearer(&harness.grpc_address.to_string(), &ada).unwrap();
    let rooted = SessionSearch {
        root: Some(bobs.clone()),
        ..SessionSearch::default()
    };
    assert!(grpc.sessions(&rooted).await.unwrap().sessions.is_empty());
    assert!(grpc.pending(&rooted).await.unwrap().calls.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_key_acts_only_on_the_mounts_routes_and_an_open_server_still_authenticates_it() {
    let options = ServerOptions {
        service_keys: test_service_keys(),
        ..keyed_options(OPERATOR)
    };
    let keyed = Harness::start_with(baton_tests::agents::registry(), options).await;
    let api = BearerApi::new(&keyed, OPERATOR);
    for (path, body) in [
        ("/start", json!({"agent": "two_steps", "message": "go"})),
        ("/tokens", json!({"userId": "ada", "agents": ["two_steps"]})),
        ("/fork", json!({"sessionId": "s", "checkpoint": 0})),
    ] {
        let answer = api.post(TEST_SERVICE_KEY, path, body).await;
        assert_eq!(code(&answer), (403, "forbidden"), "{path}");
    }
    for path in ["/sessions", "/pending", "/metrics", "/status?sessionId=s"] {
        let answer = api.get(TEST_SERVICE_KEY, path).await;
        assert_eq!(code(&answer), (403, "forbidden"), "{path}");
    }
    let grpc = GrpcClient::with_bearer(&keyed.grpc_address.to_string(), TEST_SERVICE_KEY).unwrap();
    let refused = api_error(grpc.start("two_steps", "go").await.unwrap_err());
    assert_eq!(refused.code, baton_core::ErrorCode::Forbidden);
    keyed.assert_nothing_written().await;

    // An open server's API takes anyone, its mount only a service key.
    let open = Harness::start(baton_tests::agents::registry()).await;
    let session = chosen_id("open");
    let start = json!({"sessionId": session, "message": "go"});
    let anonymous = MountClient::anonymous(&open, "/agents");
    let (status, refused) = anonymous.post("two_steps", "start", start.clone()).await;
    assert_eq!(
        (status.as_u16(), refused["code"].as_str()),
        (401, Some("unauthorized"))
    );
    let (status, _) = anonymous.get("two_steps", "status", &session).await;
    assert_eq!(status, 401);
    open.assert_nothing_written().await;
    let service = MountClient::at(
        &format!("http://{}/agents", open.address),
        Some(TEST_SERVICE_KEY),
    );
    let (status, started) = service.post("two_steps", "start", start).await;
    assert_eq!(status, 200, "{started}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_attaches_only_for_the_service_and_caller_that_made_the_session() {
    let options = ServerOptions {
        service_keys: ServiceKeys::new(vec![
            ("consumer".into(), TEST_SERVICE_KEY.into()),
            ("intruder".into(), OTHER_SERVICE_KEY.into()),
        ]),
        ..open_options()
    };
    let producer = Harness::start_with(baton_tests::agents::registry(), options).await;
    let base = format!("http://{}/agents", producer.address);
    let consumer = MountClient::at(&base, Some(TEST_SERVICE_KEY));
    let intruder = MountClient::at(&base, Some(OTHER_SERVICE_KEY));
    let session = chosen_id("claim");
    // The intruder claims the id first (as a producer user or another service might).
    let claim = json!({"sessionId": session, "message": "mine", "callerSessionId": "caller-a"});
    let (status, _) = intruder.post("asker_only", "start", claim).await;
    assert_eq!(status, 200);
    let callback = json!({"url": "http://127.0.0.1:9/cb", "token": "t".repeat(32)});
    let attach = json!({"sessionId": session, "message": "go", "callerSessionId": "caller-a",
        "callback": callback});
    let (status, refused) = consumer.post("asker_only", "start", attach.clone()).await;
    assert_eq!(
        (status.as_u16(), refused["code"].as_str()),
        (403, Some("session_mismatch")),
        "{refused}"
    );
    // Nothing of the consumer's was registered on the intruder's session.
    assert!(
        producer
            .store
            .callback(&SessionAddress::root(&session))
            .await
            .unwrap()
            .is_none()
    );
    // The intruder's own retry attaches; the same service naming another caller does not.
    let again = json!({"sessionId": session, "message": "mine", "callerSessionId": "caller-a"});
    let (status, attached) = intruder.post("asker_only", "start", again).await;
    assert_eq!(status.as_u16(), 409, "{attached}");
    assert_eq!(attached["code"], "ALREADY_RUNNING");
    let other_caller = json!({"sessionId": session, "message": "mine", "callerSessionId": "b"});
    let (status, refused) = intruder.post("asker_only", "start", other_caller).await;
    assert_eq!(status, 403, "{refused}");
    // And a service never reads a session another one started.
    let (status, _) = consumer.get("asker_only", "status", &session).await;
    assert_eq!(status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_call_answered_on_the_producer_leaves_the_consumers_inbox() {
    let (producer, consumer) = producer_and_consumer().await;
    let (root, child) = paused_for(&consumer, "ada").await;
    // The producer's operator answers the child's question itself and resumes it.
    let operator =
        HttpClient::with_bearer(format!("http://{}", producer.address), OPERATOR).unwrap();
    let child_state = operator.status(&child).await.unwrap();
    let question = &child_state.pending[0];
    operator
        .submit(
            &child,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"answer": "Ada"})),
        )
        .await
        .unwrap();
    operator.resume(&child).await.unwrap();
    // The child asks for its approval next: the consumer's root lists that, and only that.
    let listed = async {
        loop {
            let search = SessionSearch {
                root: Some(root.clone()),
                ..SessionSearch::default()
            };
            let calls = consumer.client.pending(&search).await.unwrap().calls;
            if let [call] = &calls[..]
                && call.kind == PersonCallKind::Approval
            {
                return calls;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let calls = tokio::time::timeout(WAIT_LIMIT, listed)
        .await
        .expect("the root's inbox follows the child past the question answered on its producer");
    assert_eq!(calls.len(), 1);
    assert!(calls.iter().all(|call| call.tool_name != "ask_user"));
}
