//! Test agents whose tools are an MCP server's (`tests/mcp/tools_server.py`, the official
//! Python SDK), for the tests and the test worker process: built once the server's tools are
//! listed.

use baton_core::{Agent, AgentRegistry, scripted::ScriptedModel};
use baton_mcp::McpServer;
use serde_json::json;
use std::path::{Path, PathBuf};

/// The test worker serves [`mcp_registry`] when this names the servers' call log.
pub const MCP_LOG_ENV: &str = "BATON_TEST_MCP_LOG";

/// The Python with `mcp` installed: `BATON_TEST_PYTHON` (scripts/services.sh exports it), else
/// the services' venv.
pub fn python() -> PathBuf {
    std::env::var_os("BATON_TEST_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_default();
            PathBuf::from(home).join(".cache/baton/venv/bin/python")
        })
}

/// The test server's script, `tests/mcp/tools_server.py`.
pub fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp/tools_server.py")
}

/// The test server over stdio, appending each call to `log`.
pub fn test_server(log: &Path) -> McpServer {
    McpServer::stdio(
        "test-tools",
        &python().to_string_lossy(),
        &[&script().to_string_lossy()],
    )
    .env("BATON_MCP_LOG", &log.to_string_lossy())
}

/// An agent named `name` whose model calls the test server's `confirm_first` (which elicits
/// before it acts, a person given at most `window`) with `{"action": "deploy"}`, then answers
/// `done: <its result>`. The question is asked while the call is held (`hold_questions`).
pub async fn confirm_agent(
    name: &str,
    log: &Path,
    window: std::time::Duration,
) -> baton_core::Agent {
    confirm_agent_on(name, test_server(log).hold_questions(), window).await
}

/// Like [`confirm_agent`], the run suspending on the question (the server's `input_required`
/// result, MCP 2026-07-28) instead of holding the call.
pub async fn suspending_confirm_agent(
    name: &str,
    log: &Path,
    window: std::time::Duration,
) -> baton_core::Agent {
    confirm_agent_on(name, test_server(log), window).await
}

/// An agent like [`confirm_agent`] whose `confirm_first` is `server`'s (any transport; its questions as
/// the server's declaration says).
pub async fn confirm_agent_on(
    name: &str,
    server: McpServer,
    window: std::time::Duration,
) -> baton_core::Agent {
    let server = server
        .only(&["confirm_first"])
        .timeout(std::time::Duration::from_secs(20))
        .question_timeout(window);
    let tools = baton_mcp::tools(server)
        .await
        .expect("the test server lists its tools");
    let model = baton_core::scripted::ScriptedModel::default()
        .call("confirm_first", serde_json::json!({"action": "deploy"}))
        .answer("done: {{result:confirm_first}}");
    let mut builder = baton_core::Agent::builder(name).model(model);
    for tool in tools {
        builder = builder.tool(tool);
    }
    builder.build().expect("the agent builds")
}

/// `mcp_tree_root`, whose model calls the sub-agent `child` (one of [`confirm_agent`]) to
/// deploy, then answers `root: <its result>`.
pub fn asking_tree_root(child: &str) -> baton_core::Agent {
    let call = format!("subagent__{child}");
    baton_core::Agent::builder("mcp_tree_root")
        .model(
            baton_core::scripted::ScriptedModel::default()
                .call(&call, serde_json::json!({"message": "deploy"}))
                .answer(&format!("root: {{{{result:{call}}}}}")),
        )
        .sub_agent(child, "Deploys after asking.")
        .build()
        .expect("the agent builds")
}

