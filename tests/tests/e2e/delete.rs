//! Deleting a session tree (`POST /delete`, gRPC `Delete`): the whole tree goes from its root,
//! a tree waiting on a person is interrupted first, a running one is refused until it is
//! stopped, a session below a root is refused, and nothing of a deleted tree reads, lists or
//! answers again. Through both clients, and under user tokens, only the owner's.

use crate::tree_stop::suspended_top;
use baton_client::{Client, HttpClient};
use baton_core::{
    ErrorCode,
    message::ToolOutcome,
    search::SessionSearch,
    store::{SessionAddress, Status},
};
use baton_tests::{
    Harness, agents, api_error,
    bearer_api::{BearerApi, code},
    keyed_options,
};
use serde_json::json;

const OPERATOR: &str = "an operator key of at least thirty-two bytes";

/// The roots an operator's search lists.
async fn listed_roots(client: &HttpClient) -> Vec<String> {
    let page = client.sessions(&SessionSearch::default()).await.unwrap();
    page.sessions.into_iter().map(|s| s.session_id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_waiting_on_a_person_is_deleted_whole_through_both_clients() {
    let harness = Harness::start(agents::registry()).await;
    let clients: [(&str, &dyn Client); 2] =
        [("http", &harness.client), ("grpc", &harness.grpc_client)];
    for (name, client) in clients {
        let (started, middle, grandchild) = suspended_top(&harness).await;
        let root = started.session_id.clone();
        assert!(
            listed_roots(&harness.client).await.contains(&root),
            "{name}"
        );

        // A session below the root goes with its tree only.
        let refused = api_error(client.delete(&middle.session_id).await.unwrap_err());
        assert_eq!(refused.code, ErrorCode::ValidationError, "{name}");
        assert!(refused.error.contains(&root), "{name}: {}", refused.error);
        let still = harness.client.status(&middle.session_id).await.unwrap();
        assert_eq!(still.status, Status::SuspendedClientTool, "{name}");

        let deleted = client.delete(&root).await.unwrap();
        assert_eq!(deleted.session_id, root, "{name}");
        assert_eq!(deleted.deleted_sessions, 3, "{name}");
        for session_id in [&root, &middle.session_id, &grandchild.session_id] {
            let gone = api_error(harness.client.status(session_id).await.unwrap_err());
            assert_eq!(
                gone.code,
                ErrorCode::SessionNotFound,
                "{name}: {session_id}"
            );
            let address = SessionAddress {
                root_session_id: root.clone(),
                session_id: session_id.clone(),
            };
            assert!(harness.store.session(&address).await.unwrap().is_none());
        }
        assert!(
            !listed_roots(&harness.client).await.contains(&root),
            "{name}"
        );
        // The question it waited on is answered nowhere.
        let late = harness
            .client
            .submit(
                &root,
                "ca_1_1",
                &ToolOutcome::Result(json!({"answer": "late"})),
            )
            .await
            .unwrap_err();
        assert_eq!(api_error(late).code, ErrorCode::UnknownToolCall, "{name}");
        let again = api_error(client.delete(&root).await.unwrap_err());
        assert_eq!(again.code, ErrorCode::SessionNotFound, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_session_is_refused_and_kept_until_it_is_stopped() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("busy_child", "tick").await.unwrap();
    let id = &started.session_id;
    let refused = api_error(harness.client.delete(id).await.unwrap_err());
    assert_eq!(refused.code, ErrorCode::StateAlreadyRunning);
    assert!(refused.error.contains("interrupt"), "{}", refused.error);
    assert_eq!(
        harness.client.status(id).await.unwrap().status,
        Status::Active
    );
    harness.client.stop(id, false).await.unwrap();
    assert_eq!(harness.client.delete(id).await.unwrap().deleted_sessions, 1);
    let gone = api_error(harness.client.status(id).await.unwrap_err());
    assert_eq!(gone.code, ErrorCode::SessionNotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_deletes_its_own_chats_only_and_their_session_tokens_die_with_them() {
    let harness = Harness::start_with(agents::registry(), keyed_options(OPERATOR)).await;
    let api = BearerApi::new(&harness, OPERATOR);
    let ada = api.mint("ada", &["asker"]).await;
    let bob = api.mint("bob", &["asker"]).await;
    let started = api
        .post(
            OPERATOR,
            "/start",
            json!({"agent": "asker", "message": "hi", "userId": "ada"}),
        )
        .await;
    assert_eq!(started.0, 200, "{started:?}");
    let id = started.1["sessionId"].as_str().unwrap().to_owned();
    let session_token = started.1["token"]
        .as_str()
        .expect("built-in auth answers the session's token")
        .to_owned();
    let operator =
        HttpClient::with_bearer(format!("http://{}", harness.address), OPERATOR).unwrap();
    baton_tests::chunks_through(&operator, &id, 0, baton_tests::WAIT_LIMIT, true).await;

    let by_bob = api.post(&bob, "/delete", json!({"sessionId": id})).await;
    assert_eq!(code(&by_bob), (403, "session_mismatch"), "{by_bob:?}");
    let (status, _) = api.get(&ada, &format!("/status?sessionId={id}")).await;
    assert_eq!(status, 200);

    let by_ada = api.post(&ada, "/delete", json!({"sessionId": id})).await;
    assert_eq!(by_ada.0, 200, "{by_ada:?}");
    assert_eq!(by_ada.1["deletedSessions"], 1);
    let after = api.get(&ada, &format!("/status?sessionId={id}")).await;
    assert_eq!(code(&after), (404, "session_not_found"), "{after:?}");
    let with_token = api
        .get(&session_token, &format!("/status?sessionId={id}"))
        .await;
    assert_eq!(with_token.0, 401, "{with_token:?}");
}
