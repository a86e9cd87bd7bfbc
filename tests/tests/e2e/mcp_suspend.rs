//! People in the loop inside MCP, with nothing waiting: a server of protocol 2026-07-28 answers
//! a call that needs a person with an `input_required` result (`confirm_first` of
//! `tests/mcp/tools_server.py`, the official Python SDK's `Resolve(Elicit)`), the run suspends
//! on the call with the question as its pending entry and its workflow ends; the answer,
//! submitted through the tree's root like a client tool's and checked against the question's
//! schema, goes back to the server with the call on resume, which then runs once.

use baton_activities::io::RunOutcome;
use baton_client::Client as _;
use baton_core::{
    AgentRegistry, ChunkKind, ErrorCode, Message,
    message::ToolOutcome,
    search::{PersonCallKind, SessionSearch},
    store::Status,
    submit::SubmitStatus,
};
use baton_tests::{
    Harness, api_error,
    mcp_agents::{
        asking_tree_root, counted_call_log, first_tool_outcome, suspending_confirm_agent,
    },
};
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_required_result_suspends_the_run_and_the_answer_goes_on_with_the_call() {
    let (log, calls) = counted_call_log();
    let agent = suspending_confirm_agent("mcp_suspender", &log, Duration::from_secs(300)).await;
    let harness = Harness::start(AgentRegistry::new([agent]).unwrap()).await;
    let started = harness.suspended_run("mcp_suspender").await;
    let session = &started.session_id;
    // The run's workflow has ended: nothing waits in the worker, and the tool has not run.
    let state = harness.client.status(session).await.unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool, "{state:?}");
    assert_eq!(calls(), 0, "the tool's body runs once the person answered");
    // The call waits on a person as a client call would, showing the question and rendered as
    // a form of its schema, where a person looks: `/status`, the root's `/pending`, the inbox.
    let [listed] = &state.pending[..] else {
        panic!("one call waits: {:?}", state.pending)
    };
    // Listed as a held question is: a client call named `question` under a question's id.
    assert_eq!(listed.tool_name, "question");
    assert!(listed.tool_call_id.starts_with("bt_q"), "{listed:?}");
    assert_eq!(listed.kind, PersonCallKind::ClientTool);
    assert_eq!(listed.input["message"], "May I deploy?");
    assert_eq!(listed.input["tool"], "confirm_first");
    let render = listed.render.clone().expect("a render hint");
    assert_eq!(render["kind"], "elicitation");
    assert_eq!(
        render["outputSchema"]["properties"]["ok"]["type"], "boolean",
        "{render}"
    );
    let question_id = listed.tool_call_id.clone();
    let messages = harness.messages(session).await;
    let asking_call = messages
        .iter()
        .find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls.first().map(|c| c.id.clone()),
            _ => None,
        })
        .expect("the model's call");
    assert_eq!(listed.input["toolCallId"], asking_call.as_str());
    let of_root = SessionSearch {
        root: Some(session.clone()),
        ..SessionSearch::default()
    };
    let pending = harness.client.pending(&of_root).await.unwrap().calls;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call_id, question_id);
    // The stream asks it as a held question is asked (a `question` chunk), then suspends on it.
    let suspended = harness.chunks_until_suspended(session).await;
    let asked = suspended
        .iter()
        .position(|c| {
            matches!(&c.kind,
            ChunkKind::Question { question_id: id, tool_call_id, message, .. }
                if *id == question_id && *tool_call_id == asking_call && message == "May I deploy?")
        })
        .unwrap_or_else(|| panic!("a question chunk: {suspended:?}"));
    assert!(
        matches!(&suspended.last().unwrap().kind,
            ChunkKind::Suspended { tool_call_ids, .. } if *tool_call_ids == [question_id.clone()]),
        "{suspended:?}"
    );
    assert!(asked < suspended.len() - 1);
    let call_id = question_id;

    // An answer that does not match the question's schema is refused, nothing stored.
    let bad = ToolOutcome::Result(json!({"ok": "yes"}));
    let refused = harness
        .client
        .submit(session, &call_id, &bad)
        .await
        .unwrap_err();
    let refused = api_error(refused);
    assert_eq!(refused.code, ErrorCode::InvalidResult, "{refused:?}");
    assert!(
        harness
            .store
            .answers(&baton_core::store::SessionAddress::root(session))
            .await
            .unwrap()
            .is_empty(),
        "nothing stored"
    );

    let good = ToolOutcome::Result(json!({"ok": true}));
    let answered = harness
        .client
        .submit(session, &call_id, &good)
        .await
        .unwrap();
    assert_eq!(answered.status, SubmitStatus::Accepted);
    let outcome = harness.resume_to_end(session).await;
    assert!(
        matches!(outcome, RunOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let state = harness.client.status(session).await.unwrap();
    assert_eq!(state.status, Status::Completed, "{state:?}");
    baton_tests::mcp_agents::assert_the_tool_saw_the_accept(&harness, session, &calls).await;
    // A second answer finds the call drained.
    let again = harness
        .client
        .submit(session, &call_id, &good)
        .await
        .unwrap();
    assert_eq!(again.status, SubmitStatus::AlreadyCompleted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_suspended_question_is_answered_through_its_root_and_a_decline_reaches_the_server()
{
    let (log, calls) = counted_call_log();
    let child =
        suspending_confirm_agent("mcp_child_suspender", &log, Duration::from_secs(300)).await;
    let root = asking_tree_root("mcp_child_suspender");
    let harness = Harness::start(AgentRegistry::new([root, child]).unwrap()).await;
    let started = harness.suspended_run("mcp_tree_root").await;
    let session = &started.session_id;
    let of_root = SessionSearch {
        root: Some(session.clone()),
        ..SessionSearch::default()
    };
    let pending = harness.client.pending(&of_root).await.unwrap().calls;
    let [call] = &pending[..] else {
        panic!("the child's question waits: {pending:?}")
    };
    assert_eq!(call.tool_name, "question");
    assert_eq!(call.input["tool"], "confirm_first");
    assert_ne!(call.owner_session_id, *session, "the child asks");
    let declined = ToolOutcome::Result(json!({"action": "decline"}));
    let answered = harness
        .client
        .submit(session, &call.tool_call_id, &declined)
        .await
        .unwrap();
    assert_eq!(answered.status, SubmitStatus::Accepted);
    let before = harness.client.status(session).await.unwrap().last_sequence;
    harness.client.resume(session).await.unwrap();
    harness.chunks_after_until_end(session, before).await;
    baton_tests::mcp_agents::assert_tree_ended_declined(&harness, session, calls).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_question_nobody_answers_by_its_deadline_ends_the_call_with_a_typed_error() {
    let (log, calls) = counted_call_log();
    let agent = suspending_confirm_agent("mcp_lapsed", &log, Duration::from_secs(1)).await;
    let harness = Harness::start(AgentRegistry::new([agent]).unwrap()).await;
    let started = harness.suspended_run("mcp_lapsed").await;
    let session = &started.session_id;
    // The question's window is the call's deadline: past it the run resumes by itself.
    let rest = harness
        .chunks_until_end(session, baton_tests::WAIT_LIMIT)
        .await;
    assert!(
        rest.iter().any(|c| matches!(c.kind, ChunkKind::End { .. })),
        "{rest:?}"
    );
    let messages = harness.messages(session).await;
    let ToolOutcome::Error(error) = first_tool_outcome(&messages) else {
        panic!("{messages:?}");
    };
    assert_eq!(error.code, "question_timed_out", "{error:?}");
    assert_eq!(calls(), 0, "the tool never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baton_run_answers_a_suspended_question_from_standard_input_once_and_resumes() {
    let (log, calls) = counted_call_log();
    let agent = suspending_confirm_agent("mcp_cli_suspender", &log, Duration::from_secs(300)).await;
    baton_tests::mcp_agents::assert_answered_at_the_terminal(agent, calls).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_suspends_the_run_too_and_takes_the_answer_on_resume() {
    let (log, calls) = counted_call_log();
    let token = uuid::Uuid::new_v4().simple().to_string();
    let (_server, url) = baton_tests::mcp_agents::http_server(&token, Some(&log))
        .await
        .unwrap();
    let server = baton_mcp::McpServer::http("http-tools", &url)
        .header("Authorization", &format!("Bearer {token}"));
    let agent = baton_tests::mcp_agents::confirm_agent_on(
        "mcp_http_suspender",
        server,
        Duration::from_secs(300),
    )
    .await;
    let harness = Harness::start(AgentRegistry::new([agent]).unwrap()).await;
    let started = harness.suspended_run("mcp_http_suspender").await;
    let session = &started.session_id;
    let state = harness.client.status(session).await.unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool, "{state:?}");
    let [question] = &state.pending[..] else {
        panic!("{:?}", state.pending)
    };
    assert_eq!(question.tool_name, "question");
    assert_eq!(calls(), 0);
    let good = ToolOutcome::Result(json!({"ok": true}));
    harness
        .answer_and_finish(session, &question.tool_call_id, &good)
        .await;
    baton_tests::mcp_agents::assert_the_tool_saw_the_accept(&harness, session, &calls).await;
}
