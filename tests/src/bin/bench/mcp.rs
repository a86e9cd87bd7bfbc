//! An MCP tool call's cost beside a native tool's: the same `add` (two integers) called as a
//! native server tool, as a tool of the test MCP server (`tests/mcp/tools_server.py`, the
//! official Python SDK) over stdio, and over streamable HTTP, each `BENCH_MCP_CALLS` times
//! (default 500) one after the other through `ServerTool::call`, as a worker's activity calls
//! it. The difference is what MCP adds to a step: the SDK's client, the transport and the
//! server's own handling.

use baton_core::{
    ServerTool,
    store::SessionAddress,
    tool::{ToolContext, tool},
};
use baton_mcp::McpServer;
use baton_tests::mcp_agents;
use serde_json::json;
use std::time::Instant;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// Per-call times (ms) of `calls` calls of `tool`.
async fn timed(tool: &dyn ServerTool, calls: usize) -> anyhow::Result<Vec<f64>> {
    let context = ToolContext::new(SessionAddress::root("bench"), "r1", "call_1");
    // One call first: a server's first answer includes its warm-up.
    tool.call(&context, json!({"a": 1, "b": 2}))
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let mut samples = Vec::with_capacity(calls);
    for i in 0..calls {
        let began = Instant::now();
        tool.call(&context, json!({"a": i, "b": 1}))
            .await
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        samples.push(began.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(samples)
}

pub async fn print_mcp() -> anyhow::Result<()> {
    let calls: usize = std::env::var("BENCH_MCP_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let native = tool("add", "Adds two integers.", |i: Add| async move {
        Ok::<_, String>(json!({"total": i.a + i.b}))
    });
    // No call log: the server writes nothing beside its answer.
    let python = mcp_agents::python().to_string_lossy().into_owned();
    let script = mcp_agents::script().to_string_lossy().into_owned();
    let stdio = baton_mcp::tools(McpServer::stdio("bench", &python, &[&script]).only(&["add"]))
        .await?
        .remove(0);
    let (mut server, url) = mcp_agents::http_server("bench-token", None).await?;
    let http = baton_mcp::tools(
        McpServer::http("bench", &url)
            .header("Authorization", "Bearer bench-token")
            .only(&["add"]),
    )
    .await?
    .remove(0);

    let (native_p50, native_p99, n) = super::summary(timed(&native, calls).await?);
    println!(
        "\n## An MCP tool call beside a native tool's ({n} calls each, one after the other)\n"
    );
    println!("| tool | p50 ms | p99 ms | p50 over native |");
    println!("|---|---:|---:|---:|");
    println!("| native server tool | {native_p50:.3} | {native_p99:.3} | |");
    for (name, tool) in [
        ("MCP over stdio", &stdio),
        ("MCP over streamable HTTP", &http),
    ] {
        let (p50, p99, _) = super::summary(timed(tool, calls).await?);
        println!(
            "| {name} | {p50:.3} | {p99:.3} | +{:.3} |",
            p50 - native_p50
        );
    }
    server.kill().await.ok();
    Ok(())
}
