//! Processes a test, a benchmark or a fault campaign starts besides the shared test services: a
//! `redis-server` of its own (its own port and directory), `batond` processes (servers,
//! workers, dev), a workspace binary built for the test, and what `/proc` says of a process.
//! Used by the `reliability` and `bench` binaries and the tests with real processes.

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

/// The clock ticks per second of `/proc/<pid>/stat`'s times.
fn ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(100.0)
}

/// The CPU seconds (user + system) a process has used, from `/proc/<pid>/stat`.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces) start at field 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((user + system) / ticks_per_second())
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

    /// The same Redis over its Unix socket (`unix://`), for processes on this machine.
    pub fn unix_url(&self) -> String {
        format!("unix://{}", self.dir.join("redis.sock").display())
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        self.launch()?;
        wait_for_redis(&self.url(), Duration::from_secs(20)).await
    }

    fn launch(&mut self) -> anyhow::Result<()> {
        let mut command = Command::new("redis-server");
        command
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(&self.dir)
            .arg("--save")
            .arg("")
            .arg("--unixsocket")
            .arg(self.dir.join("redis.sock"))
            .arg("--unixsocketperm")
            .arg("700");
        if self.extra.is_empty() {
            command.arg("--appendonly").arg("no");
        }
        command
            .args(&self.extra)
            .stdout(log_file(&self.dir, "redis")?)
            .stderr(Stdio::null());
        self.child = Some(command.spawn().context("redis-server must be installed")?);
        Ok(())
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

    /// Like [`Self::restart`], without waiting for it to answer: a caller times that itself.
    pub fn kill_and_launch(&mut self) -> anyhow::Result<()> {
        self.kill();
        self.launch()
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

/// Waits until the Baton server at `base_url` answers `/healthz`, failing early if `child` (the
/// process serving it, named `what`) exits first.
pub async fn wait_healthy(
    base_url: &str,
    child: &mut Option<Child>,
    what: &str,
    limit: Duration,
) -> anyhow::Result<()> {
    let began = Instant::now();
    let http = reqwest::Client::new();
    let url = format!("{base_url}/healthz");
    loop {
        if let Ok(response) = http.get(&url).send().await
            && response.status().is_success()
        {
            return Ok(());
        }
        if let Some(child) = child.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            bail!("the {what} exited at start: {status}");
        }
        if began.elapsed() > limit {
            bail!("the {what} did not come up");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A binary of the workspace, `<target>/<profile>/<name>` beside the running executable,
/// built first (once per process, by cargo, which does nothing when it is up to date): a test
/// of this package builds only this package's binaries, and a stale `batond` would test
/// yesterday's code. It is built together with this package (`-p baton-tests`), so cargo
/// unifies the dependencies' features as for the tests and rebuilds nothing of theirs.
pub fn workspace_binary(package: &str, name: &str) -> anyhow::Result<PathBuf> {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let exe = std::env::current_exe()?;
    let mut dir = exe.parent().context("the executable has a directory")?;
    // A test executable is in <target>/<profile>/deps, a binary in <target>/<profile>.
    if dir.ends_with("deps") {
        dir = dir.parent().context("deps has a parent")?;
    }
    let binary = dir.join(name);
    let mut built = BUILT
        .lock()
        .map_err(|_| anyhow::anyhow!("a build of {name} panicked"))?;
    if !built.iter().any(|done| done == name) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut command = Command::new(cargo);
        command.args(["build", "-p", "baton-tests", "-p", package, "--bin", name]);
        // Cargo gives a test the variables of its package (CARGO_PKG_NAME, CARGO_MANIFEST_DIR,
        // …); build scripts declare some of them as inputs (`rerun-if-env-changed`), so a
        // nested cargo that saw them would rebuild those crates (and, the next `cargo test`,
        // again without them).
        for (variable, _) in std::env::vars_os() {
            let Some(text) = variable.to_str() else {
                continue;
            };
            let set_for_the_test = [
                "CARGO_PKG_",
                "CARGO_MANIFEST_",
                "CARGO_CRATE_",
                "CARGO_BIN_",
                "CARGO_CFG_",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
                "OUT_DIR",
            ];
            if set_for_the_test
                .iter()
                .any(|prefix| text.starts_with(prefix))
            {
                command.env_remove(&variable);
            }
        }
        if dir.ends_with("release") {
            command.arg("--release");
        }
        let status = command.status().context("cargo runs")?;
        anyhow::ensure!(status.success(), "building {name} failed");
        built.push(name.to_owned());
    }
    Ok(binary)
}

/// How `batond` processes are started: the binary, the directory their logs go to (one file
/// per process name), and variables given to each.
#[derive(Debug, Clone)]
pub struct BatondLauncher {
    pub binary: PathBuf,
    pub dir: PathBuf,
    pub env: Vec<(String, String)>,
}

impl BatondLauncher {
    pub fn new(binary: PathBuf, dir: PathBuf) -> Self {
        Self {
            binary,
            dir,
            env: Vec::new(),
        }
    }

    /// The same launcher, giving `name=value` to the processes it starts.
    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Starts `batond server` with `arguments` on a free port and waits for `/healthz`.
    pub async fn server(&self, name: &str, arguments: &[String]) -> anyhow::Result<Batond> {
        self.serving(name, "server", arguments).await
    }

    /// Starts `batond dev` (server and worker in one process) on a free port and waits for
    /// `/healthz`.
    pub async fn dev(&self, name: &str, arguments: &[String]) -> anyhow::Result<Batond> {
        self.serving(name, "dev", arguments).await
    }

    /// Starts `batond worker` with `arguments`.
    pub fn worker(&self, name: &str, arguments: &[String]) -> anyhow::Result<Batond> {
        self.spawn(name, "worker", arguments, &[])
    }

    async fn serving(
        &self,
        name: &str,
        role: &str,
        arguments: &[String],
    ) -> anyhow::Result<Batond> {
        let port = free_port()?;
        let listen = format!("127.0.0.1:{port}");
        let mut process = self.spawn(name, role, arguments, &["--listen", &listen])?;
        process.port = port;
        let what = format!(
            "batond {role} {name} (its log is in {})",
            self.dir.display()
        );
        wait_healthy(
            &process.base_url(),
            &mut process.child,
            &what,
            Duration::from_secs(30),
        )
        .await?;
        Ok(process)
    }

    fn spawn(
        &self,
        name: &str,
        role: &str,
        arguments: &[String],
        more: &[&str],
    ) -> anyhow::Result<Batond> {
        std::fs::create_dir_all(&self.dir)?;
        let child = Command::new(&self.binary)
            .arg(role)
            .args(arguments)
            .args(more)
            .env("RUST_LOG", "warn")
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .stdout(log_file(&self.dir, name)?)
            .stderr(log_file(&self.dir, name)?)
            .spawn()
            .context("cannot run batond")?;
        Ok(Batond {
            port: 0,
            child: Some(child),
        })
    }
}

/// A `batond` process in one role, killed (SIGKILL) when dropped.
pub struct Batond {
    /// The HTTP port of a server or dev process (0 for a worker).
    pub port: u16,
    child: Option<Child>,
}

impl Batond {
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL: the process ends at once, whatever it was doing.
    pub fn kill(&mut self) {
        kill_child(&mut self.child);
    }
}

impl Drop for Batond {
    fn drop(&mut self) {
        kill_child(&mut self.child);
    }
}

/// Where a `batond` runs: its Redis and Temporal server, key prefix, task queue and agents
/// file.
pub struct Placement<'a> {
    pub redis_url: &'a str,
    pub temporal: &'a str,
    pub prefix: &'a str,
    pub task_queue: &'a str,
    pub agents: &'a Path,
}

/// The flags that place a `batond` as `placement` says.
pub fn placement_flags(placement: &Placement<'_>) -> Vec<String> {
    let Placement {
        redis_url,
        temporal,
        prefix,
        task_queue,
        agents,
    } = *placement;
    [
        "--redis-url",
        redis_url,
        "--key-prefix",
        prefix,
        "--task-queue",
        task_queue,
        "--temporal-address",
        temporal,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain(["--agents".to_owned(), agents.display().to_string()])
    .collect()
}

/// `baton run --agent <agent> --answer go` against the server at `address` (`host:port`),
/// `input` its standard input (the terminal's answers), without the environment's token or
/// gRPC choice: its output once it ends, within twice the tests' limit.
pub async fn baton_run_answering(address: &str, agent: &str, input: &[u8]) -> std::process::Output {
    use tokio::io::AsyncWriteExt as _;
    let binary = workspace_binary("baton-client", "baton").expect("the baton binary builds");
    let mut cli = tokio::process::Command::new(binary)
        .arg("--server")
        .arg(format!("http://{address}"))
        .args(["run", "--agent", agent, "--answer", "go"])
        .env_remove("BATON_TOKEN")
        .env_remove("BATON_GRPC")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the baton binary runs");
    let mut stdin = cli.stdin.take().expect("a piped standard input");
    stdin
        .write_all(input)
        .await
        .expect("the answers are written");
    drop(stdin);
    tokio::time::timeout(crate::WAIT_LIMIT * 2, cli.wait_with_output())
        .await
        .expect("baton run ends in time")
        .expect("baton run's output")
}
