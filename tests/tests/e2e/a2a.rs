//! Baton's mounted agents served over A2A (v0.3, JSON-RPC), driven by the official A2A Python
//! SDK's client (`tests/a2a/client.py`, `a2a-sdk` as scripts/services.sh pins it) against a real
//! server, worker, Redis and Temporal: the card and its bearer scheme, a blocking send, a stream,
//! an input-required round answered by the next message on the task (and its refusals, which
//! write nothing), a cancel, a resubscribe after a dropped stream and push notification configs.
//! The script asserts on what the client sees; this test then checks Baton's side of the
//! contexts it left.

use baton_client::Client as _;
use baton_core::{ErrorCode, store::Status};
use baton_tests::{Harness, WAIT_LIMIT, agents};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_client_sends_streams_answers_cancels_and_resubscribes_over_a2a() {
    let harness = Harness::start(agents::registry()).await;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("a2a/client.py");
    let run = tokio::process::Command::new(baton_tests::mcp_agents::python())
        .arg(&script)
        .arg(format!("http://{}/agents", harness.address))
        .arg(baton_tests::TEST_SERVICE_KEY)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(WAIT_LIMIT * 3, run)
        .await
        .expect("the A2A client ends in time")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the A2A client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let left: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let context = |name: &str| left[name].as_str().unwrap().to_owned();

    // Each context is a session the calling service owns, in the status its task showed.
    for (name, status) in [
        ("sent", Status::Completed),
        ("chat", Status::Completed),
        ("streamed", Status::Completed),
        ("answered", Status::Completed),
        ("canceled", Status::Interrupted),
        ("resubscribed", Status::Completed),
    ] {
        let session = harness.client.status(&context(name)).await.unwrap();
        assert_eq!(session.status, status, "{name}");
        let owner = session.owner.expect("a context belongs to its caller");
        assert_eq!(owner.service, baton_tests::TEST_SERVICE, "{name}");
    }
    // The refused answers wrote nothing: the one answer the model saw is the accepted one.
    let messages = harness.messages(&context("answered")).await;
    let outcomes = baton_tests::tool_outcomes(&messages);
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    let chat = harness.client.status(&context("chat")).await.unwrap();
    assert_eq!(chat.output.as_deref(), Some("second: two"));
    let canceled = harness.client.status(&context("canceled")).await.unwrap();
    assert!(
        canceled
            .error
            .is_none_or(|e| e.code != ErrorCode::FrameworkCancelled)
    );
}

/// A second service's key, for the ownership test.
const OTHER_SERVICE_KEY: &str = "another service key, also of 32 bytes";

/// One JSON-RPC call to `agent`'s A2A endpoint with `key`: the HTTP status and the answer.
async fn rpc(
    harness: &Harness,
    agent: &str,
    key: &str,
    method: &str,
    params: serde_json::Value,
) -> (reqwest::StatusCode, serde_json::Value) {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let response = reqwest::Client::new()
        .post(format!("http://{}/agents/{agent}/a2a", harness.address))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

fn user_message(text: &str, context_id: Option<&str>) -> serde_json::Value {
    let mut message = serde_json::json!({
        "kind": "message", "messageId": baton_tests::unique("msg"), "role": "user",
        "parts": [{"kind": "text", "text": text}],
    });
    if let Some(context_id) = context_id {
        message["contextId"] = context_id.into();
    }
    serde_json::json!({"message": message})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_is_its_services_alone_and_an_agent_off_the_mount_is_not_served() {
    let options = baton_worker::ServerOptions {
        service_keys: baton_worker::auth::ServiceKeys::new(vec![
            (
                baton_tests::TEST_SERVICE.to_owned(),
                baton_tests::TEST_SERVICE_KEY.to_owned(),
            ),
            ("other".to_owned(), OTHER_SERVICE_KEY.to_owned()),
        ]),
        mounts: vec![baton_worker::mount::Mount::new("/agents").allow(["chatter"])],
        ..baton_tests::open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let key = baton_tests::TEST_SERVICE_KEY;

    let (status, sent) = rpc(
        &harness,
        "chatter",
        key,
        "message/send",
        user_message("one", None),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    let task = &sent["result"];
    assert_eq!(sent["id"], 7);
    assert_eq!(task["kind"], "task");
    assert_eq!(task["status"]["state"], "completed", "{sent}");
    let (task_id, context_id) = (
        task["id"].as_str().unwrap(),
        task["contextId"].as_str().unwrap(),
    );
    let before = harness.client.status(context_id).await.unwrap();

    // Another service reaches none of it, and its message on the context writes nothing.
    for (method, params) in [
        ("tasks/get", serde_json::json!({"id": task_id})),
        ("tasks/cancel", serde_json::json!({"id": task_id})),
        ("message/send", user_message("two", Some(context_id))),
    ] {
        let (status, refused) = rpc(&harness, "chatter", OTHER_SERVICE_KEY, method, params).await;
        assert_eq!(status, reqwest::StatusCode::OK, "{method}");
        assert_eq!(refused["error"]["code"], -32001, "{method}: {refused}");
        assert_eq!(
            refused["error"]["data"]["code"], "session_mismatch",
            "{method}"
        );
    }
    let after = harness.client.status(context_id).await.unwrap();
    assert_eq!(
        (after.status, after.step_count, after.run_id, after.output),
        (
            before.status,
            before.step_count,
            before.run_id,
            before.output
        )
    );

    // No credential, or a wrong one: 401 before anything is read.
    let (status, refused) = rpc(
        &harness,
        "chatter",
        "not a key",
        "tasks/get",
        serde_json::json!({"id": task_id}),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(refused["error"]["data"]["code"], "unauthorized");
    // An agent off the mount's allowlist has neither a card nor an endpoint.
    let card = reqwest::Client::new()
        .get(format!(
            "http://{}/agents/two_steps/.well-known/agent-card.json",
            harness.address
        ))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(card.status(), reqwest::StatusCode::NOT_FOUND);
    let (_, refused) = rpc(
        &harness,
        "two_steps",
        key,
        "message/send",
        user_message("x", None),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32001, "{refused}");
    // Not a method here; not JSON-RPC.
    let (_, refused) = rpc(
        &harness,
        "chatter",
        key,
        "tasks/list",
        serde_json::json!({}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32601);
    let (_, refused) = rpc(
        &harness,
        "chatter",
        key,
        "message/send",
        serde_json::json!({"nope": 1}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602);
}
