//! Flags of the remote sub-agents group: how a consumer waits on remote children that run past
//! their follower's window (their producers' turn-end callbacks, and the sweep that polls their
//! `status` when a callback does not come).

use baton_worker::sweeps::RemoteWaitSweep;
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(next_help_heading = "Remote sub-agents")]
pub(crate) struct RemoteArgs {
    /// This service's `/remote-callbacks` route as remote children's producers reach it (e.g.
    /// `https://consumer.internal/remote-callbacks`): each remote call asks its producer to POST
    /// the child's turn ends there, signed. Unset: no callback; the sweep polls.
    #[arg(long, env = "BATON_REMOTE_CALLBACK_URL", global = true)]
    pub(crate) remote_callback_url: Option<String>,
    /// How often the worker polls the `status` of a remote child that ran past its follower's
    /// window, in seconds (a lost callback costs at most this); 0: this worker polls none.
    #[arg(
        long,
        env = "BATON_REMOTE_POLL_SECS",
        default_value_t = RemoteWaitSweep::default().poll_every.as_secs(),
        global = true
    )]
    pub(crate) remote_poll_secs: u64,
}

impl RemoteArgs {
    /// The callback URL, refused at start-up unless a producer would take it (an `http(s)://`
    /// URL without spaces, not too long), rather than refusing every remote call later.
    pub(crate) fn callback_url(&self) -> anyhow::Result<Option<String>> {
        let Some(url) = &self.remote_callback_url else {
            return Ok(None);
        };
        let url = url.trim_end_matches('/').to_owned();
        let probe = baton_core::remote::Callback {
            url: format!("{url}/{}", "0".repeat(32)),
            token: "0".repeat(32),
        };
        probe
            .check()
            .map_err(|error| anyhow::anyhow!("--remote-callback-url: {}", error.error))?;
        Ok(Some(url))
    }

    /// The remote-wait sweep the flags ask for.
    pub(crate) fn remote_wait_sweep(&self) -> Option<RemoteWaitSweep> {
        (self.remote_poll_secs > 0).then(|| RemoteWaitSweep {
            poll_every: Duration::from_secs(self.remote_poll_secs),
            ..RemoteWaitSweep::default()
        })
    }
}
