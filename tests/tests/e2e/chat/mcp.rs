//! People in the loop inside MCP through the real `useChat` client: a tree child's MCP tool
//! asks a person mid-call (the test server's `confirm_first`, an elicitation); the question is a
//! `question` tool part in a step of its own, owned by the child, with an `elicitation` render
//! hint of the answer's schema, and `addToolOutput` answers it in one POST through the root
//! while the child's run waits, to the root's end.

use super::{AI_RELEASES, drive, has_part, ready_with};
use baton_core::AgentRegistry;
use baton_tests::{Harness, mcp_agents};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_mcp_elicitation_is_a_question_part_answered_with_one_post() {
    let log = std::env::temp_dir().join(format!("baton-mcp-chat-{}.log", uuid::Uuid::new_v4()));
    let child = mcp_agents::confirm_agent("mcp_child_asker", &log, Duration::from_secs(60)).await;
    question_chats(child, &log).await;
}

/// The same through a run that suspends on the question (the server's `input_required`, MCP
/// 2026-07-28): the same `question` part, answered with one POST, which resumes the tree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_suspended_mcp_question_is_the_same_question_part_answered_with_one_post() {
    let log = std::env::temp_dir().join(format!("baton-mcp-chat-{}.log", uuid::Uuid::new_v4()));
    let child =
        mcp_agents::suspending_confirm_agent("mcp_child_asker", &log, Duration::from_secs(300))
            .await;
    question_chats(child, &log).await;
}

/// Chats with a tree whose child is `child` (an `mcp_child_asker` calling the server that
/// logs to `log`) on every release, live and with a reload while the question is open (the
/// snapshot's part): each answered once, the tool called once a chat.
async fn question_chats(child: baton_core::Agent, log: &std::path::Path) {
    let root = mcp_agents::asking_tree_root("mcp_child_asker");
    let harness = Harness::start(AgentRegistry::new([root, child]).unwrap()).await;
    for scenario in ["mcp_question", "mcp_question_reload"] {
        for release in AI_RELEASES {
            let s = drive(&harness, release, scenario).await;
            assert_eq!(s["question"]["status"], "ready", "{s}");
            // The reloaded chat posts the answer only.
            the_question_part_answered_once(&s, if scenario == "mcp_question" { 2 } else { 1 });
        }
    }
    let calls = std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(
        calls.lines().count(),
        2 * AI_RELEASES.len(),
        "one call a chat: {calls}"
    );
}

/// The summary of a chat answering the child's question: a `question` part owned by the child,
/// its input and render hint, answered with one POST (`posts` in all) to the root's end.
fn the_question_part_answered_once(s: &serde_json::Value, posts: u64) {
    let question = &s["question"];
    assert!(has_part(question, "tool-question:input-available"), "{s}");
    assert_eq!(question["input"]["message"], "May I deploy?", "{s}");
    assert_eq!(question["input"]["tool"], "confirm_first", "{s}");
    assert_eq!(question["render"]["kind"], "elicitation", "{s}");
    assert_eq!(
        question["render"]["outputSchema"]["properties"]["ok"]["type"], "boolean",
        "{s}"
    );
    assert_eq!(question["owners"][0]["agentType"], "mcp_child_asker", "{s}");
    assert_eq!(s["answerPosts"], 1, "{s}");
    ready_with(
        s,
        posts,
        r#"root: done: {"result":"accept: deploy ok=True"}"#,
    );
}
