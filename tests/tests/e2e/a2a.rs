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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_calls_question_puts_the_task_in_input_required_and_a_message_answers_it() {
    let log = std::env::temp_dir().join(format!("baton-a2a-q-{}.log", uuid::Uuid::new_v4()));
    let agent = baton_tests::mcp_agents::confirm_agent(
        "a2a_mcp_asker",
        &log,
        std::time::Duration::from_secs(60),
    )
    .await;
    let harness = Harness::start(baton_core::AgentRegistry::new([agent]).unwrap()).await;
    let key = baton_tests::TEST_SERVICE_KEY;
    // A blocking send answers once the task asks: the MCP server's question, with its schema.
    let (_, sent) = rpc(
        &harness,
        "a2a_mcp_asker",
        key,
        "message/send",
        user_message("go", None),
    )
    .await;
    let task = &sent["result"];
    assert_eq!(task["status"]["state"], "input-required", "{sent}");
    let (task_id, context_id) = (
        task["id"].as_str().unwrap().to_owned(),
        task["contextId"].as_str().unwrap().to_owned(),
    );
    let parts = task["status"]["message"]["parts"].as_array().unwrap();
    let asked = &parts[1]["data"]["pendingCalls"][0];
    assert_eq!(asked["toolName"], "question");
    assert_eq!(asked["input"]["message"], "May I deploy?");
    assert_eq!(
        asked["outputSchema"]["properties"]["ok"]["type"], "boolean",
        "{asked}"
    );
    let question_id = asked["toolCallId"].as_str().unwrap().to_owned();
    // The run goes on meanwhile: the session is active.
    assert_eq!(
        harness.client.status(&context_id).await.unwrap().status,
        Status::Active
    );

    // The next message on the task answers it (a refused answer first, writing nothing).
    let answer = |result: serde_json::Value| {
        serde_json::json!({"message": {
            "kind": "message", "messageId": baton_tests::unique("msg"), "role": "user",
            "taskId": task_id, "contextId": context_id,
            "parts": [{"kind": "data", "data": {"toolCallId": question_id, "result": result}}],
        }})
    };
    let (_, refused) = rpc(
        &harness,
        "a2a_mcp_asker",
        key,
        "message/send",
        answer(serde_json::json!({"ok": "yes"})),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["data"]["code"], "INVALID_RESULT",
        "{refused}"
    );
    let (_, answered) = rpc(
        &harness,
        "a2a_mcp_asker",
        key,
        "message/send",
        answer(serde_json::json!({"ok": true})),
    )
    .await;
    let task = &answered["result"];
    assert_eq!(task["status"]["state"], "completed", "{answered}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        r#"done: {"result":"accept: deploy ok=True"}"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_configuration_gets_the_task_at_each_turn_end_with_its_token() {
    use axum::{Router, extract::State, http::HeaderMap, routing::post};
    type Pushes = std::sync::Arc<tokio::sync::Mutex<Vec<(Option<String>, serde_json::Value)>>>;
    // The client's push endpoint, on loopback (the test server's callback hosts).
    let pushes: Pushes = Default::default();
    let endpoint = Router::new()
        .route(
            "/push",
            post(
                |State(pushes): State<Pushes>,
                 headers: HeaderMap,
                 body: axum::Json<serde_json::Value>| async move {
                    let token = headers
                        .get("x-a2a-notification-token")
                        .and_then(|value| value.to_str().ok())
                        .map(str::to_owned);
                    pushes.lock().await.push((token, body.0));
                    axum::http::StatusCode::NO_CONTENT
                },
            ),
        )
        .with_state(pushes.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/push", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, endpoint).await });

    let harness = Harness::start(agents::registry()).await;
    let key = baton_tests::TEST_SERVICE_KEY;
    let card = reqwest::Client::new()
        .get(format!(
            "http://{}/agents/asker/.well-known/agent-card.json",
            harness.address
        ))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");

    let mut params = user_message("go", None);
    params["configuration"] = serde_json::json!({
        "blocking": false,
        "pushNotificationConfig": {"url": url, "token": "client-token"},
    });
    let (_, sent) = rpc(&harness, "asker", key, "message/send", params).await;
    let task_id = sent["result"]["id"].as_str().unwrap().to_owned();
    // The turn suspends on its client call: the task is pushed, input-required.
    let pushed = |state: &'static str| {
        let pushes = pushes.clone();
        let task_id = task_id.clone();
        async move {
            let seen = async {
                loop {
                    let got = pushes.lock().await.clone();
                    if let Some(found) = got
                        .into_iter()
                        .find(|(_, task)| task["status"]["state"] == state)
                    {
                        return found;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            };
            let (token, task) = tokio::time::timeout(WAIT_LIMIT, seen)
                .await
                .unwrap_or_else(|_| panic!("no push of a {state} task"));
            assert_eq!(token.as_deref(), Some("client-token"));
            assert_eq!(task["id"], task_id.as_str());
            assert_eq!(task["kind"], "task");
        }
    };
    pushed("input-required").await;
    assert_eq!(pushes.lock().await.len(), 1, "one push per turn end");

    // The client's answer on the task ends the turn: the task is pushed again, completed.
    let (_, task) = rpc(
        &harness,
        "asker",
        key,
        "tasks/get",
        serde_json::json!({"id": task_id}),
    )
    .await;
    let asked = &task["result"]["status"]["message"]["parts"][1]["data"]["pendingCalls"][0];
    let answer = serde_json::json!({"message": {
        "kind": "message", "messageId": baton_tests::unique("msg"), "role": "user",
        "taskId": task_id,
        "parts": [{"kind": "data", "data": {"toolCallId": asked["toolCallId"], "result": {"answer": "yes"}}}],
    }, "configuration": {"blocking": false}});
    let (_, answered) = rpc(&harness, "asker", key, "message/send", answer).await;
    assert!(answered.get("error").is_none(), "{answered}");
    pushed("completed").await;
    assert_eq!(pushes.lock().await.len(), 2, "{:?}", pushes.lock().await);
}
