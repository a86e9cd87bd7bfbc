//! The processes a scenario starts and hurts: Redis servers of its own, Baton server and worker
//! processes (this binary run again in a role), and a Temporal dev server of its own.

use anyhow::Context;
use baton_tests::procs::wait_healthy;
pub use baton_tests::procs::{RedisServer, free_port, kill_child, log_file, rss_kib};
use std::{
    path::{Path, PathBuf},
    process::{Child, Command},
    time::Duration,
};

/// Where a Baton process finds its dependencies and what it serves.
#[derive(Debug, Clone)]
pub struct BatonConfig {
    pub redis_url: String,
    pub temporal_address: String,
    pub task_queue: String,
    pub prefix: String,
    /// Server only: resume a session on its batch's last answer.
    pub resume_on_submit: bool,
    /// Server only: built-in auth with the campaign's operator key, token secret and service
    /// key (`roles::OPERATOR_KEY`, …) instead of an open server.
    pub keyed: bool,
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
            .env(
                crate::roles::KEYED,
                if self.config.keyed { "1" } else { "" },
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
        let base_url = self.base_url();
        wait_healthy(&base_url, &mut self.child, self.role.as_str(), limit).await
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
