//! Tool call ids unique within a session tree whatever the models return: two children on the
//! same script ask under the same model id, and each question is answered through the root by
//! the id the client sees, the model's id kept for the provider.

use baton_client::Client as _;
use baton_core::{
    ChunkKind, Message,
    message::ToolOutcome,
    store::{Continuation, SessionAddress, Status},
    subagent,
};
use baton_tests::{Harness, WAIT_LIMIT, agents};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_children_on_one_script_ask_under_ids_unique_in_the_tree() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("twin_askers", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let twins = [
        subagent::child_address(&root, "tw_1_1"),
        subagent::child_address(&root, "tw_1_2"),
    ];
    let chunks = harness.chunks_until_suspended(&started.session_id).await;

    // Each child awaits one call; the ids differ, and one of them is Baton's own.
    let mut awaited = Vec::new();
    for twin in &twins {
        let pending = harness.store.pending_calls(twin).await.unwrap();
        assert_eq!(pending.len(), 1, "{twin:?}");
        awaited.push(pending[0].tool_call_id.clone());
    }
    assert_ne!(awaited[0], awaited[1]);
    assert!(awaited.contains(&"ca_1_1".to_owned()), "{awaited:?}");
    let renamed = awaited.iter().find(|id| *id != "ca_1_1").unwrap();
    assert!(renamed.starts_with("bt_"), "{renamed}");
    // The root's stream announces each question under the id a client answers.
    let announced: Vec<(String, String)> = chunks
        .iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::ToolStart { tool_call_id, .. } if tool_call_id != "tw_1_1" => {
                Some((chunk.header.agent_id.clone(), tool_call_id.clone()))
            }
            _ => None,
        })
        .filter(|(agent, _)| agent != &started.session_id)
        .collect();
    assert_eq!(announced.len(), 2, "{announced:?}");
    for (agent, id) in &announced {
        let owner = harness
            .store
            .call_owner(&started.session_id, id)
            .await
            .unwrap();
        assert_eq!(owner.as_ref(), Some(agent));
    }

    // Answered through the root, each reaches its own child.
    let mut continuations = Vec::new();
    for (id, answer) in awaited.iter().zip(["left", "right"]) {
        let submitted = harness
            .client
            .submit(
                &started.session_id,
                id,
                &ToolOutcome::Result(json!({ "answer": answer })),
            )
            .await
            .unwrap();
        continuations.push(submitted.continuation);
    }
    assert_eq!(
        continuations,
        [Continuation::AwaitingBatch, Continuation::CallerResumes]
    );
    harness.client.resume(&started.session_id).await.unwrap();
    harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    for (twin, answer) in twins.iter().zip(["left", "right"]) {
        let state = harness.client.status(&twin.session_id).await.unwrap();
        assert_eq!(state.status, Status::Completed);
        assert_eq!(
            state.output.as_deref(),
            Some(format!(r#"child heard {{"answer":"{answer}"}}"#).as_str())
        );
    }
    // The renamed call keeps the model's id, which is what its provider would be sent.
    let owner = twins
        .iter()
        .zip(&awaited)
        .find(|(_, id)| *id == renamed)
        .map(|(twin, _)| twin)
        .unwrap();
    let log = harness.store.messages(owner).await.unwrap();
    let provider_ids: Vec<Option<&str>> = log
        .iter()
        .filter_map(|message| match message {
            Message::Assistant { tool_calls, .. } => tool_calls.first(),
            _ => None,
        })
        .map(|call| call.provider_id.as_deref())
        .collect();
    assert_eq!(provider_ids, [Some("ca_1_1")]);
}
