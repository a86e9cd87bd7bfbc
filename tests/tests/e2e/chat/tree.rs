//! A session tree's people-in-the-loop through the real `useChat` client: a descendant's client
//! call or approval is a tool part of the chat's message, with its owner beside it, answered
//! with `addToolOutput` / `addToolApprovalResponse` in exactly one POST through the root, live
//! and after a reload from the snapshot; and the `demo_tree` agent chats to its end.

use super::{
    answers::{answering, first_message, frames, fresh_id, output, post},
    chat_registry, has_part, on_every_release, ready_with,
};
use baton_tests::Harness;
use serde_json::{Value, json};

/// The owners a summary's message names beside its descendants' calls, as (agent type, tool).
fn owner_types(owners: &Value) -> Vec<String> {
    let mut types: Vec<String> = owners
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|o| {
            assert!(
                o["agentId"].as_str().is_some_and(|id| !id.is_empty()),
                "{o}"
            );
            assert!(o["toolCallId"].as_str().is_some(), "{o}");
            o["agentType"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    types.sort();
    types
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchilds_question_is_a_tool_part_answered_with_one_post() {
    on_every_release("tree_grandchild", |s| {
        let suspended = &s["suspended"];
        assert_eq!(suspended["status"], "ready", "{s}");
        assert!(has_part(suspended, "tool-ask_user:input-available"), "{s}");
        assert_eq!(owner_types(&suspended["owners"]), ["child_asker"], "{s}");
        let owner = &suspended["owners"][0];
        assert_eq!(suspended["metadata"]["baton"], *owner, "{s}");
        assert_eq!(s["answerPosts"], 1, "{s}");
        ready_with(s, 2, r#"top got middle got child heard {"answer":"deep"}"#);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_asks_again_after_its_answer_ends_the_continuation_with_its_next_question() {
    on_every_release("tree_asks_again", |s| {
        let again = &s["again"];
        assert_eq!(again["status"], "ready", "{s}");
        assert_ne!(again["first"], again["second"], "{s}");
        assert!(has_part(again, "tool-ask_user:output-available"), "{s}");
        assert!(has_part(again, "tool-ask_user:input-available"), "{s}");
        // The answer's response opened a step for the child's next question (the spec's case
        // A: a continuation opens a new step), after the answered one.
        let parts: Vec<&str> = again["lastParts"]
            .as_array()
            .map(|parts| parts.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let at = |part: &str| parts.iter().position(|p| *p == part);
        let last_step = parts.iter().rposition(|p| *p == "step-start");
        assert!(
            at("tool-ask_user:output-available") < last_step
                && last_step < at("tool-ask_user:input-available"),
            "{s}"
        );
        assert_eq!(
            owner_types(&again["owners"]),
            ["child_asking_twice", "child_asking_twice"],
            "{s}"
        );
        ready_with(s, 3, r#"parent got child heard {"answer":"two"} last"#);
    })
    .await;
}

/// `fan_out`'s calls in a chat's message (`summary`): the children's question and approval as
/// tool parts, each with its owner.
fn both_children_ask(summary: &Value, s: &Value) {
    assert!(has_part(summary, "tool-ask_user:input-available"), "{s}");
    assert!(has_part(summary, "tool-transfer:approval-requested"), "{s}");
    let owners = owner_types(&summary["owners"]);
    assert_eq!(owners, ["child_approver", "child_asker"], "{s}");
}

/// `fan_out`'s answer once both children were answered.
const FAN_OUT_ANSWER: &str = r#"child heard {"answer":"red"} | child transfer: sent 5 to bob"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_approval_beside_a_siblings_question_is_answered_with_one_post() {
    on_every_release("tree_approval", |s| {
        both_children_ask(&s["suspended"], s);
        // The question alone completes no batch: nothing is sent until the approval.
        assert_eq!(s["postsAfterQuestion"], 1, "{s}");
        ready_with(s, 2, FAN_OUT_ANSWER);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_reloaded_from_the_snapshot_shows_its_childrens_calls_and_is_answered_once() {
    on_every_release("tree_reload", |s| {
        both_children_ask(&s["reloaded"], s);
        assert_eq!(s["postsAfterQuestion"], 0, "{s}");
        ready_with(s, 1, FAN_OUT_ANSWER);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_tree_chats_to_its_end() {
    on_every_release("demo_tree", |s| {
        assert_eq!(
            owner_types(&s["suspended"]["owners"]),
            ["demo_interviewer"],
            "{s}"
        );
        assert_eq!(s["status"], "ready", "{s}");
        assert_eq!(s["ownPosts"], 2, "{s}");
        let text = s["lastText"].as_str().unwrap_or_default();
        assert!(
            text.starts_with("Trip plan: The user wants to visit Lisbon.")
                && text.ends_with("360."),
            "{s}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_answer_that_leaves_the_trees_batch_open_closes_its_step_awaiting_the_batch() {
    let harness = Harness::start(chat_registry()).await;
    let chat = &fresh_id();
    let chunks = first_message(&harness, chat, "fan_out").await;
    let question = chunks
        .iter()
        .find(|c| c["type"] == "tool-input-available" && c["toolName"] == "ask_user")
        .unwrap_or_else(|| panic!("the child's question as a tool part: {chunks:?}"));
    assert!(question.get("providerExecuted").is_none(), "{question}");
    let owner = &question["providerMetadata"]["baton"];
    assert_eq!(owner["agentType"], "child_asker", "{question}");
    let call = question["toolCallId"].as_str().unwrap();
    assert!(
        chunks.iter().any(|c| c["type"] == "data-subagent-call"
            && c["id"] == format!("subagent-call-{call}")
            && c["data"] == *owner),
        "{chunks:?}"
    );
    assert!(
        chunks.iter().any(|c| c["type"] == "tool-approval-request"),
        "{chunks:?}"
    );
    assert_eq!(chunks.last().unwrap()["finishReason"], "tool-calls");

    let response = post(
        &harness,
        answering(chat, json!([output(call, json!({"answer": "one"}))])),
    )
    .await;
    assert_eq!(response.status(), 200);
    let (chunks, done) = frames(response).await;
    assert!(done);
    assert_eq!(
        chunks[2],
        json!({"type": "data-answers", "data": {"continuation": "awaiting_batch",
               "answers": [{"toolCallId": call, "status": "accepted"}]}}),
        "{chunks:?}"
    );
}
