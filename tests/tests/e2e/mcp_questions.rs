//! People in the loop inside MCP: a server's elicitation during a call (`confirm_first` of
//! `tests/mcp/tools_server.py`, the official Python SDK's `ctx.elicit`) is a question on the
//! stream, answered through the tree's root by its id while the run stays active; a bad answer
//! is refused with nothing stored, a second one is `already_completed`, and a question nobody
//! answers within its window ends the call with `question_timed_out`, never a second call.

use baton_client::Client as _;
use baton_core::{
    AgentRegistry, ChunkKind, ErrorCode, StreamChunk,
    message::ToolOutcome,
    search::{PersonCallKind, SessionSearch},
    session::Continuation,
    store::Status,
    submit::SubmitStatus,
};
use baton_tests::{
    Harness, WAIT_LIMIT, api_error,
    mcp_agents::{confirm_agent, counted_call_log, first_tool_outcome},
};
use futures::StreamExt as _;
use serde_json::{Value, json};
use std::time::Duration;

/// Follows `session_id`'s stream until its first question: the chunks up to it.
async fn until_question(harness: &Harness, session_id: &str) -> Vec<StreamChunk> {
    let mut follow = harness.client.follow(session_id, 0);
    let mut chunks = Vec::new();
    let collect = async {
        while let Some(chunk) = follow.next().await {
            let chunk = chunk.unwrap();
            let asked = matches!(chunk.kind, ChunkKind::Question { .. });
            chunks.push(chunk);
            if asked {
                return;
            }
        }
        panic!("the stream ended without a question");
    };
    tokio::time::timeout(WAIT_LIMIT, collect)
        .await
        .expect("a question in time");
    chunks
}

