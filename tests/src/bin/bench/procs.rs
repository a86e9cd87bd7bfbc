//! The processes of the scale sections (`soak`, `rounds`, `million`): a Redis of the benchmark's
//! own ([`own_redis`]: a free port and a directory under `/tmp`, so the tests' Redis on 6379 is
//! never filled or restarted), `batond` servers and workers as real processes, and the
//! processes whose CPU a section reads from `/proc`.

use baton_tests::procs::BatondLauncher;
pub use baton_tests::procs::{Batond, RedisServer, cpu_seconds, rss_kib, wait_for_redis};
use std::path::{Path, PathBuf};

/// Where this run's process logs and Redis data go: `/tmp/baton-bench-<pid>`.
pub fn run_dir() -> PathBuf {
    std::env::temp_dir().join(format!("baton-bench-{}", std::process::id()))
}

/// The `batond` binary: `BENCH_BATOND`, else the one built beside this benchmark.
pub fn batond() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("BENCH_BATOND") {
        return Ok(path.into());
    }
    let exe = std::env::current_exe()?;
    let path = exe.with_file_name("batond");
    anyhow::ensure!(
        path.exists(),
        "no batond beside {}: build it in the same profile (cargo build --release -p baton-worker) or set BENCH_BATOND",
        exe.display()
    );
    Ok(path)
}

/// Stops the section's Redis and removes its data (a million sessions' append-only file is
/// gigabytes); the process logs stay in [`run_dir`].
pub fn remove_redis(redis: RedisServer) {
    let data = run_dir().join(format!("redis-{}", redis.port));
    drop(redis);
    let _ = std::fs::remove_dir_all(data);
}

/// An unsigned setting from the environment, or `default`.
pub fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Starts the section's own Redis, with an append-only file (`appendfsync everysec`) when
/// asked.
pub async fn own_redis(append_only: bool) -> anyhow::Result<RedisServer> {
    let extra: &[&str] = if append_only {
        &["--appendonly", "yes", "--appendfsync", "everysec"]
    } else {
        &[]
    };
    RedisServer::start(&run_dir(), extra).await
}

/// The launcher of the section's `batond` processes: [`batond`], logs in [`run_dir`].
pub fn launcher() -> anyhow::Result<BatondLauncher> {
    Ok(BatondLauncher::new(batond()?, run_dir()))
}

/// The flags every `batond` of a section shares: where Redis and Temporal are, the key prefix
/// and task queue, the agents file, open auth and no submit rate limit.
pub fn common_flags(redis_url: &str, prefix: &str, task_queue: &str, agents: &Path) -> Vec<String> {
    let temporal = std::env::var("BATON_TEMPORAL_ADDRESS")
        .unwrap_or_else(|_| "http://127.0.0.1:7233".to_owned());
    let mut flags = baton_tests::procs::placement_flags(&baton_tests::procs::Placement {
        redis_url,
        temporal: &temporal,
        prefix,
        task_queue,
        agents,
    });
    flags.extend(
        [
            "--allow-unauthenticated",
            "--submits-per-minute",
            "0",
            "--subject-start-burst",
            "0",
            "--subject-submit-burst",
            "0",
            "--max-connections-per-peer",
            "0",
        ]
        .iter()
        .map(|s| (*s).to_owned()),
    );
    flags
}

/// Writes an agents file into the run's directory and returns its path.
pub fn agents_file(name: &str, toml: &str) -> anyhow::Result<PathBuf> {
    let dir = run_dir();
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, toml)?;
    Ok(path)
}

/// The Temporal dev server's process: `BENCH_TEMPORAL_PID`, else the process whose command line
/// is `temporal server start-dev …`.
pub fn temporal_pid() -> Option<u32> {
    if let Some(pid) = std::env::var("BENCH_TEMPORAL_PID")
        .ok()
        .and_then(|p| p.parse().ok())
    {
        return Some(pid);
    }
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let line = std::fs::read(entry.path().join("cmdline")).ok()?;
            let line = String::from_utf8_lossy(&line).replace('\0', " ");
            (line.contains("temporal") && line.contains("start-dev")).then_some(pid)
        })
}

/// CPU seconds of named processes between two readings.
pub struct CpuMeter {
    processes: Vec<(String, u32, f64)>,
}

impl CpuMeter {
    /// Reads each process's CPU time now; a process whose `/proc` entry cannot be read is left
    /// out (and named in the result as missing).
    pub fn start(processes: &[(&str, Option<u32>)]) -> Self {
        Self {
            processes: processes
                .iter()
                .filter_map(|(name, pid)| {
                    let pid = (*pid)?;
                    Some(((*name).to_owned(), pid, cpu_seconds(pid)?))
                })
                .collect(),
        }
    }

    /// The CPU seconds each process used since [`CpuMeter::start`].
    pub fn used(&self) -> Vec<(String, f64)> {
        self.processes
            .iter()
            .map(|(name, pid, began)| {
                (
                    name.clone(),
                    cpu_seconds(*pid).map_or(f64::NAN, |now| now - began),
                )
            })
            .collect()
    }
}
