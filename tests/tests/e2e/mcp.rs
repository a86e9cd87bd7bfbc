//! Tools from an MCP server written with the official Python SDK (PyPI `mcp`,
//! `tests/mcp/tools_server.py`), over stdio: listed at start with their schemas and
//! annotations, called from a run like native tools (a structured result checked against its
//! output schema, an error result as the model's tool error), a destructive one asking a person
//! first (a denial never reaches the server), a server killed mid-call started again, and bad
//! declarations refused at load with a typed error.

use baton_client::Client as _;
use baton_core::{
    Agent, AgentRegistry, Message, message::ToolOutcome, scripted::ScriptedModel,
    session::ApprovalDecision, store::Status, tool::ServerTool,
};
use baton_mcp::{McpError, McpServer, McpTool};
use baton_tests::{Harness, WAIT_LIMIT, mcp_agents::call_log};
use serde_json::json;
use std::time::Duration;

/// The test server, logging its calls to `log`.
fn server(log: &std::path::Path) -> McpServer {
    baton_tests::mcp_agents::test_server(log).timeout(Duration::from_secs(20))
}

/// The context of a tool call made outside a run (a test calling the tool itself).
fn context() -> baton_core::tool::ToolContext {
    baton_core::tool::ToolContext::new(baton_core::store::SessionAddress::root("s"), "r1", "call_1")
}

/// An agent of the server's tools whose model calls `calls` in turn, then answers `answer`.
fn agent(
    name: &str,
    tools: Vec<McpTool>,
    calls: &[(&str, serde_json::Value)],
    answer: &str,
) -> Agent {
    let mut model = ScriptedModel::default();
    for (tool, input) in calls {
        model = model.call(tool, input.clone());
    }
    let mut builder = Agent::builder(name).model(model.answer(answer));
    for tool in tools {
        builder = builder.tool(tool);
    }
    builder.build().unwrap()
}

