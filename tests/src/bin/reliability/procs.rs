//! The processes a scenario starts and hurts: Redis servers of its own, Baton server and worker
//! processes (this binary run again in a role), and a Temporal dev server of its own.

use anyhow::{Context, bail};
use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// A free TCP port on loopback (the listener is dropped; a race with another process is
/// unlikely on a test machine and would fail the start loudly).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Sends a signal by name (`STOP`, `CONT`) with the system's `kill`, so no `unsafe` is needed.
fn signal(pid: u32, name: &str) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()?;
    anyhow::ensure!(status.success(), "kill -{name} {pid} failed");
    Ok(())
}

/// The resident set size of a process in KiB, from `/proc`.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

pub fn log_file(dir: &Path, name: &str) -> anyhow::Result<std::fs::File> {
    std::fs::File::options()
        .create(true)
        .append(true)
        .open(dir.join(format!("{name}.log")))
        .with_context(|| format!("cannot open the log of {name}"))
}

/// SIGKILLs a child (if it runs) and reaps it.
pub fn kill_child(child: &mut Option<Child>) {
    if let Some(mut child) = child.take() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A `redis-server` of the campaign's own, on a port of its own, with its data in `dir`.
pub struct RedisServer {
    pub port: u16,
    dir: PathBuf,
    extra: Vec<String>,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts Redis with `extra` arguments (e.g. `--appendonly yes --appendfsync always`); without
    /// any it keeps nothing on disk, as the tests' Redis.
    pub async fn start(dir: &Path, extra: &[&str]) -> anyhow::Result<Self> {
        let port = free_port()?;
        let dir = dir.join(format!("redis-{port}"));
        std::fs::create_dir_all(&dir)?;
        let mut server = Self {
            port,
            dir,
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
            child: None,
        };
        server.spawn().await?;
        Ok(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        let mut command = Command::new("redis-server");
        command
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(&self.dir)
            .arg("--save")
            .arg("");
        if self.extra.is_empty() {
            command.arg("--appendonly").arg("no");
        }
        command
            .args(&self.extra)
            .stdout(log_file(&self.dir, "redis")?)
            .stderr(Stdio::null());
        self.child = Some(command.spawn().context("redis-server must be installed")?);
        wait_for_redis(&self.url(), Duration::from_secs(20)).await
    }

    /// SIGKILL: Redis loses what it had not written to its append-only file.
    pub fn kill(&mut self) {
        kill_child(&mut self.child);
    }

    /// Starts it again on the same port and data directory (it reloads its append-only file).
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        self.spawn().await
    }

    /// Freezes the process (SIGSTOP): connections stay open but nothing answers, as with a
    /// network partition.
    pub fn freeze(&self) -> anyhow::Result<()> {
        signal(self.pid().context("redis is not running")?, "STOP")
    }

    pub fn thaw(&self) -> anyhow::Result<()> {
        signal(self.pid().context("redis is not running")?, "CONT")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // RELIABILITY_KEEP_REDIS leaves the campaign's Redis servers running, to look into a
        // failed invariant (their ports are in the process logs' directory).
        if std::env::var_os("RELIABILITY_KEEP_REDIS").is_some() {
            if let Some(child) = self.child.take() {
                eprintln!(
                    "reliability: Redis kept on port {} (pid {})",
                    self.port,
                    child.id()
                );
            }
            return;
        }
        if let Some(pid) = self.pid() {
            let _ = signal(pid, "CONT");
        }
        kill_child(&mut self.child);
    }
}

pub async fn wait_for_redis(url: &str, limit: Duration) -> anyhow::Result<()> {
    let began = Instant::now();
    loop {
        let ping = async {
            let client = redis::Client::open(url)?;
            let mut connection = client.get_multiplexed_async_connection().await?;
            redis::cmd("PING")
                .query_async::<String>(&mut connection)
                .await
        };
        match tokio::time::timeout(Duration::from_secs(1), ping).await {
            Ok(Ok(_)) => return Ok(()),
            _ if began.elapsed() > limit => bail!("Redis at {url} did not come up"),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Where a Baton process finds its dependencies and what it serves.
#[derive(Debug, Clone)]
pub struct BatonConfig {
    pub redis_url: String,
    pub temporal_address: String,
    pub task_queue: String,
    pub prefix: String,
    /// Server only: resume a session on its batch's last answer.
    pub resume_on_submit: bool,
}

/// What a Baton process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Server,
    Worker,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Worker => "worker",
        }
    }
}

/// A Baton server or worker: this binary run again as `reliability role <role>`, built on the
/// same library entry points as `batond` but serving the campaign's agents.
pub struct BatonProcess {
    pub role: Role,
    /// The HTTP address of a server.
    pub port: u16,
    config: BatonConfig,
    executable: PathBuf,
    logs: PathBuf,
    /// Every log file this process (and its restarts) wrote.
    pub log_files: Vec<PathBuf>,
    child: Option<Child>,
}

impl BatonProcess {
    pub async fn start(
        executable: &Path,
        logs: &Path,
        role: Role,
        config: &BatonConfig,
    ) -> anyhow::Result<Self> {
        let mut process = Self {
            role,
            port: if role == Role::Server {
                free_port()?
            } else {
                0
            },
            config: config.clone(),
            executable: executable.to_owned(),
            logs: logs.to_owned(),
            log_files: Vec::new(),
            child: None,
        };
        process.spawn().await?;
        Ok(process)
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!(
            "{}-{}",
            self.role.as_str(),
            STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        self.log_files.push(self.logs.join(format!("{name}.log")));
        let child = Command::new(&self.executable)
            .arg("role")
            .arg(self.role.as_str())
            .env(crate::roles::REDIS_URL, &self.config.redis_url)
            .env(
                crate::roles::TEMPORAL_ADDRESS,
                &self.config.temporal_address,
            )
            .env(crate::roles::TASK_QUEUE, &self.config.task_queue)
            .env(crate::roles::KEY_PREFIX, &self.config.prefix)
            .env(crate::roles::LISTEN_PORT, self.port.to_string())
            .env(
                crate::roles::RESUME_ON_SUBMIT,
                if self.config.resume_on_submit {
                    "1"
                } else {
                    ""
                },
            )
            .stdout(log_file(&self.logs, &name)?)
            .stderr(log_file(&self.logs, &name)?)
            .spawn()
            .context("cannot run this binary again as a Baton process")?;
        self.child = Some(child);
        if self.role == Role::Server {
            self.wait_healthy(Duration::from_secs(30)).await?;
        }
        Ok(())
    }

    async fn wait_healthy(&mut self, limit: Duration) -> anyhow::Result<()> {
        let began = Instant::now();
        let http = reqwest::Client::new();
        let url = format!("{}/healthz", self.base_url());
        loop {
            if let Ok(response) = http.get(&url).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                bail!("the {} exited at start: {status}", self.role.as_str());
            }
            if began.elapsed() > limit {
                bail!("the {} did not come up", self.role.as_str());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL, at whatever moment the process is in.
    pub fn kill(&mut self) {
        kill_child(&mut self.child);
    }

    /// A fresh process in the same role and on the same port.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        self.spawn().await
    }
}

impl Drop for BatonProcess {
    fn drop(&mut self) {
        kill_child(&mut self.child);
    }
}