fn question_of(chunk: &StreamChunk) -> (String, String, Value) {
    let ChunkKind::Question {
        question_id,
        message,
        schema,
        tool_name,
        ..
    } = &chunk.kind
    else {
        panic!("{chunk:?}");
    };
    assert_eq!(tool_name, "confirm_first");
    (question_id.clone(), message.clone(), schema.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_is_a_question_answered_through_the_root_while_the_run_stays_active() {
    let (log, calls) = counted_call_log();
    let agent = confirm_agent("mcp_asker", &log, Duration::from_secs(60)).await;
    let harness = Harness::start(AgentRegistry::new([agent]).unwrap()).await;
    let started = harness.client.start("mcp_asker", "go").await.unwrap();
    let session = &started.session_id;
    let chunks = until_question(&harness, session).await;
    let (question_id, message, schema) = question_of(chunks.last().unwrap());
    assert_eq!(message, "May I deploy?");
    assert_eq!(schema["properties"]["ok"]["type"], "boolean", "{schema}");
    let status = harness.client.status(session).await.unwrap();
    assert_eq!(status.status, Status::Active);
    // Where a person looks for calls (`/status`, the root's `/pending`, the inbox), the open
    // question is listed as a client call of its own, rendered as a form of its schema.
    let [listed] = &status.pending[..] else {
        panic!("one call waits on a person: {:?}", status.pending)
    };
    assert_eq!(listed.tool_call_id, question_id);
    assert_eq!(listed.tool_name, "question");
    assert_eq!(listed.kind, PersonCallKind::ClientTool);
    assert_eq!(listed.input["message"], "May I deploy?");
    assert_eq!(listed.input["tool"], "confirm_first");
    let render = listed.render.clone().unwrap();
    assert_eq!(render["kind"], "elicitation");
    assert_eq!(render["outputSchema"], schema);
    let of_root = SessionSearch {
        root: Some(session.clone()),
        ..SessionSearch::default()
    };
    let pending = harness.client.pending(&of_root).await.unwrap().calls;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call_id, question_id);
    let inbox = SessionSearch {
        awaiting_person: true,
        ..SessionSearch::default()
    };
    let listed_in_inbox = async {
        loop {
            let calls = harness.client.pending(&inbox).await.unwrap().calls;
            if calls.iter().any(|call| call.tool_call_id == question_id) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, listed_in_inbox)
        .await
        .expect("the inbox lists the question in time");

    // An answer that does not match the schema is refused, nothing stored.
    let bad = ToolOutcome::Result(json!({"ok": "yes"}));
    let refused = harness
        .client
        .submit(session, &question_id, &bad)
        .await
        .unwrap_err();
    let refused = api_error(refused);
    assert_eq!(refused.code, ErrorCode::InvalidResult, "{refused:?}");

    let good = ToolOutcome::Result(json!({"ok": true}));
    let answer = harness
        .client
        .submit(session, &question_id, &good)
        .await
        .unwrap();
    assert_eq!(answer.status, SubmitStatus::Accepted);
    assert_eq!(
        answer.continuation,
        Continuation::NewRun {
            run_id: started.run_id.clone()
        }
    );
    let rest = harness
        .chunks_after_until_end(session, chunks.last().unwrap().sequence)
        .await;
    assert!(
        rest.iter().any(|c| matches!(&c.kind,
            ChunkKind::QuestionClosed { question_id: id, answer, .. }
                if *id == question_id && answer == "accept")),
        "{rest:?}"
    );
    let state = harness.client.status(session).await.unwrap();
    assert_eq!(state.status, Status::Completed, "{state:?}");
    assert!(state.pending.is_empty(), "{:?}", state.pending);
    baton_tests::mcp_agents::assert_the_tool_saw_the_accept(&harness, session, &calls).await;

    // The question is closed: another answer finds nothing open.
    let again = harness
        .client
        .submit(session, &question_id, &good)
        .await
        .unwrap_err();
    let again = api_error(again);
    assert_eq!(again.code, ErrorCode::UnknownToolCall, "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_nobody_answers_in_its_window_ends_the_call_with_a_typed_error() {
    let (log, calls) = counted_call_log();
    let agent = confirm_agent("mcp_unanswered", &log, Duration::from_secs(1)).await;
    let harness = Harness::start(AgentRegistry::new([agent]).unwrap()).await;
    let started = harness.client.start("mcp_unanswered", "go").await.unwrap();
    let session = &started.session_id;
    let chunks = until_question(&harness, session).await;
    let (question_id, _, _) = question_of(chunks.last().unwrap());
    let rest = harness
        .chunks_after_until_end(session, chunks.last().unwrap().sequence)
        .await;
    assert!(
        rest.iter().any(|c| matches!(&c.kind,
            ChunkKind::QuestionClosed { answer, .. } if answer == "timed_out")),
        "{rest:?}"
    );
    let messages = harness.messages(session).await;
    let ToolOutcome::Error(error) = first_tool_outcome(&messages) else {
        panic!("{messages:?}");
    };
    assert_eq!(error.code, "question_timed_out", "{error:?}");
    assert_eq!(calls(), 1, "never a second call");
    let late = harness
        .client
        .submit(
            session,
            &question_id,
            &ToolOutcome::Result(json!({"ok": true})),
        )
        .await
        .unwrap_err();
    let late = api_error(late);
    assert_eq!(late.code, ErrorCode::UnknownToolCall, "{late:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_question_is_answered_through_its_root_and_a_decline_reaches_the_server() {
    let (log, calls) = counted_call_log();
    let child = confirm_agent("mcp_child_asker", &log, Duration::from_secs(60)).await;
    let root = baton_tests::mcp_agents::asking_tree_root("mcp_child_asker");
    let harness = Harness::start(AgentRegistry::new([root, child]).unwrap()).await;
    let started = harness.client.start("mcp_tree_root", "go").await.unwrap();
    let session = &started.session_id;
    // The child's question is copied to the root's stream.
    let chunks = until_question(&harness, session).await;
    let asked = chunks.last().unwrap();
    assert_ne!(asked.header.agent_id, *session, "the child asks");
    let (question_id, _, _) = question_of(asked);
    let declined = ToolOutcome::Result(json!({"action": "decline"}));
    let answer = harness
        .client
        .submit(session, &question_id, &declined)
        .await
        .unwrap();
    assert_eq!(answer.status, SubmitStatus::Accepted);
    harness
        .chunks_after_until_end(session, asked.sequence)
        .await;
    baton_tests::mcp_agents::assert_tree_ended_declined(&harness, session, calls).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baton_run_answers_an_mcp_servers_question_from_standard_input() {
    let (log, calls) = counted_call_log();
    let agent = confirm_agent("mcp_cli_asker", &log, Duration::from_secs(60)).await;
    baton_tests::mcp_agents::assert_answered_at_the_terminal(agent, calls).await;
}