/// The outcomes of the log's `tool` messages.
fn outcomes(messages: &[Message]) -> Vec<ToolOutcome> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(result) => Some(result.outcome.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_with_their_schemas_and_annotations() {
    let (log, _) = call_log();
    let tools = baton_mcp::tools(server(&log)).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    assert_eq!(
        names,
        [
            "add",
            "delete_file",
            "refuse",
            "slow",
            "slow_write",
            "confirm_first",
            "grow"
        ]
    );
    let by_name = |name: &str| tools.iter().find(|t| t.spec().name == name).unwrap();
    let add = by_name("add");
    assert_eq!(add.spec().description, "Adds two integers.");
    assert_eq!(add.spec().input_schema["required"], json!(["a", "b"]));
    // Read-only: no approval, and safe to run again.
    assert!(!add.requires_approval() && !add.at_most_once());
    // Annotated destructive: a person approves each call, and it runs at most once.
    let delete = by_name("delete_file");
    assert!(delete.requires_approval() && delete.at_most_once());
    // Not annotated: no approval, at most once.
    let refuse = by_name("refuse");
    assert!(!refuse.requires_approval() && refuse.at_most_once());

    // Selected, renamed and overridden by the declaration.
    let chosen = server(&log)
        .only(&["add", "delete_file"])
        .rename("add", "sum")
        .approval("delete_file", false);
    let tools = baton_mcp::tools(chosen).await.unwrap();
    let names: Vec<(&str, &str)> = tools
        .iter()
        .map(|t| (t.spec().name.as_str(), t.remote_name()))
        .collect();
    assert_eq!(names, [("sum", "add"), ("delete_file", "delete_file")]);
    assert!(tools.iter().all(|t| !t.requires_approval()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_declarations_and_a_server_that_does_not_start_are_typed_errors_at_load() {
    let (log, _) = call_log();
    let missing = McpServer::stdio("nowhere", "/no/such/mcp-server", &[]);
    let error = baton_mcp::tools(missing).await.unwrap_err();
    assert!(
        matches!(&error, McpError::Connect { server, .. } if server == "nowhere"),
        "{error}"
    );
    assert!(error.to_string().contains("/no/such/mcp-server"), "{error}");

    let unknown = baton_mcp::tools(server(&log).only(&["add", "multiply"]))
        .await
        .unwrap_err();
    assert!(
        matches!(&unknown, McpError::UnknownTool { tool, .. } if tool == "multiply"),
        "{unknown}"
    );
    assert!(
        unknown.to_string().contains("add, delete_file"),
        "{unknown}"
    );

    let clash = baton_mcp::tools(server(&log).rename("slow", "add"))
        .await
        .unwrap_err();
    assert!(
        matches!(&clash, McpError::DuplicateName { name, .. } if name == "add"),
        "{clash}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_calls_mcp_tools_a_structured_result_and_an_error_result_reach_the_model() {
    let (log, calls) = call_log();
    let tools = baton_mcp::tools(server(&log)).await.unwrap();
    let agent = agent(
        "mcp_user",
        tools,
        &[
            ("add", json!({"a": 2, "b": 3})),
            ("refuse", json!({"reason": "not today"})),
        ],
        "sum {{result:add}}; refused {{result:refuse}}",
    );
    let harness = Harness::start(AgentRegistry::new([agent]).unwrap()).await;
    let started = harness.client.start("mcp_user", "go").await.unwrap();
    harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(state.status, Status::Completed, "{state:?}");
    let messages = harness.messages(&started.session_id).await;
    let outcomes = outcomes(&messages);
    assert_eq!(outcomes[0], ToolOutcome::Result(json!({"total": 5})));
    let ToolOutcome::Error(refused) = &outcomes[1] else {
        panic!("{outcomes:?}");
    };
    assert_eq!(refused.code, "tool_failed");
    assert!(
        refused.message.contains("refused: not today"),
        "{refused:?}"
    );
    let called: Vec<String> = calls()
        .iter()
        .map(|line| line.split(' ').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(called, ["add", "refuse"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_tool_asks_first_and_a_denied_call_never_reaches_the_server() {
    let (log, calls) = call_log();
    let tools = baton_mcp::tools(server(&log)).await.unwrap();
    let agent = agent(
        "mcp_deleter",
        tools,
        &[("delete_file", json!({"path": "/tmp/x"}))],
        "delete: {{result:delete_file}}",
    );
    let harness = Harness::start(AgentRegistry::new([agent]).unwrap()).await;
    let started = harness.client.start("mcp_deleter", "go").await.unwrap();
    let id = &started.session_id;
    harness.chunks_until_suspended(id).await;
    let waiting = harness.client.status(id).await.unwrap();
    let call = &waiting.pending[0];
    assert_eq!(call.tool_name, "delete_file");
    let deny = ApprovalDecision {
        approved: false,
        reason: Some("keep it".into()),
        arguments: None,
    };
    harness
        .client
        .submit_approval(
            id,
            &call.tool_call_id,
            call.approval_id.as_deref().unwrap(),
            &deny,
        )
        .await
        .unwrap();
    let before = harness.client.status(id).await.unwrap().last_sequence;
    harness.client.resume(id).await.unwrap();
    harness.chunks_after_until_end(id, before).await;
    let outcomes = outcomes(&harness.messages(id).await);
    assert!(
        matches!(&outcomes[0], ToolOutcome::Error(e) if e.code == "tool_denied"),
        "{outcomes:?}"
    );
    assert!(calls().is_empty(), "{:?}", calls());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_is_started_again_and_a_safe_call_is_tried_once_more() {
    let (log, calls) = call_log();
    let tools = baton_mcp::tools(server(&log).only(&["slow"]))
        .await
        .unwrap();
    let slow = tools.into_iter().next().unwrap();
    let context = context();
    let call = tokio::spawn(async move {
        let answer = slow.call(&context, json!({"seconds": 1.5})).await;
        (slow, answer)
    });
    // Killed as it runs the call: the call is tried once more on a new server process.
    let first_pid = loop {
        if let Some(line) = calls().first() {
            break line.split(' ').nth(1).unwrap().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    std::process::Command::new("kill")
        .args(["-9", &first_pid])
        .status()
        .unwrap();
    let (_slow, answer) = call.await.unwrap();
    // A plain return is wrapped by the Python SDK as its structured `{result}`.
    assert_eq!(answer.unwrap(), json!({"result": "slept 1.5"}));
    let pids: Vec<String> = calls()
        .iter()
        .map(|line| line.split(' ').nth(1).unwrap_or_default().to_owned())
        .collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert_ne!(
        pids[0], pids[1],
        "a new server process ran the second attempt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_is_reached_with_its_bearer_and_refused_without() {
    let (log, calls) = call_log();
    // The token is the worker's $HOME, so `bearer_from_env("HOME")` finds it set.
    let token = std::env::var("HOME").unwrap();
    let (_server, url) = baton_tests::mcp_agents::http_server(&token, Some(&log))
        .await
        .unwrap();

    let tools = baton_mcp::tools(McpServer::http("http-tools", &url).bearer_from_env("HOME"))
        .await
        .unwrap();
    let add = tools.iter().find(|t| t.spec().name == "add").unwrap();
    let context = context();
    let sum = add.call(&context, json!({"a": 20, "b": 22})).await.unwrap();
    assert_eq!(sum, json!({"total": 42}));
    assert_eq!(calls().len(), 1);
    // Headers are sent as declared: the same token as a header reaches it too.
    let by_header =
        McpServer::http("http-tools", &url).header("Authorization", &format!("Bearer {token}"));
    assert_eq!(baton_mcp::tools(by_header).await.unwrap().len(), 7);

    let wrong = baton_mcp::tools(
        McpServer::http("http-tools", &url).header("Authorization", "Bearer nope"),
    )
    .await
    .unwrap_err();
    assert!(matches!(wrong, McpError::Connect { .. }), "{wrong}");
    let unset = McpServer::http("http-tools", &url).bearer_from_env("BATON_NO_SUCH_VARIABLE");
    let unset = baton_mcp::tools(unset).await.unwrap_err();
    assert!(
        unset.to_string().contains("BATON_NO_SUCH_VARIABLE"),
        "{unset}"
    );
}

/// A call past the declaration's timeout is the model's tool error, naming the wait; the
/// server, still alive, answers the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_timeout_is_a_tool_error_and_the_next_call_is_answered() {
    let (log, _) = call_log();
    let tools = baton_mcp::tools(
        server(&log)
            .only(&["slow", "add"])
            .timeout(Duration::from_millis(700)),
    )
    .await
    .unwrap();
    let context = context();
    let slow = tools.iter().find(|t| t.spec().name == "slow").unwrap();
    let late = slow
        .call(&context, json!({"seconds": 3}))
        .await
        .unwrap_err();
    assert_eq!(late.code, "tool_failed");
    assert!(
        late.message.contains("did not answer within 0.7 s"),
        "{late:?}"
    );
    let add = tools.iter().find(|t| t.spec().name == "add").unwrap();
    let sum = add.call(&context, json!({"a": 1, "b": 1})).await.unwrap();
    assert_eq!(sum, json!({"total": 2}));
}

/// A tool that must run at most once, its server killed mid-call or silent past the timeout:
/// the call is not sent again, and the model is told the outcome is not known.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_most_once_call_lost_or_late_is_an_unknown_outcome_never_a_second_call() {
    let (log, calls) = call_log();
    let tools = baton_mcp::tools(
        server(&log)
            .only(&["slow_write"])
            .timeout(Duration::from_secs(4)),
    )
    .await
    .unwrap();
    let write = tools.into_iter().next().unwrap();
    assert!(write.at_most_once());
    let context = context();
    let call = tokio::spawn(async move {
        let answer = write.call(&context, json!({"seconds": 2})).await;
        (write, context, answer)
    });
    let pid = loop {
        if let Some(line) = calls().first() {
            break line.split(' ').nth(1).unwrap().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    let (write, context, lost) = call.await.unwrap();
    let lost = lost.unwrap_err();
    assert_eq!(lost.code, "tool_outcome_unknown", "{lost:?}");
    assert!(
        lost.message.contains("was lost during the call"),
        "{lost:?}"
    );
    assert_eq!(calls().len(), 1, "not sent again");

    // Late: past the 4 s timeout, on the server started again.
    let late = write
        .call(&context, json!({"seconds": 6}))
        .await
        .unwrap_err();
    assert_eq!(late.code, "tool_outcome_unknown", "{late:?}");
    assert!(
        late.message.contains("did not answer within 4 s"),
        "{late:?}"
    );
    assert_eq!(calls().len(), 2);
}

/// A worker killed while an MCP tool that must run at most once is being called (the call
/// reached the server): the worker that takes the activity over does not call it again, and the
/// model is told the outcome is unknown, as for a native at-most-once tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_mcp_call_does_not_call_the_tool_again() {
    use baton_tests::{WorkerProcess, mcp_agents};
    const TEST_WORKER: &str = env!("CARGO_BIN_EXE_baton-test-worker");
    let (log, calls) = call_log();
    let registry = mcp_agents::mcp_registry(&log).await.unwrap();
    let harness = Harness::server_only(registry).await;
    let log_text = log.to_string_lossy().into_owned();
    let env = [(mcp_agents::MCP_LOG_ENV, log_text.as_str())];
    let first = WorkerProcess::spawn_with_env(TEST_WORKER, &harness, false, &env);
    let started = harness.client.start("mcp_writer", "go").await.unwrap();
    // The call has reached the server: kill the worker (and with it its server process).
    let began = std::time::Instant::now();
    while calls().is_empty() {
        assert!(
            began.elapsed() < WAIT_LIMIT,
            "the call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(first);
    let _second = WorkerProcess::spawn_with_env(TEST_WORKER, &harness, false, &env);
    harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    assert_eq!(calls().len(), 1, "called again: {:?}", calls());
    let outcomes = outcomes(&harness.messages(&started.session_id).await);
    assert!(
        matches!(&outcomes[..], [ToolOutcome::Error(e)] if e.code == "tool_outcome_unknown"),
        "{outcomes:?}"
    );
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(
        state.output.as_deref(),
        Some("wrote: error tool_outcome_unknown")
    );
}

/// A server that asks the person mid-call (an MCP elicitation) is answered `decline` at once:
/// Baton does not yet route an elicitation to a person, so the server goes on without the
/// answer. Never a hang, and the call is sent once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_mid_call_is_declined_at_once_never_a_hang() {
    let (log, calls) = call_log();
    let tools = baton_mcp::tools(server(&log).only(&["confirm_first"]))
        .await
        .unwrap();
    let context = context();
    let began = std::time::Instant::now();
    let answer = tools[0]
        .call(&context, json!({"action": "deploy"}))
        .await
        .unwrap();
    assert!(began.elapsed() < Duration::from_secs(10), "it waited");
    assert_eq!(answer, json!({"result": "decline: deploy"}));
    assert_eq!(calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_that_does_not_match_the_listed_schema_never_reaches_the_server() {
    let (log, calls) = call_log();
    let tools = baton_mcp::tools(server(&log).only(&["add"])).await.unwrap();
    let add = &tools[0];
    let context = context();
    for wrong in [json!({"a": "two", "b": 3}), json!({"a": 2}), json!([2, 3])] {
        let refused = add.check_input(&wrong).unwrap_err();
        assert_eq!(refused.code, "invalid_tool_input", "{wrong}");
        let refused = add.call(&context, wrong.clone()).await.unwrap_err();
        assert_eq!(refused.code, "invalid_tool_input", "{wrong}");
    }
    assert!(calls().is_empty(), "{:?}", calls());
    add.check_input(&json!({"a": 2, "b": 3})).unwrap();
    let answer = add.call(&context, json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(answer, json!({"total": 5}));
    assert_eq!(calls().len(), 1);
}
