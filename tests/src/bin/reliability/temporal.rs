//! A Temporal dev server of the campaign's own, for the scenario that restarts it.

use crate::procs::{free_port, kill_child, log_file};
use anyhow::{Context, bail};
use std::{
    path::{Path, PathBuf},
    process::{Child, Command},
    time::{Duration, Instant},
};

/// A Temporal dev server of the campaign's own, persisting to a SQLite file so that a restart
/// keeps its workflows.
pub struct TemporalServer {
    pub port: u16,
    http_port: u16,
    database: PathBuf,
    logs: PathBuf,
    child: Option<Child>,
}

/// The Temporal CLI: `$TEMPORAL` (set by `scripts/services.sh`), the one `services.sh`
/// installs, or `temporal` on the path.
fn temporal_cli() -> PathBuf {
    if let Some(path) = std::env::var_os("TEMPORAL") {
        return PathBuf::from(path);
    }
    if let Some(home) = std::env::var_os("HOME") {
        let installed = PathBuf::from(home).join(".cache/baton/venv/bin/temporal");
        if installed.exists() {
            return installed;
        }
    }
    PathBuf::from("temporal")
}

impl TemporalServer {
    pub async fn start(dir: &Path) -> anyhow::Result<Self> {
        let port = free_port()?;
        let mut server = Self {
            port,
            http_port: free_port()?,
            database: dir.join(format!("temporal-{port}.db")),
            logs: dir.to_owned(),
            child: None,
        };
        server.spawn().await?;
        Ok(server)
    }

    pub fn address(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        let child = Command::new(temporal_cli())
            .args(["server", "start-dev", "--ip", "127.0.0.1", "--headless"])
            .args(["--log-level", "error"])
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--http-port")
            .arg(self.http_port.to_string())
            .arg("--db-filename")
            .arg(&self.database)
            .args([
                "--dynamic-config-value",
                "history.transferProcessorMaxPollRPS=1000",
            ])
            .stdout(log_file(&self.logs, &format!("temporal-{}", self.port))?)
            .stderr(log_file(&self.logs, &format!("temporal-{}", self.port))?)
            .spawn()
            .context("the Temporal CLI must be installed (scripts/services.sh installs it)")?;
        self.child = Some(child);
        let began = Instant::now();
        loop {
            let settings = baton_worker::TemporalSettings {
                address: self.address(),
                namespace: "default".to_owned(),
            };
            if let Ok(Ok(client)) = tokio::time::timeout(
                Duration::from_secs(2),
                baton_worker::connect_temporal(&settings),
            )
            .await
            {
                // The frontend answers before the namespace exists; wait for a real answer.
                if client.count_workflows("", Default::default()).await.is_ok() {
                    return Ok(());
                }
            }
            if began.elapsed() > Duration::from_secs(60) {
                bail!("the Temporal dev server on {} did not come up", self.port);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub fn kill(&mut self) {
        kill_child(&mut self.child);
    }

    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        self.spawn().await
    }
}

impl Drop for TemporalServer {
    fn drop(&mut self) {
        self.kill();
    }
}
