//! `GET /pending/stream`: the inbox as server-sent events. The page comes at once; a session
//! that starts waiting on a person is the next event, its answer the one after; a call's age
//! alone sends nothing.

use baton_client::Client as _;
use baton_core::{message::ToolOutcome, search::PendingPage};
use baton_tests::{Harness, WAIT_LIMIT, agents};
use futures::StreamExt as _;
use serde_json::json;

const KEY: &str = "an operator key of at least thirty-two bytes";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_stream_sends_each_change_of_the_waiting_calls() {
    let harness = Harness::start_with(agents::registry(), baton_tests::keyed_options(KEY)).await;
    let base = format!("http://{}", harness.address);
    let response = reqwest::Client::new()
        .get(format!("{base}/pending/stream"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut bytes = response.bytes_stream();
    let mut buffer = String::new();
    let mut next_page = async || -> PendingPage {
        loop {
            if let Some(cut) = buffer.find("\n\n") {
                let event: String = buffer.drain(..cut + 2).collect();
                assert!(event.contains("event: pending"), "{event}");
                let data = event
                    .lines()
                    .find_map(|line| line.strip_prefix("data: "))
                    .expect("the event's data");
                return serde_json::from_str(data).unwrap();
            }
            let chunk = tokio::time::timeout(WAIT_LIMIT, bytes.next())
                .await
                .expect("an event in time")
                .expect("the stream goes on")
                .unwrap();
            buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    };
    assert!(next_page().await.calls.is_empty(), "nobody waits yet");

    let operator = baton_client::HttpClient::with_bearer(&base, KEY).unwrap();
    let session = operator.start("asker_only", "go").await.unwrap().session_id;
    let waiting = next_page().await;
    assert_eq!(waiting.calls.len(), 1, "{waiting:?}");
    assert_eq!(waiting.calls[0].session_id, session);

    let answer = ToolOutcome::Result(json!({"answer": "Ann"}));
    operator
        .submit(&session, "call_1_1", &answer)
        .await
        .unwrap();
    let answered = next_page().await;
    assert!(answered.calls.is_empty(), "{answered:?}");
}
