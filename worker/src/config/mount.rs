//! Flags of the mount group: the producer mount of the remote-agent protocol, which `batond
//! server` and `dev` serve by default for every agent type under `/agents`.

use baton_worker::mount::{DEFAULT_BASE_PATH, Mount};
use clap::Args;

#[derive(Debug, Args)]
#[command(next_help_heading = "Producer mount")]
pub(crate) struct MountArgs {
    /// Serve no producer mount.
    #[arg(long, env = "BATON_NO_MOUNT", global = true)]
    pub(crate) no_mount: bool,
    /// The mount's base path: its routes are `<base>/<agentType>/(start|resume|sse|status|
    /// snapshot|usage|interrupt|abort)`.
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
}

impl MountArgs {
    /// The mounts the flags ask for; a base path the router cannot serve is refused.
    pub(crate) fn mounts(&self) -> anyhow::Result<Vec<Mount>> {
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
}
