//! The chat submit contract's cases that `answers` does not cover, with plain HTTP requests: a
//! malformed approval id beside a stored answer (case C), a rejection for a call nothing awaits
//! carried inside case B's closed step, a re-sent answer for a drained call (case B,
//! `consumed`), a drained answer beside a new one (the new one decides), and a refusal as sent
//! winning over a sibling's transient failure; and a submit whose store script meets a corrupt
//! row is 500, not a retryable 503; past the completed marker's retention a re-sent answer is
//! unknown again.

use super::{
    answers::{
        answered, answering, approval_id, closed_step, corrupt_pending_call, first_message,
        fresh_id, output, post,
    },
    chat_registry,
};
use baton_tests::Harness;
use serde_json::{Value, json};

/// The chat's snapshot: the messages a reload rebuilds.
async fn snapshot(harness: &Harness, chat: &str) -> Value {
    reqwest::get(format!("http://{}/chat/{chat}/snapshot", harness.address))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The state of each tool part of the snapshot's message `index`, by call id.
fn tool_states(snapshot: &Value, index: usize) -> Vec<(String, String)> {
    snapshot["messages"][index]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| {
            Some((
                p["toolCallId"].as_str()?.to_owned(),
                p["state"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_approval_id_beside_a_stored_answer_is_409_answer_not_stored() {
    let harness = Harness::start(chat_registry()).await;
    let chat = &fresh_id();
    let chunks = first_message(&harness, chat, "mixed").await;
    let approval_id = approval_id(&chunks);
    let transfer = |id: &str| {
        json!({"type": "tool-transfer", "toolCallId": "call_1_2", "state": "approval-responded",
               "input": {"to": "alice", "amount": 10}, "approval": {"id": id, "approved": true}})
    };
    let parts = json!([
        output("call_1_1", json!({"answer": "yes"})),
        transfer("bogus")
    ]);
    let response = post(&harness, answering(chat, parts)).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "state_not_resumable");
    assert_eq!(body["cause"], "answer_not_stored");
    assert_eq!(body["toolCallIds"], json!(["call_1_2"]));
    assert_eq!(body["retryable"], false);
    // The sibling's answer is in; the approval still waits for its answer.
    assert_eq!(
        tool_states(&snapshot(&harness, chat).await, 1),
        [
            ("call_1_1".to_owned(), "output-available".to_owned()),
            ("call_1_2".to_owned(), "approval-requested".to_owned())
        ]
    );
    // Answered again with the right id, the run continues (case A).
    let parts = json!([
        output("call_1_1", json!({"answer": "yes"})),
        transfer(&approval_id)
    ]);
    let chunks = answered(&harness, answering(chat, parts)).await;
    let text: String = chunks.iter().filter_map(|c| c["delta"].as_str()).collect();
    assert_eq!(
        text,
        r#"User: {"answer":"yes"}; transfer: sent 10 to alice"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_beside_an_awaited_batch_rides_inside_the_closed_step() {
    let harness = Harness::start(chat_registry()).await;
    let chat = &fresh_id();
    first_message(&harness, chat, "asker_twice").await;
    let parts = json!([
        output("call_1_1", json!({"answer": "one"})),
        output("nosuch", json!({"answer": "?"}))
    ]);
    let chunks = answered(&harness, answering(chat, parts)).await;
    assert_eq!(
        chunks,
        closed_step(&[
            json!({"type": "data-resume-rejected",
                   "data": {"toolCallId": "nosuch", "cause": "unknown_tool_call"}}),
            json!({"type": "data-answers", "data": {"continuation": "awaiting_batch",
                   "answers": [{"toolCallId": "call_1_1", "status": "accepted"}]}})
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_sent_answer_for_a_drained_call_is_a_closed_step_consumed() {
    let harness = Harness::start(chat_registry()).await;
    let chat = &fresh_id();
    first_message(&harness, chat, "asker_only").await;
    let body = answering(chat, json!([output("call_1_1", json!({"answer": "Ada"}))]));
    let chunks = answered(&harness, body.clone()).await;
    let text: String = chunks.iter().filter_map(|c| c["delta"].as_str()).collect();
    assert_eq!(text, r#"Hello {"answer":"Ada"}"#);
    // A lost 200 or a second tab sends the same request again: answered from the marker.
    assert_eq!(
        answered(&harness, body).await,
        closed_step(&[
            json!({"type": "data-answers", "data": {"continuation": "consumed",
                   "answers": [{"toolCallId": "call_1_1", "status": "already_completed"}]}})
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_as_sent_wins_over_a_transient_failure_and_keeps_its_code() {
    // One submit a minute, and small answers: a schema refusal takes the bucket's token, so the
    // sibling after it is rate limited; an oversized answer is refused before any token.
    let options = baton_worker::ServerOptions {
        submits_per_minute: Some(1),
        submit_limits: baton_core::submit::SubmitLimits {
            max_result_bytes: 1000,
        },
        ..baton_tests::open_options()
    };
    let harness = Harness::start_with(chat_registry(), options).await;
    let chat = &fresh_id();
    first_message(&harness, chat, "asker_twice").await;
    let second = output("call_1_2", json!({"answer": "two"}));
    for (first, status, code) in [
        (json!({"answer": 5}), 400, "INVALID_RESULT"),
        (
            json!({"answer": "x".repeat(2000)}),
            413,
            "validation_payload_too_large",
        ),
    ] {
        let parts = json!([output("call_1_1", first), second.clone()]);
        let response = post(&harness, answering(chat, parts)).await;
        let got = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        assert_eq!((got, body["code"].as_str()), (status, Some(code)), "{body}");
        assert_eq!(body["retryable"], false, "{body}");
    }
    assert_eq!(
        tool_states(&snapshot(&harness, chat).await, 1),
        [
            ("call_1_1".to_owned(), "input-available".to_owned()),
            ("call_1_2".to_owned(), "input-available".to_owned())
        ]
    );
}

/// `asker_again`: step 1 asks the user, step 2 asks again, step 3 answers; a drained call's
/// marker is kept `retention` (the default without one).
fn asker_again(retention: Option<std::time::Duration>) -> baton_core::Agent {
    let model = baton_core::ScriptedModel::default()
        .call("ask_user", json!({"question": "First?"}))
        .call("ask_user", json!({"question": "Second?"}))
        .answer("Last: {{result:ask_user}}");
    let builder = baton_core::Agent::builder("asker_again").model(model);
    let builder = match retention {
        Some(retention) => builder.completed_retention(retention),
        None => builder,
    };
    builder
        .client_tool(baton_core::tool::ClientTool::typed::<
            baton_tests::agents::Question,
            baton_tests::agents::Reply,
        >("ask_user", "Asks the user a question."))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_answer_beside_a_new_one_resumes_on_the_new_one() {
    let registry = baton_core::AgentRegistry::new([asker_again(None)]).unwrap();
    let harness = Harness::start(registry).await;
    let chat = &fresh_id();
    first_message(&harness, chat, "asker_again").await;
    let first = output("call_1_1", json!({"answer": "one"}));
    let chunks = answered(&harness, answering(chat, json!([first.clone()]))).await;
    assert!(
        chunks
            .iter()
            .any(|c| c["type"] == "tool-input-available" && c["toolCallId"] == "call_2_1"),
        "{chunks:?}"
    );
    // A custom sender keeps the drained answer beside the new one in the trailing step.
    let both = json!([first, output("call_2_1", json!({"answer": "two"}))]);
    let chunks = answered(&harness, answering(chat, both)).await;
    let text: String = chunks.iter().filter_map(|c| c["delta"].as_str()).collect();
    assert_eq!(text, r#"Last: {"answer":"two"}"#, "{chunks:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_on_a_corrupt_stored_row_is_500_not_a_retryable_answer() {
    let harness = Harness::start(chat_registry()).await;
    let chat = &fresh_id();
    first_message(&harness, chat, "asker_only").await;
    corrupt_pending_call(&harness, chat).await;
    // The submit route reads the row in the store's script, not before it as the chat route does.
    let response = reqwest::Client::new()
        .post(format!("http://{}/submit-tool-result", harness.address))
        .json(&json!({"sessionId": chat, "toolCallId": "call_1_1", "result": {"answer": "x"}}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        (status, body["code"].as_str()),
        (500, Some("framework_internal_error")),
        "{body}"
    );
    assert_eq!(body["retryable"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_completed_markers_retention_a_re_sent_answer_is_unknown_again() {
    // `asker_again` with no retention: the marker of a drained call is gone at once.
    let agent = asker_again(Some(std::time::Duration::ZERO));
    let harness = Harness::start(baton_core::AgentRegistry::new([agent]).unwrap()).await;
    let chat = &fresh_id();
    first_message(&harness, chat, "asker_again").await;
    let body = answering(chat, json!([output("call_1_1", json!({"answer": "one"}))]));
    answered(&harness, body.clone()).await;
    let response = post(&harness, body).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "state_not_resumable");
    assert_eq!(body["cause"], "unknown_tool_call", "{body}");
}
