//! A session's `userId`, `tags` and `metadata`: stored at its start (HTTP, gRPC and the chat's
//! first message), inherited by its children, returned by status and snapshot on both
//! transports; over the caps, refused with nothing written.

use super::start_for;
use baton_client::Client as _;
use baton_core::{ErrorCode, SessionMeta, store::SessionAddress};
use baton_tests::{Harness, agents, api_error};
use serde_json::json;

fn expected(user: &str, tags: &[&str], plan: &str) -> SessionMeta {
    SessionMeta {
        user_id: Some(user.to_owned()),
        tags: tags.iter().map(|tag| (*tag).to_owned()).collect(),
        metadata: json!({"plan": plan}).as_object().cloned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_s_metadata_is_returned_by_status_and_snapshot_and_inherited_by_children() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness
        .client
        .start_request(start_for("fan_out", "u-1", &["vip", "eu"], "pro"))
        .await
        .unwrap();
    harness.chunks_until_suspended(&started.session_id).await;
    let meta = expected("u-1", &["vip", "eu"], "pro");

    let http = harness.client.status(&started.session_id).await.unwrap();
    let grpc = harness
        .grpc_client
        .status(&started.session_id)
        .await
        .unwrap();
    assert_eq!((&http.meta, &grpc.meta), (&meta, &meta));
    let body: serde_json::Value = reqwest::get(format!(
        "http://{}/status?sessionId={}",
        harness.address, started.session_id
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        (&body["userId"], &body["tags"], &body["metadata"]),
        (
            &json!("u-1"),
            &json!(["vip", "eu"]),
            &json!({"plan": "pro"})
        )
    );
    let snapshot = harness.client.snapshot(&started.session_id).await.unwrap();
    let grpc_snapshot = harness
        .grpc_client
        .snapshot(&started.session_id)
        .await
        .unwrap();
    assert_eq!((&snapshot.meta, &grpc_snapshot.meta), (&meta, &meta));

    let children = harness
        .store
        .tree_sessions(&SessionAddress::root(&started.session_id))
        .await
        .unwrap();
    assert_eq!(children.len(), 2);
    for child in children {
        assert_eq!(harness.client.status(&child).await.unwrap().meta, meta);
    }

    // gRPC starts carry them too; a session started without any has none.
    let by_grpc = harness
        .grpc_client
        .start_request(start_for("two_steps", "u-2", &["grpc"], "free"))
        .await
        .unwrap();
    let state = harness.client.status(&by_grpc.session_id).await.unwrap();
    assert_eq!(state.meta, expected("u-2", &["grpc"], "free"));
    let plain = harness.client.start("two_steps", "go").await.unwrap();
    let state = harness.client.status(&plain.session_id).await.unwrap();
    assert!(state.meta.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_over_its_caps_is_refused_on_both_transports_and_nothing_is_written() {
    let harness = Harness::server_only(agents::registry()).await;
    let mut too_big = start_for("two_steps", "u-1", &["a"], "pro");
    too_big.metadata = json!({"blob": "x".repeat(9 * 1024)}).as_object().cloned();
    let mut too_many_tags = start_for("two_steps", "u-1", &[], "pro");
    too_many_tags.tags = vec!["t".into(); 17];
    // Over HTTP the test server's body guard (4 KiB) refuses the big one before its JSON is read.
    let cases = [
        (too_big, ErrorCode::ValidationPayloadTooLarge),
        (too_many_tags, ErrorCode::ValidationError),
    ];
    for (request, http_code) in cases {
        let http = api_error(
            harness
                .client
                .start_request(request.clone())
                .await
                .unwrap_err(),
        );
        let grpc = api_error(
            harness
                .grpc_client
                .start_request(request)
                .await
                .unwrap_err(),
        );
        assert_eq!(
            (http.code, grpc.code),
            (http_code, ErrorCode::ValidationError)
        );
    }
    harness.assert_nothing_written().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_s_first_message_takes_the_session_s_metadata_from_its_body() {
    let harness = Harness::start(agents::registry()).await;
    let chat_id = baton_tests::unique("chat");
    let response = reqwest::Client::new()
        .post(format!("http://{}/chat", harness.address))
        .json(&json!({
            "id": chat_id,
            "trigger": "submit-message",
            "agent": "two_steps",
            "userId": "u-chat",
            "tags": ["web"],
            "metadata": {"plan": "team"},
            "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
        }))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    drop(response);
    let state = harness.client.status(&chat_id).await.unwrap();
    assert_eq!(state.meta, expected("u-chat", &["web"], "team"));
}
