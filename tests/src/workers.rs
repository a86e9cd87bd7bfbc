//! The test workers: a Temporal worker on a thread of the test process ([`WorkerThread`]), and a
//! `baton-test-worker` process that a test can SIGKILL ([`WorkerProcess`]).

use crate::{Harness, WAIT_LIMIT, agents, redis_url, temporal_settings, test_worker_settings};
use baton_core::{AgentRegistry, Store};
use baton_worker::{WorkerSettings, connect_temporal, run_worker};
use std::thread::JoinHandle;
use temporalio_client::Client;
use tokio_util::sync::CancellationToken;

/// A Temporal worker on a thread of its own (the worker future is not `Send`).
pub struct WorkerThread {
    shutdown: CancellationToken,
    thread: Option<JoinHandle<anyhow::Result<()>>>,
}

impl WorkerThread {
    pub fn spawn(task_queue: &str, prefix: &str, registry: AgentRegistry) -> Self {
        Self::spawn_with(test_worker_settings(task_queue), prefix, registry)
    }

    /// A worker with these settings (their task queue is the worker's).
    pub fn spawn_with(settings: WorkerSettings, prefix: &str, registry: AgentRegistry) -> Self {
        Self::spawn_on(None, settings, prefix, registry)
    }

    /// A worker on `client` (else a client of its own): a server that shares it starts its
    /// workflows eagerly on this worker, as `batond dev` does.
    pub fn spawn_on(
        client: Option<Client>,
        settings: WorkerSettings,
        prefix: &str,
        registry: AgentRegistry,
    ) -> Self {
        let shutdown = CancellationToken::new();
        let token = shutdown.clone();
        let prefix = prefix.to_owned();
        let thread = std::thread::spawn(move || {
            // A runtime of its own with worker threads, as `batond worker` has (its main is
            // multi-threaded): the worker future itself is not `Send`, its activities are.
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let store = Store::connect(&redis_url(), prefix).await?;
                let client = match client {
                    Some(client) => client,
                    None => connect_temporal(&temporal_settings()).await?,
                };
                run_worker(client, settings, store, registry, token).await
            })
        });
        Self {
            shutdown,
            thread: Some(thread),
        }
    }
}

impl Drop for WorkerThread {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(thread) = self.thread.take()
            && let Ok(Err(error)) = thread.join()
        {
            eprintln!("test worker ended with an error: {error:#}");
        }
    }
}

/// A `baton-test-worker` process serving [`agents::registry`] on a harness's task queue and key
/// prefix; killed with SIGKILL when dropped. Tests pass the binary's path
/// (`env!("CARGO_BIN_EXE_baton-test-worker")`).
pub struct WorkerProcess {
    child: std::process::Child,
    stdout: Option<std::io::BufReader<std::process::ChildStdout>>,
}

impl WorkerProcess {
    /// With `hold`, the worker's `hold` tool blocks forever.
    pub fn spawn(executable: &str, harness: &Harness, hold: bool) -> Self {
        Self::spawn_with_env(executable, harness, hold, &[])
    }

    /// As [`Self::spawn`], with these environment variables too.
    pub fn spawn_with_env(
        executable: &str,
        harness: &Harness,
        hold: bool,
        env: &[(&str, &str)],
    ) -> Self {
        let mut command = std::process::Command::new(executable);
        command.envs(env.iter().copied());
        command
            .env("BATON_TEST_TASK_QUEUE", &harness.task_queue)
            .env("BATON_TEST_KEY_PREFIX", &harness.prefix)
            .stdout(std::process::Stdio::piped());
        if hold {
            command.env(agents::HOLD_TOOL_ENV, "1");
        } else {
            command.env_remove(agents::HOLD_TOOL_ENV);
        }
        let mut child = command.spawn().expect("the test worker binary runs");
        let stdout = child.stdout.take().map(std::io::BufReader::new);
        Self { child, stdout }
    }

    /// Waits until this worker's `hold` tool holds, kills the worker (SIGKILL) and starts another
    /// one whose `hold` returns at once.
    pub async fn replace_when_holding(mut self, executable: &str, harness: &Harness) -> Self {
        assert!(
            tokio::time::timeout(WAIT_LIMIT, self.holding())
                .await
                .expect("the worker holds in time")
        );
        drop(self);
        Self::spawn(executable, harness, false)
    }

    /// Resolves `true` once the worker's `hold` tool (or another holding test part) holds.
    pub async fn holding(&mut self) -> bool {
        self.printed(agents::HOLDING_LINE).await
    }

    /// Resolves `true` once the worker prints `wanted` as a line of its stdout after the lines
    /// read so far, `false` if its stdout ends first. One wait at a time.
    pub async fn printed(&mut self, wanted: &'static str) -> bool {
        use std::io::BufRead;
        let mut stdout = self
            .stdout
            .take()
            .expect("one wait on the output at a time");
        let (stdout, seen) = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            loop {
                line.clear();
                match stdout.read_line(&mut line) {
                    Ok(0) | Err(_) => return (stdout, false),
                    Ok(_) if line.trim_end() == wanted => return (stdout, true),
                    Ok(_) => {}
                }
            }
        })
        .await
        .expect("the reading task does not panic");
        self.stdout = Some(stdout);
        seen
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
