//! `batond --threads`: by default a process runs its tasks on one thread (no tokio worker
//! thread at all), `--threads N` on a pool of N, and either runs a round of a person in the
//! loop to its end; a count of 0 is refused before anything starts.

use baton_client::{Client as _, HttpClient};
use baton_core::{
    chunk::{ChunkKind, StreamChunk},
    message::ToolOutcome,
};
use baton_tests::{
    procs::{Batond, BatondLauncher, Placement, placement_flags, workspace_binary},
    redis_url, temporal_address, unique,
};
use futures::StreamExt;
use serde_json::json;
use std::{path::PathBuf, time::Duration};

const AGENTS: &str = r#"
[[agent]]
name = "threads_ask"
max_steps = 3
[agent.model]
kind = "scripted"
turns = [
  { tool_calls = [{ name = "ask", arguments = {} }] },
  { text = "done" },
]
[[agent.client_tool]]
name = "ask"
description = "Asks the person."
input_schema = { type = "object" }
"#;

/// A launcher and the flags that place a `batond` on the test's Redis and Temporal, a key
/// prefix and task queue of its own, open to unauthenticated calls.
fn placed(name: &str) -> (BatondLauncher, Vec<String>) {
    let dir = std::env::temp_dir().join(unique(name));
    std::fs::create_dir_all(&dir).unwrap();
    let agents: PathBuf = dir.join("agents.toml");
    std::fs::write(&agents, AGENTS).unwrap();
    let mut flags = placement_flags(&Placement {
        redis_url: &redis_url(),
        temporal: &temporal_address(),
        prefix: &unique(name),
        task_queue: &unique(name),
        agents: &agents,
    });
    flags.push("--allow-unauthenticated".to_owned());
    let binary = workspace_binary("baton-worker", "batond").expect("batond builds");
    (BatondLauncher::new(binary, dir), flags)
}

/// Follows `session` after `after` to its next pause or end; that chunk.
async fn next_pause(client: &HttpClient, session: &str, after: u64) -> StreamChunk {
    let mut follow = client.follow(session, after);
    let read = async {
        while let Some(chunk) = follow.next().await {
            let chunk = chunk.expect("the follow reads");
            if matches!(
                chunk.kind,
                ChunkKind::Suspended { .. } | ChunkKind::End { .. }
            ) {
                return chunk;
            }
        }
        panic!("the stream of {session} closed before a pause")
    };
    tokio::time::timeout(baton_tests::WAIT_LIMIT, read)
        .await
        .expect("the session pauses in time")
}

/// A session asks, is answered and resumed, and ends.
async fn a_round_runs_to_its_end(process: &Batond) {
    let client = HttpClient::new(process.base_url());
    let session = client.start("threads_ask", "go").await.unwrap().session_id;
    let asked = next_pause(&client, &session, 0).await;
    let ChunkKind::Suspended { tool_call_ids, .. } = &asked.kind else {
        panic!("the session ended without asking: {asked:?}");
    };
    let answer = ToolOutcome::Result(json!({"answer": "yes"}));
    client
        .submit(&session, &tool_call_ids[0], &answer)
        .await
        .unwrap();
    client.resume(&session).await.unwrap();
    let ended = next_pause(&client, &session, asked.sequence).await;
    assert!(
        matches!(ended.kind, ChunkKind::End { .. }),
        "the session did not end: {ended:?}"
    );
}

/// The process's threads named as tokio names its pool's.
fn pool_threads(process: &Batond) -> usize {
    let pid = process.pid().expect("the process runs");
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "tokio-rt-worker")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_runs_on_one_thread_by_default_and_on_a_pool_of_threads_when_asked() {
    let (launcher, flags) = placed("threads-one");
    let one = launcher.dev("dev-one", &flags).await.unwrap();
    a_round_runs_to_its_end(&one).await;
    assert_eq!(pool_threads(&one), 0);

    let (launcher, mut flags) = placed("threads-pool");
    flags.extend(["--threads".to_owned(), "3".to_owned()]);
    let pool = launcher.dev("dev-pool", &flags).await.unwrap();
    a_round_runs_to_its_end(&pool).await;
    assert_eq!(pool_threads(&pool), 3);
}

#[tokio::test]
async fn no_threads_is_refused_before_anything_starts() {
    let binary = workspace_binary("baton-worker", "batond").expect("batond builds");
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new(binary)
            .args(["dev", "--threads", "0"])
            .env("BATON_REDIS_URL", "redis://127.0.0.1:1")
            .output(),
    )
    .await
    .expect("batond answers at once")
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--threads") && stderr.contains("'0'"),
        "{stderr}"
    );
}
