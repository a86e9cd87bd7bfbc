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
    let root = mcp_agents::asking_tree_root("mcp_child_asker");
    let harness = Harness::start(AgentRegistry::new([root, child]).unwrap()).await;
    for release in AI_RELEASES {
        let s = drive(&harness, release, "mcp_question").await;
        let question = &s["question"];
        assert_eq!(question["status"], "ready", "{s}");
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
        ready_with(&s, 2, r#"root: done: {"result":"accept: deploy ok=True"}"#);
    }
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        calls.lines().count(),
        AI_RELEASES.len(),
        "one call a chat: {calls}"
    );
}