/// The test server over streamable HTTP on a free loopback port, each request needing
/// `Bearer <token>` (its calls appended to `log` when given), once it accepts connections: the
/// process (killed on drop) and its endpoint's URL.
pub async fn http_server(
    token: &str,
    log: Option<&Path>,
) -> anyhow::Result<(tokio::process::Child, String)> {
    let port = crate::procs::free_port()?;
    let mut command = tokio::process::Command::new(python());
    command
        .arg(script())
        .args(["http", &port.to_string(), token])
        .kill_on_drop(true);
    if let Some(log) = log {
        command.env("BATON_MCP_LOG", log);
    }
    let child = command.spawn()?;
    let started = std::time::Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        anyhow::ensure!(
            started.elapsed() < crate::WAIT_LIMIT,
            "the MCP HTTP server did not start"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok((child, format!("http://127.0.0.1:{port}/mcp")))
}

/// `mcp_writer`: step 1 calls the server's `slow_write` (at most once: not annotated) for
/// `seconds`, step 2 answers with its result.
pub async fn mcp_writer(log: &Path, seconds: u64) -> anyhow::Result<Agent> {
    let tools = baton_mcp::tools(test_server(log).only(&["slow_write"])).await?;
    let model = ScriptedModel::default()
        .call("slow_write", json!({"seconds": seconds}))
        .answer("wrote: {{result:slow_write}}");
    let mut builder = Agent::builder("mcp_writer").model(model);
    for tool in tools {
        builder = builder.tool(tool);
    }
    Ok(builder.build()?)
}

/// The agents of the MCP tests, their server logging to `log`.
pub async fn mcp_registry(log: &Path) -> anyhow::Result<AgentRegistry> {
    Ok(AgentRegistry::new([mcp_writer(log, 30).await?])?)
}

/// A fresh file for the test server's call log: its path, and the lines read from it.
pub fn call_log() -> (PathBuf, impl Fn() -> Vec<String>) {
    let path = std::env::temp_dir().join(format!("baton-mcp-{}.log", uuid::Uuid::new_v4()));
    let read = path.clone();
    (path, move || {
        std::fs::read_to_string(&read)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    })
}

/// Like [`call_log`], reading how many calls it holds.
pub fn counted_call_log() -> (PathBuf, impl Fn() -> usize) {
    let (path, lines) = call_log();
    (path, move || lines().len())
}

/// The outcome of the first tool result in `messages` (the test fails without one).
pub fn first_tool_outcome(messages: &[baton_core::Message]) -> baton_core::message::ToolOutcome {
    messages
        .iter()
        .find_map(|m| match m {
            baton_core::Message::Tool(result) => Some(result.outcome.clone()),
            _ => None,
        })
        .expect("a tool result")
}

/// Asserts that the tree of `session` (an [`asking_tree_root`]) completed with its child's
/// `confirm_first` declined, the tool run once (`calls`, its log's count).
pub async fn assert_tree_ended_declined(
    harness: &crate::Harness,
    session: &str,
    calls: impl Fn() -> usize,
) {
    use baton_client::Client as _;
    let state = harness.client.status(session).await.unwrap();
    assert_eq!(
        state.status,
        baton_core::store::Status::Completed,
        "{state:?}"
    );
    assert_eq!(
        state.output.as_deref(),
        Some(r#"root: done: {"result":"decline: deploy"}"#),
        "{state:?}"
    );
    assert_eq!(calls(), 1, "the tool ran once");
}

/// Runs `baton run --answer` against a server of `agent` (one of [`confirm_agent`]'s, its tool
/// logging to the file `calls` counts), typing `true`, and asserts that it asked
/// `confirm_first`'s question once, the tool saw the answer and ran once.
pub async fn assert_answered_at_the_terminal(agent: Agent, calls: impl Fn() -> usize) {
    let name = agent.name().to_owned();
    let harness = crate::Harness::start(AgentRegistry::new([agent]).unwrap()).await;
    // The question's one field, a boolean, read as its schema says.
    let output =
        crate::procs::baton_run_answering(&harness.address.to_string(), &name, b"true\n").await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("confirm_first asks:"), "{stderr}");
    assert_eq!(stderr.matches("May I deploy?").count(), 1, "{stderr}");
    assert!(
        stdout.contains("accept: deploy ok=True"),
        "the tool saw the answer: {stdout}"
    );
    assert_eq!(calls(), 1, "the tool ran once");
}

/// Asserts that `confirm_first`'s call in `session` (a root) answered the person's accept of
/// `{"ok": true}`, the tool run once (`calls`, its log's count).
pub async fn assert_the_tool_saw_the_accept(
    harness: &crate::Harness,
    session: &str,
    calls: impl Fn() -> usize,
) {
    let messages = harness.messages(session).await;
    assert_eq!(
        first_tool_outcome(&messages),
        baton_core::message::ToolOutcome::Result(json!({"result": "accept: deploy ok=True"}))
    );
    assert_eq!(calls(), 1, "the tool ran once");
}
