//! docs/agents.md's first agent with tools of its own and no Rust, run as a new user would: the
//! example MCP server (`examples/mcp/notes_server.py`, the official Python SDK), the doc's TOML
//! saved as `notes.toml` and its two commands as written, "buy milk" typed at the prompt. The
//! `python3` the file names is the one with `mcp` installed (the venv's, first on `PATH`).

use crate::readme::{block_after, commands, run_as_written};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_docs_mcp_agent_runs_as_written_and_its_server_keeps_the_note() {
    let root = crate::openapi::workspace();
    let doc = std::fs::read_to_string(root.join("docs/agents.md")).unwrap();
    let toml = block_after(&doc, "Save this as `notes.toml`", "toml");
    let run = commands(&block_after(&doc, "From the repository's root", "sh"));
    assert_eq!(run.len(), 2, "{run:?}");
    // The repository's root as the doc runs from it: the example server, and the file.
    let dir = std::env::temp_dir().join(baton_tests::unique("mcp-doc"));
    std::fs::create_dir_all(dir.join("examples/mcp")).unwrap();
    std::fs::copy(
        root.join("examples/mcp/notes_server.py"),
        dir.join("examples/mcp/notes_server.py"),
    )
    .unwrap();
    std::fs::write(dir.join("notes.toml"), toml).unwrap();
    let venv_bin = baton_tests::mcp_agents::python()
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        venv_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let output = run_as_written(&dir, &run, &[("PATH", path)], b"buy milk\n").await;
    let notes = std::fs::read_to_string(dir.join("notes.json")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{printed}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        printed.contains(r#"Noted. Your notes: {"result":["buy milk"]}"#),
        "{printed}"
    );
    // The note is the server's: written by the process batond started, in its cwd.
    assert_eq!(notes, r#"["buy milk"]"#);
}

/// An MCP server that does not start stops `batond` at start, naming the declaration's line and
/// the reason, before it serves anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_start_stops_batond_with_its_line() {
    let dir = std::env::temp_dir().join(baton_tests::unique("mcp-bad"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "\n[[mcp_server]]\nname = \"gone\"\ncommand = \"/no/such/server\"\n",
    )
    .unwrap();
    let batond = baton_tests::procs::workspace_binary("baton-worker", "batond").unwrap();
    let output = tokio::process::Command::new(batond)
        .args(["dev", "--allow-unauthenticated", "--listen", "127.0.0.1:0"])
        .arg("--agents")
        .arg(&file)
        .env("BATON_REDIS_URL", baton_tests::redis_url())
        .env("BATON_TEMPORAL_ADDRESS", baton_tests::temporal_address())
        .output()
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    assert!(stderr.contains("MCP server gone"), "{stderr}");
    assert!(stderr.contains("/no/such/server"), "{stderr}");
}
