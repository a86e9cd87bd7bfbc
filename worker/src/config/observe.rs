//! Flags of the observability group: the log's format, and where a worker serves its metrics.

use clap::{Args, ValueEnum};
use std::net::SocketAddr;

#[derive(Debug, Args)]
#[command(next_help_heading = "Observability")]
pub(crate) struct ObserveArgs {
    /// Format of the log (on stdout): `text` for people, `json` (one object per line, the
    /// event's fields at the top level) for log pipelines and the fault campaign.
    #[arg(
        long,
        env = "BATON_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text,
        global = true
    )]
    pub(crate) log_format: LogFormat,
    /// Address a worker serves `GET /metrics` on, without authentication (keep it on a private
    /// network); off when not given. The server and dev roles serve it on the HTTP API.
    #[arg(long, env = "BATON_METRICS_LISTEN", global = true)]
    pub(crate) metrics_listen: Option<SocketAddr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}
