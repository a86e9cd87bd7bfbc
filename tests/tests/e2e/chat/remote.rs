//! A remote child's people-in-the-loop through the real `useChat` client: the question and the
//! approval a producer's `ask_then_approve` waits on are tool parts of the consumer's chat
//! message under their relayed ids, owned by the remote child, answered through the consumer's
//! root (a wrong answer refused by the producer, nothing stored), shown once after a reload, and
//! the tree runs to its end. The consumer serves an agent of the producer's type too: the
//! forwarded chunks (the producer's ids) must still give no part.

use super::{AI_RELEASES, drive, has_part};
use crate::mount::runs;
use crate::remote_relay::{child_of, producer};
use baton_core::{
    AgentRegistry,
    store::{SessionAddress, Status},
    subagent::SubAgent,
};
use baton_tests::{
    Harness,
    remote_agents::{self, ask_then_approve, delegator},
};
use serde_json::{Value, json};

/// Asserts the summary `s` of one `remote_relay` drive, the remote child being `child`.
fn relayed_through_the_chat(s: &Value, child: &str) {
    let owner = |call: &Value| json!({"toolCallId": call, "agentId": child, "agentType": "ask_then_approve"});
    let suspended = &s["suspended"];
    let question = &suspended["toolCallId"];
    assert_eq!(suspended["status"], "ready", "{s}");
    assert!(has_part(suspended, "tool-ask_user:input-available"), "{s}");
    // The producer's render hint came with the call.
    assert!(has_part(suspended, "data-render"), "{s}");
    assert_eq!(suspended["owners"], json!([owner(question)]), "{s}");
    assert_eq!(suspended["metadata"]["baton"], owner(question), "{s}");
    // Only the relayed question: no part of the producer's own ids (its `ask_user` call).
    let asks = |summary: &Value| {
        summary["lastParts"].as_array().map_or(0, |parts| {
            parts
                .iter()
                .filter(|p| p.as_str().is_some_and(|p| p.starts_with("tool-ask_user")))
                .count()
        })
    };
    assert_eq!(asks(suspended), 1, "{s}");

    // The producer refuses the wrong answer, as it is; the question stays awaited.
    assert_refused_invalid_result(s);
    // It names the call as the chat knows it, never the producer's id.
    let body: Value = serde_json::from_str(s["errors"][0].as_str().unwrap_or("{}")).unwrap();
    assert_eq!(body["toolCallId"], *question, "{s}");
    let reloaded = &s["reloaded"];
    assert!(has_part(reloaded, "tool-ask_user:input-available"), "{s}");
    assert_eq!(reloaded["copies"], 1, "{s}");
    assert_eq!(reloaded["owners"], json!([owner(question)]), "{s}");

    // The answer continues the child to its approval, in the same message, in one POST.
    let approval = &s["approvalAsked"];
    let gated = &approval["toolCallId"];
    assert_ne!(gated, question, "{s}");
    assert_eq!(approval["answerPosts"], 1, "{s}");
    assert_eq!(approval["copies"], 1, "{s}");
    assert!(has_part(approval, "tool-ask_user:output-available"), "{s}");
    assert!(
        has_part(approval, "tool-transfer:approval-requested"),
        "{s}"
    );
    assert_eq!(
        approval["owners"],
        json!([owner(question), owner(gated)]),
        "{s}"
    );
    let approval_id = approval["approvalId"].as_str().unwrap_or_default();
    assert!(
        approval_id.ends_with(&format!("::{}", gated.as_str().unwrap_or("?"))),
        "{s}"
    );
    let reloaded = &s["reloadedApproval"];
    assert_eq!(reloaded["copies"], 1, "{s}");
    assert!(
        has_part(reloaded, "tool-transfer:approval-requested"),
        "{s}"
    );

    // The approval ends the child, then the tree; the forwarded end of `transfer` is the
    // relayed part's output.
    assert_eq!(s["status"], "ready", "{s}");
    assert_eq!(s["ownPosts"], 1, "{s}");
    assert!(has_part(s, "tool-transfer:output-available"), "{s}");
    assert_eq!(
        s["lastText"], r#"got {"answer":"Ada"} / sent 10 to alice"#,
        "{s}"
    );
    assert!(s["errors"].as_array().is_some_and(|e| e.len() == 1), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_childs_question_and_approval_are_tool_parts_answered_through_the_chat() {
    let (producer, url) = producer().await;
    let remote = remote_agents::remote(&url, "ask_then_approve");
    let registry = AgentRegistry::new([
        delegator(SubAgent::remote("research", "asks", remote)),
        ask_then_approve(),
    ])
    .unwrap();
    let consumer = Harness::start(registry).await;
    for (done, release) in AI_RELEASES.into_iter().enumerate() {
        let s = drive(&consumer, release, "remote_relay").await;
        let root = s["chatId"]
            .as_str()
            .unwrap_or_else(|| panic!("no chat id: {s}"));
        let child = child_of(&consumer.store, root).await;
        relayed_through_the_chat(&s, &child);
        let child = SessionAddress::root(child);
        assert_eq!(
            producer
                .store
                .session(&child)
                .await
                .unwrap()
                .unwrap()
                .status,
            Status::Completed
        );
        // One child per chat on the producer, which ran three runs: its start, one resume per
        // answer (the refused answer started none).
        assert_eq!(runs(&producer, 3 * (done + 1)).await, 3 * (done + 1));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_questions_across_a2a_are_tool_parts_answered_through_the_chat() {
    let (_producer, url) = producer().await;
    let card = format!("{url}/ask_then_approve{}", baton_core::a2a::AGENT_CARD_PATH);
    let mut agent = baton_core::subagent::A2aAgent::new(card).bearer(baton_tests::TEST_SERVICE_KEY);
    agent.retry_base_delay = std::time::Duration::from_millis(20);
    agent.poll_interval = std::time::Duration::from_millis(50);
    let registry =
        AgentRegistry::new([delegator(SubAgent::a2a("research", "asks", agent))]).unwrap();
    let consumer = Harness::start(registry).await;
    for release in AI_RELEASES {
        let s = drive(&consumer, release, "remote_relay").await;
        let root = s["chatId"]
            .as_str()
            .unwrap_or_else(|| panic!("no chat id: {s}"));
        let child = child_of(&consumer.store, root).await;
        // The child's agent type on the caller's stream is the A2A tool's name.
        let owner =
            |call: &Value| json!({"toolCallId": call, "agentId": child, "agentType": "research"});
        let suspended = &s["suspended"];
        let question = &suspended["toolCallId"];
        assert!(has_part(suspended, "tool-ask_user:input-available"), "{s}");
        assert!(has_part(suspended, "data-render"), "{s}");
        assert_eq!(suspended["owners"], json!([owner(question)]), "{s}");
        // The producer's refusal crosses A2A with its code; the question stays awaited.
        assert_refused_invalid_result(&s);
        let approval = &s["approvalAsked"];
        assert_ne!(&approval["toolCallId"], question, "{s}");
        assert!(
            has_part(approval, "tool-transfer:approval-requested"),
            "{s}"
        );
        assert_eq!(s["status"], "ready", "{s}");
        assert_eq!(
            s["lastText"], r#"got {"answer":"Ada"} / sent 10 to alice"#,
            "{s}"
        );
    }
}

/// Asserts that the scenario's wrong answer (its `refused` summary) ended in an error naming
/// `INVALID_RESULT`, the producer's refusal as it is.
fn assert_refused_invalid_result(s: &Value) {
    let refused = &s["refused"];
    assert_eq!(refused["status"], "error", "{s}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("INVALID_RESULT")),
        "{s}"
    );
}
