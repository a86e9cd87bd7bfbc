//! Flags of the mount group: the producer mount of the remote-agent protocol, which `batond
//! server` and `dev` serve by default for every agent type under `/agents`, and the worker's
//! sweep that delivers its callbacks.

use baton_core::config::MountConfig;
use baton_worker::{
    mount::{DEFAULT_BASE_PATH, Mount, check_mounts},
    ops::CallbackHosts,
    sweeps::{CallbackSweep, DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_MAX},
};
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(next_help_heading = "Producer mount")]
pub(crate) struct MountArgs {
    /// Serve no producer mount.
    #[arg(long, env = "BATON_NO_MOUNT", global = true)]
    pub(crate) no_mount: bool,
    /// The mount's base path: its routes are `<base>/<agentType>/(start|resume|sse|status|
    /// snapshot|usage|interrupt|abort|submit)`.
    #[arg(long, env = "BATON_MOUNT_BASE_PATH", default_value = DEFAULT_BASE_PATH, global = true)]
    pub(crate) mount_base_path: String,
    /// Serve only these agent types on the mount (comma-separated); default all.
    #[arg(long, env = "BATON_MOUNT_AGENTS", value_delimiter = ',', global = true)]
    pub(crate) mount_agents: Vec<String>,
    /// Make the mount projected: its snapshots and `end` chunks keep only these top-level state
    /// fields (comma-separated), and its stream carries no `state_patch` chunk.
    #[arg(
        long,
        env = "BATON_MOUNT_STATE_FIELDS",
        value_delimiter = ',',
        global = true
    )]
    pub(crate) mount_state_fields: Vec<String>,
    /// Answer the mount's `usage` with FEATURE_UNAVAILABLE.
    #[arg(long, env = "BATON_MOUNT_NO_USAGE", global = true)]
    pub(crate) mount_no_usage: bool,
    /// How often the worker delivers the mount's turn-end callbacks, in ms (worker and dev);
    /// 0: this worker delivers none.
    #[arg(
        long,
        env = "BATON_CALLBACK_EVERY_MS",
        default_value_t = CallbackSweep::default().every.as_millis() as u64,
        global = true
    )]
    pub(crate) callback_every_ms: u64,
    /// How long after a turn's first refused or failed callback POST it is tried again, in ms
    /// (each further failure doubles the wait, up to `--callback-retry-max-ms`).
    #[arg(
        long,
        env = "BATON_CALLBACK_RETRY_MS",
        default_value_t = CallbackSweep::default().retry_after.as_millis() as u64,
        global = true
    )]
    pub(crate) callback_retry_ms: u64,
    /// The longest wait between two POSTs of a turn's callback, in ms (the wait doubles from
    /// `--callback-retry-ms` up to it).
    #[arg(
        long,
        env = "BATON_CALLBACK_RETRY_MAX_MS",
        default_value_t = DEFAULT_RETRY_MAX.as_millis() as u64,
        global = true
    )]
    pub(crate) callback_retry_max_ms: u64,
    /// How many failed POSTs of one turn drop its callback (a `callback.dropped` warning and
    /// `baton_callbacks_dropped_total`); the consumer then reads the child's `status`.
    #[arg(
        long,
        env = "BATON_CALLBACK_MAX_ATTEMPTS",
        default_value_t = DEFAULT_MAX_ATTEMPTS,
        value_parser = clap::value_parser!(u32).range(1..),
        global = true
    )]
    pub(crate) callback_max_attempts: u32,
    /// The hosts a mount caller's callback URL may name, `host` (any port) or `host:port`,
    /// comma-separated. None given: `batond server` refuses every callback, `batond dev`
    /// accepts loopback.
    #[arg(
        long,
        env = "BATON_CALLBACK_HOSTS",
        value_delimiter = ',',
        global = true
    )]
    pub(crate) callback_hosts: Vec<String>,
}

impl MountArgs {
    /// The mounts the flags ask for, then those of the agents file (`[[mount]]`); a base path
    /// the router cannot serve, or two mounts on one, is refused.
    pub(crate) fn mounts(&self, declared: Vec<MountConfig>) -> anyhow::Result<Vec<Mount>> {
        let mut mounts = self.flag_mount()?;
        mounts.extend(declared.into_iter().map(declared_mount));
        check_mounts(&mounts).map_err(anyhow::Error::msg)?;
        Ok(mounts)
    }

    fn flag_mount(&self) -> anyhow::Result<Vec<Mount>> {
        if self.no_mount {
            return Ok(Vec::new());
        }
        let mut mount = Mount::new(self.mount_base_path.clone());
        if !self.mount_agents.is_empty() {
            mount = mount.allow(self.mount_agents.clone());
        }
        if !self.mount_state_fields.is_empty() {
            mount = mount.keep_state_fields(self.mount_state_fields.clone());
        }
        if self.mount_no_usage {
            mount = mount.without_usage();
        }
        mount.check().map_err(anyhow::Error::msg)?;
        Ok(vec![mount])
    }

    /// The worker's callback sweep; `None` when its period is 0.
    pub(crate) fn callback_sweep(&self) -> Option<CallbackSweep> {
        (self.callback_every_ms > 0).then(|| CallbackSweep {
            every: Duration::from_millis(self.callback_every_ms),
            retry_after: Duration::from_millis(self.callback_retry_ms),
            retry_max: Duration::from_millis(self.callback_retry_max_ms),
            max_attempts: self.callback_max_attempts,
            ..CallbackSweep::default()
        })
    }

    /// The callback hosts the mount accepts: the flag's, or loopback for `batond dev` without
    /// it.
    pub(crate) fn callback_hosts(&self, dev: bool) -> anyhow::Result<CallbackHosts> {
        if self.callback_hosts.is_empty() && dev {
            return Ok(CallbackHosts::loopback());
        }
        CallbackHosts::parse(&self.callback_hosts)
            .map_err(|error| anyhow::anyhow!("--callback-hosts: {error}"))
    }
}

/// A mount the agents file declares.
fn declared_mount(config: MountConfig) -> Mount {
    let mut mount = Mount::new(config.base_path);
    if let Some(agents) = config.agents {
        mount = mount.allow(agents);
    }
    if let Some(fields) = config.state_fields {
        mount = mount.keep_state_fields(fields);
    }
    if !config.serves_usage {
        mount = mount.without_usage();
    }
    mount
}
