//! README's first agent, run as a new user would: its TOML saved as `greeter.toml`, and its two
//! commands, as the README writes them (beside the demo: their own port, task queue and key
//! prefix), with "Ada" typed at the prompt. A README edit that breaks the path breaks this test.

use baton_tests::procs::{kill_child, wait_healthy, workspace_binary};
use std::{
    io::Write,
    process::{Command, Stdio},
    time::Duration,
};

/// The fenced block of `lang` that comes first after `marker` in README.md.
pub(crate) fn block_after(readme: &str, marker: &str, lang: &str) -> String {
    let after = &readme[readme.find(marker).expect("the README has the marker")..];
    let fence = format!("```{lang}\n");
    let start = after.find(&fence).expect("a block follows the marker") + fence.len();
    let body = &after[start..];
    body[..body.find("```").expect("the block ends")].to_owned()
}

/// The block's commands: continuation lines joined, comments and a trailing `&` dropped, each
/// split into words (the README's commands quote nothing but single words).
pub(crate) fn commands(block: &str) -> Vec<Vec<String>> {
    let joined = block.replace("\\\n", " ");
    joined
        .lines()
        .map(|line| line.split(" #").next().unwrap_or_default().trim())
        .map(|line| line.trim_end_matches('&').trim())
        .filter(|line| !line.is_empty())
        .map(|line| {
            line.split_whitespace()
                .map(|word| word.trim_matches('"').to_owned())
                .collect()
        })
        .collect()
}

/// Runs a doc's two commands as written, in `dir`: the server (`batond …`, with `env` beside
/// the services' addresses) until it is healthy, then the client with `typed` at its prompt.
/// Answers the client's output; the server is killed.
pub(crate) async fn run_as_written(
    dir: &std::path::Path,
    run: &[Vec<String>],
    env: &[(&str, String)],
    typed: &[u8],
) -> std::process::Output {
    let binary = |word: &str| match word {
        "./target/debug/batond" => workspace_binary("baton-worker", "batond").unwrap(),
        "./target/debug/baton" => workspace_binary("baton-client", "baton").unwrap(),
        other => panic!("the doc runs {other}"),
    };
    let (server, client) = (&run[0], &run[1]);
    let listen = server
        .iter()
        .position(|word| word == "--listen")
        .map(|at| server[at + 1].clone())
        .expect("the server command names its --listen");
    let mut batond = Some(
        Command::new(binary(&server[0]))
            .args(&server[1..])
            .current_dir(dir)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("BATON_REDIS_URL", baton_tests::redis_url())
            .env("BATON_TEMPORAL_ADDRESS", baton_tests::temporal_address())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://{listen}");
    wait_healthy(
        &base,
        &mut batond,
        "the doc's batond",
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let mut baton = Command::new(binary(&client[0]))
        .args(&client[1..])
        .env_remove("BATON_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    baton.stdin.take().unwrap().write_all(typed).unwrap();
    let output = tokio::task::spawn_blocking(move || baton.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    kill_child(&mut batond);
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_first_agent_runs_as_written_beside_the_demo() {
    let root = crate::openapi::workspace();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let toml = block_after(&readme, "Save this as `greeter.toml`", "toml");
    let run = commands(&block_after(&readme, "beside the demo", "sh"));
    assert_eq!(run.len(), 2, "{run:?}");
    let dir = std::env::temp_dir().join(baton_tests::unique("readme"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("greeter.toml"), toml).unwrap();

    let output = run_as_written(&dir, &run, &[], b"Ada\n").await;
    let _ = std::fs::remove_dir_all(&dir);
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{printed}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(printed.contains("Hello Ada, it is"), "{printed}");
}
