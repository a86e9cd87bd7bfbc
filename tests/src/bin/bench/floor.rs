//! Issue 40's floor: what the Temporal SDK alone costs a process for a workflow of a round's
//! shape. A child process set up as `batond dev` is (one thread, the SDK's worker and client
//! sharing it, eager starts, no gzip, mimalloc) starts bare workflows 20 at a time, each running
//! one empty local activity where a resumed run's workflow runs its step
//! (`bare::BareLocalWorkflow`); the parent meters its CPU and the dev server's. What `batond dev`
//! spends a round beyond this is Baton's own work (HTTP, Redis, the step), and Redis's CPU comes
//! on top of both.

use crate::{
    bare::{BareActivities, BareLocalWorkflow},
    procs::{CpuMeter, setting, temporal_pid},
};
use baton_tests::{temporal_settings, unique};
use baton_worker::connect_temporal;
use std::{
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};
use temporalio_client::WorkflowStartOptions;
use temporalio_sdk::{Runtime, Worker, WorkerOptions};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader},
    sync::Semaphore,
};

/// The environment variable that makes the benchmark binary the floor's child process.
const CHILD: &str = "BENCH_FLOOR_CHILD";
/// Workflows in flight at once: the 20 sessions of `rounds`.
const IN_FLIGHT: usize = 20;
/// Workflows run before the metered ones (connections, caches, the server's warm-up).
const WARM_UP: u64 = 300;

/// Whether this process is the floor's child (see [`child_main`]).
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// The child: warms up, says `warm`, waits for a line on its stdin, runs
/// `BENCH_FLOOR_WORKFLOWS` workflows, says `done <seconds>` and exits.
pub fn child_main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = connect_temporal(&temporal_settings()).await?;
        let core = Runtime::from_current_tokio(Default::default())?;
        let ran = Arc::new(Semaphore::new(0));
        let task_queue = unique("bench-floor");
        let options = WorkerOptions::new(task_queue.clone())
            .register_activities(BareActivities {
                marks: Arc::default(),
                ran: ran.clone(),
            })
            .register_workflow::<BareLocalWorkflow>()?
            .build();
        let mut worker = Worker::new(&core, client.clone(), options)?;
        let count = workflows();
        let driver = async {
            let run = |count: u64| {
                let (client, ran, task_queue) = (&client, &ran, &task_queue);
                async move {
                    let (mut started, mut finished) = (0, 0);
                    while finished < count {
                        while started < count && started - finished < IN_FLIGHT as u64 {
                            let options =
                                WorkflowStartOptions::new(task_queue.clone(), unique("floor"))
                                    .enable_eager_workflow_start(true)
                                    .build();
                            client
                                .start_workflow(BareLocalWorkflow::run, 0, options)
                                .await?;
                            started += 1;
                        }
                        ran.acquire().await?.forget();
                        finished += 1;
                    }
                    anyhow::Ok(())
                }
            };
            run(WARM_UP).await?;
            // The last workflows' completions land after their activities.
            let settle = Duration::from_millis(300);
            tokio::time::sleep(settle).await;
            println!("warm");
            let mut line = String::new();
            BufReader::new(tokio::io::stdin())
                .read_line(&mut line)
                .await?;
            let began = Instant::now();
            run(count).await?;
            let seconds = began.elapsed().as_secs_f64();
            // Metered: the CPU of those completions counts; the rate leaves the wait out.
            tokio::time::sleep(settle).await;
            println!("done {seconds}");
            anyhow::Ok(())
        };
        tokio::select! {
            outcome = worker.run() => {
                outcome?;
                anyhow::bail!("the floor's worker stopped")
            }
            outcome = driver => outcome,
        }
    })
}

/// One measurement of the floor.
pub struct Floor {
    /// Workflows started (and run) a second.
    pub per_second: f64,
    /// CPU ms a workflow of the child process.
    pub process_ms: f64,
    /// CPU ms a workflow of the Temporal dev server.
    pub temporal_ms: f64,
}

/// Runs the child with `count` metered workflows and returns its figures.
pub async fn measure(count: u64) -> anyhow::Result<Floor> {
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .env(CHILD, "1")
        .env("BENCH_FLOOR_WORKFLOWS", count.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id();
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        anyhow::bail!("the floor's child has no stdin or stdout");
    };
    let mut lines = BufReader::new(stdout).lines();
    let mut next = async || {
        lines
            .next_line()
            .await?
            .ok_or_else(|| anyhow::anyhow!("the floor's child ended early"))
    };
    anyhow::ensure!(next().await? == "warm", "the floor's child did not warm up");
    let meter = CpuMeter::start(&[("process", pid), ("temporal", temporal_pid())]);
    stdin.write_all(b"go\n").await?;
    let done = next().await?;
    let used = meter.used();
    let seconds: f64 = done
        .strip_prefix("done ")
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("the floor's child said {done:?}"))?;
    let _ = child.wait().await;
    let per = |name: &str| {
        used.iter()
            .find(|(n, _)| n == name)
            .map_or(f64::NAN, |(_, s)| s * 1000.0 / count as f64)
    };
    Ok(Floor {
        per_second: count as f64 / seconds,
        process_ms: per("process"),
        temporal_ms: per("temporal"),
    })
}

/// The number of metered workflows: `BENCH_FLOOR_WORKFLOWS`, default 3,000.
pub fn workflows() -> u64 {
    setting("BENCH_FLOOR_WORKFLOWS", 3000)
}

/// Measures the floor and prints it.
pub async fn print_floor() -> anyhow::Result<()> {
    let count = workflows();
    eprintln!("floor: {count} bare workflows of a round's shape, {IN_FLIGHT} at a time");
    let floor = measure(count).await?;
    println!("\n## Issue 40's floor: the Temporal SDK alone, a round's shape\n");
    println!(
        "A process set up as `batond dev` (one thread, eager starts, no gzip, mimalloc) starting {count} \
         workflows, {IN_FLIGHT} at a time, each running one empty local activity.\n"
    );
    println!("| workflows/s | CPU ms per workflow: the process | the dev server |");
    println!("|---:|---:|---:|");
    println!(
        "| {:.1} | {:.3} | {:.2} |",
        floor.per_second, floor.process_ms, floor.temporal_ms
    );
    Ok(())
}
