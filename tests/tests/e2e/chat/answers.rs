//! The chat route's answers, with plain HTTP requests: the errors (all answers rejected, a
//! refusal as sent, a first message without an agent), case B for an answer whose batch waits
//! for a sibling, the UI message stream's headers and framing, CORS, and the reconnect stream.

use super::chat_registry;
use baton_client::Client as _;
use baton_tests::{Harness, WAIT_LIMIT, WorkerThread};
use serde_json::{Value, json};

/// A chat id no earlier run used (the workflow ids of a session outlive its test's keys).
pub(super) fn fresh_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// POSTs a `useChat` body to `/chat`.
pub(super) async fn post(harness: &Harness, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://{}/chat", harness.address))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// The UI chunks of an SSE answer, and whether it ended with `[DONE]`.
pub(super) async fn frames(response: reqwest::Response) -> (Vec<Value>, bool) {
    let text = response.text().await.unwrap();
    let data: Vec<&str> = text
        .split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .collect();
    let done = data.last() == Some(&"[DONE]");
    let chunks = data
        .iter()
        .filter(|d| **d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    (chunks, done)
}

/// Sends the chat's first message and reads its answer to the end.
pub(super) async fn first_message(harness: &Harness, chat: &str, agent: &str) -> Vec<Value> {
    let response = post(
        harness,
        json!({"id": chat, "trigger": "submit-message", "agent": agent,
               "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "go"}]}]}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let (chunks, done) = frames(response).await;
    assert!(done);
    chunks
}

/// A body whose trailing assistant message answers with `parts` in one step.
pub(super) fn answering(chat: &str, parts: Value) -> Value {
    let mut all = vec![json!({"type": "step-start"})];
    all.extend(parts.as_array().unwrap().iter().cloned());
    json!({"id": chat, "trigger": "submit-message", "messageId": "a1",
           "messages": [{"id": "a1", "role": "assistant", "parts": all}]})
}

fn approval(call: &str, approval_id: &str) -> Value {
    json!({"type": "tool-transfer", "toolCallId": call, "state": "approval-responded",
           "input": {"to": "alice", "amount": 10},
           "approval": {"id": approval_id, "approved": true}})
}

pub(super) fn output(call: &str, output: Value) -> Value {
    json!({"type": "tool-ask_user", "toolCallId": call, "state": "output-available",
           "input": {}, "output": output})
}

async fn refusal(response: reqwest::Response) -> (u16, Value) {
    (response.status().as_u16(), response.json().await.unwrap())
}

/// POSTs `parts` as the answers of the trailing message and reads the typed error.
async fn answer(harness: &Harness, chat: &str, parts: Value) -> (u16, Value) {
    refusal(post(harness, answering(chat, parts)).await).await
}

/// The approval id a turn's chunks ask for.
pub(super) fn approval_id(chunks: &[Value]) -> String {
    chunks
        .iter()
        .find(|c| c["type"] == "tool-approval-request")
        .map(|c| c["approvalId"].as_str().unwrap().to_owned())
        .expect("an approval request")
}

/// Starts a `guarded` chat: its first answer's chunks and the approval id it asks for.
async fn awaiting_approval(harness: &Harness, chat: &str) -> (Vec<Value>, String) {
    let chunks = first_message(harness, chat, "guarded").await;
    let approval_id = approval_id(&chunks);
    (chunks, approval_id)
}

/// Overwrites the chat's pending call `call_1_1` with a row Baton cannot read.
pub(super) async fn corrupt_pending_call(harness: &Harness, chat: &str) {
    let client = redis::Client::open(baton_tests::redis_url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let pending = format!("{}:{{{chat}}}:{chat}:pending", harness.prefix);
    let _: () = redis::cmd("HSET")
        .arg(&pending)
        .arg("call_1_1")
        .arg("not json")
        .query_async(&mut connection)
        .await
        .unwrap();
}

/// POSTs `body`, which must be answered 200, and reads its chunks to the end.
pub(super) async fn answered(harness: &Harness, body: Value) -> Vec<Value> {
    let response = post(harness, body).await;
    assert_eq!(response.status(), 200);
    let (chunks, done) = frames(response).await;
    assert!(done);
    chunks
}

/// Case B's chunks for the trailing message `a1`: a step that opens and closes around `inside`.
pub(super) fn closed_step(inside: &[Value]) -> Vec<Value> {
    let mut chunks = vec![
        json!({"type": "start", "messageId": "a1"}),
        json!({"type": "start-step"}),
    ];
    chunks.extend(inside.iter().cloned());
    chunks.push(json!({"type": "finish-step"}));
    chunks.push(json!({"type": "finish"}));
    chunks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_all_rejected_are_409_with_their_cause_and_a_malformed_approval_id_is_400() {
    let harness = Harness::start(chat_registry()).await;
    let chat = &fresh_id();
    let (chunks, approval_id) = awaiting_approval(&harness, chat).await;
    let input = chunks
        .iter()
        .find(|c| c["type"] == "tool-input-available")
        .unwrap();
    assert!(input.get("providerExecuted").is_none(), "{input}");
    assert_eq!(chunks.last().unwrap()["finishReason"], "tool-calls");

    let (status, body) = answer(&harness, chat, json!([approval("call_1_1", "bogus")])).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("validation_error")),
        "{body}"
    );
    for (call, id, cause) in [
        ("nosuch", "r::nosuch", "unknown_tool_call"),
        ("call_1_1", "another-run::call_1_1", "stale_run"),
    ] {
        let (status, body) = answer(&harness, chat, json!([approval(call, id)])).await;
        assert_eq!(status, 409, "{body}");
        assert_eq!(body["code"], "state_not_resumable");
        assert_eq!(body["cause"], cause, "{body}");
        assert_eq!(body["retryable"], false);
    }
    harness.client.stop(chat, false).await.unwrap();
    let (status, body) = answer(&harness, chat, json!([approval("call_1_1", &approval_id)])).await;
    assert_eq!(
        (status, body["cause"].as_str()),
        (409, Some("run_stopped")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_whose_sibling_is_awaited_closes_its_step_with_a_data_part() {
    let harness = Harness::start(chat_registry()).await;
    let chat = &fresh_id();
    first_message(&harness, chat, "asker_twice").await;
    let response = post(
        &harness,
        answering(chat, json!([output("call_1_1", json!({"answer": "one"}))])),
    )
    .await;
    assert_eq!(response.status(), 200);
    let headers = response.headers();
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(headers["cache-control"], "no-cache");
    assert_eq!(headers["x-vercel-ai-ui-message-stream"], "v1");
    assert_eq!(headers["x-accel-buffering"], "no");
    let (chunks, done) = frames(response).await;
    assert!(done);
    assert_eq!(
        chunks,
        closed_step(&[
            json!({"type": "data-answers", "data": {"continuation": "awaiting_batch",
                   "answers": [{"toolCallId": "call_1_1", "status": "accepted"}]}})
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_as_sent_keeps_its_code_and_every_other_answer_is_submitted() {
    let harness = Harness::start(chat_registry()).await;
    let chat = &fresh_id();
    first_message(&harness, chat, "asker_twice").await;
    let body = answering(
        chat,
        json!([
            output("call_1_1", json!({"answer": 5})),
            output("call_1_2", json!({"answer": "two"}))
        ]),
    );
    let (status, error) = refusal(post(&harness, body).await).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("INVALID_RESULT")),
        "{error}"
    );
    let snapshot: Value = reqwest::get(format!("http://{}/chat/{chat}/snapshot", harness.address))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let states: Vec<&str> = snapshot["messages"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["state"].as_str())
        .collect();
    assert_eq!(
        states,
        ["input-available", "output-available"],
        "{snapshot}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_message_needs_the_agent_and_writes_nothing_without_it() {
    let harness = Harness::start(chat_registry()).await;
    let (status, body) = refusal(
        post(
            &harness,
            json!({"id": "c1", "trigger": "submit-message",
                   "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("validation_error")),
        "{body}"
    );
    harness.assert_nothing_written().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_route_reattaches_to_a_running_turn_and_answers_204_otherwise() {
    let harness = Harness::server_only(chat_registry()).await;
    let stream =
        |chat: &str| reqwest::get(format!("http://{}/chat/{chat}/stream", harness.address));
    assert_eq!(stream("nobody").await.unwrap().status(), 204);
    // No worker yet: the first turn waits, so the second tab attaches to a running turn.
    let chat = fresh_id();
    let sending = tokio::spawn(
        reqwest::Client::new()
            .post(format!("http://{}/chat", harness.address))
            .json(&json!({"id": &chat, "trigger": "submit-message", "agent": "chatter",
                "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "hello"}]}]}))
            .send(),
    );
    let attached = tokio::time::timeout(WAIT_LIMIT, async {
        loop {
            let response = stream(&chat).await.unwrap();
            if response.status() == 200 {
                break response;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the first turn's session exists in time");
    let _worker = WorkerThread::spawn(&harness.task_queue, &harness.prefix, chat_registry());
    let (second_tab, done) = frames(attached).await;
    assert!(done);
    let (first_tab, _) = frames(sending.await.unwrap().unwrap()).await;
    // Both tabs are told when the message was created (when the route took the user message,
    // which the log keeps); the rest is the same too.
    assert!(
        first_tab[0]["messageMetadata"]["createdAt"].is_u64(),
        "{first_tab:?}"
    );
    assert_eq!(second_tab, first_tab);
    let text: String = first_tab
        .iter()
        .filter(|c| c["type"] == "text-delta")
        .map(|c| c["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "first: hello");
    assert_eq!(first_tab[0]["type"], "start");
    assert_eq!(first_tab[0]["messageId"], "a1");
    let finish = first_tab.last().unwrap();
    assert_eq!(finish["finishReason"], "stop");
    assert_eq!(finish["messageMetadata"]["models"], json!(["scripted"]));
    assert_eq!(finish["messageMetadata"]["usage"]["outputTokens"], 2);
    assert_eq!(stream(&chat).await.unwrap().status(), 204);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_stored_row_is_500_not_a_retryable_answer() {
    let harness = Harness::start(chat_registry()).await;
    let chat = &fresh_id();
    first_message(&harness, chat, "asker_only").await;
    corrupt_pending_call(&harness, chat).await;
    let (status, body) = answer(
        &harness,
        chat,
        json!([output("call_1_1", json!({"answer": "x"}))]),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (500, Some("framework_internal_error")),
        "{body}"
    );
    assert_eq!(body["retryable"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transient_failure_beside_a_stored_answer_is_409_and_alone_keeps_its_retryable_answer() {
    // One submit a minute: a request's second answer meets an empty bucket, a transient refusal.
    let options = baton_worker::ServerOptions {
        submits_per_minute: Some(1),
        ..baton_tests::open_options()
    };
    let harness = Harness::start_with(chat_registry(), options).await;
    let chat = &fresh_id();
    first_message(&harness, chat, "asker_twice").await;
    let both = json!([
        output("call_1_1", json!({"answer": "one"})),
        output("call_1_2", json!({"answer": "two"}))
    ]);
    let (status, body) = answer(&harness, chat, both).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "state_not_resumable");
    assert_eq!(body["cause"], "answer_not_stored");
    assert_eq!(body["toolCallIds"], json!(["call_1_2"]));
    assert_eq!(body["retryable"], false);
    let second = json!([output("call_1_2", json!({"answer": "two"}))]);
    let (status, body) = answer(&harness, chat, second).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("rate_limited")),
        "{body}"
    );
    assert_eq!(body["retryable"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_with_an_edited_input_runs_the_edited_call_in_the_continuation() {
    let harness = Harness::start(chat_registry()).await;
    let chat = &fresh_id();
    let (_, approval_id) = awaiting_approval(&harness, chat).await;
    let mut edited = approval("call_1_1", &approval_id);
    edited["input"] = json!({"to": "bob", "amount": 5});
    let response = post(&harness, answering(chat, json!([edited]))).await;
    assert_eq!(response.status(), 200);
    let (chunks, done) = frames(response).await;
    assert!(done);
    assert_eq!(chunks[0], json!({"type": "start", "messageId": "a1"}));
    assert_eq!(
        chunks[1],
        json!({"type": "tool-output-available", "toolCallId": "call_1_1",
               "output": "sent 5 to bob", "providerExecuted": true})
    );
    assert_eq!(chunks[2], json!({"type": "start-step"}));
    let text: String = chunks.iter().filter_map(|c| c["delta"].as_str()).collect();
    assert_eq!(text, "Transfer: sent 5 to bob");
}
