//! Flags of the limits group: how large a submit may be, how often a session may submit, how
//! often one subject may start and answer, how much of a stream is kept, and how many streams and connections the server holds (see
//! docs/hardening.md for the reverse-proxy settings to pair them with).

use baton_core::submit::SubmitLimits;
use baton_worker::{
    state::{
        BucketLimit, ConnectionLimits, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
        DEFAULT_MAX_CONNECTIONS_PER_PEER, DEFAULT_MAX_FOLLOWERS_PER_CREDENTIAL,
        DEFAULT_MAX_FOLLOWERS_PER_SESSION, DEFAULT_MAX_GRPC_CONNECTIONS, DEFAULT_STREAM_MAX_CHUNKS,
        DEFAULT_SUBJECT_STARTS, DEFAULT_SUBJECT_SUBMITS, DEFAULT_SUBMITS_PER_MINUTE, SubjectLimits,
    },
    stream::FollowerCaps,
};
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(next_help_heading = "Limits")]
pub(crate) struct LimitArgs {
    /// Largest client-tool result a submit may carry, in bytes of JSON.
    #[arg(
        long,
        env = "BATON_MAX_RESULT_BYTES",
        default_value_t = SubmitLimits::default().max_result_bytes,
        global = true
    )]
    pub(crate) max_result_bytes: usize,
    /// Submits a session may make per minute (a token bucket shared by all servers); 0 is
    /// unlimited.
    #[arg(
        long,
        env = "BATON_SUBMITS_PER_MINUTE",
        default_value_t = DEFAULT_SUBMITS_PER_MINUTE,
        global = true
    )]
    pub(crate) submits_per_minute: u32,
    /// Starts one subject (a user token's user, a session token's tree, an operator key's
    /// name) may make at once (`/start`, gRPC Start, a chat's first message); past it 429
    /// rate_limited. 0 is unlimited.
    #[arg(
        long,
        env = "BATON_SUBJECT_START_BURST",
        default_value_t = DEFAULT_SUBJECT_STARTS.burst,
        global = true
    )]
    pub(crate) subject_start_burst: u32,
    /// Starts a minute that refill a subject's start bucket (at least 1).
    #[arg(
        long,
        env = "BATON_SUBJECT_STARTS_PER_MINUTE",
        default_value_t = DEFAULT_SUBJECT_STARTS.per_minute,
        global = true
    )]
    pub(crate) subject_starts_per_minute: u32,
    /// Answers one subject may submit at once, over every route; past it 429 rate_limited. 0
    /// is unlimited.
    #[arg(
        long,
        env = "BATON_SUBJECT_SUBMIT_BURST",
        default_value_t = DEFAULT_SUBJECT_SUBMITS.burst,
        global = true
    )]
    pub(crate) subject_submit_burst: u32,
    /// Answers a minute that refill a subject's submit bucket (at least 1).
    #[arg(
        long,
        env = "BATON_SUBJECT_SUBMITS_PER_MINUTE",
        default_value_t = DEFAULT_SUBJECT_SUBMITS.per_minute,
        global = true
    )]
    pub(crate) subject_submits_per_minute: u32,
    /// Chunks a session's stream keeps (the oldest are trimmed; a follower asking for them is
    /// told TRUNCATED); 0 keeps all.
    #[arg(
        long,
        env = "BATON_STREAM_MAX_CHUNKS",
        default_value_t = DEFAULT_STREAM_MAX_CHUNKS,
        global = true
    )]
    pub(crate) stream_max_chunks: u64,
    /// Open streams (`/sse`, gRPC Subscribe, chat streams) of one session on this server; past
    /// it a follower is refused 429 rate_limited. 0 is no cap.
    #[arg(
        long,
        env = "BATON_MAX_FOLLOWERS_PER_SESSION",
        default_value_t = DEFAULT_MAX_FOLLOWERS_PER_SESSION,
        global = true
    )]
    pub(crate) max_followers_per_session: usize,
    /// Open streams of one credential (bearer value) on this server, over all sessions; past it
    /// a follower is refused 429 rate_limited. 0 is no cap.
    #[arg(
        long,
        env = "BATON_MAX_FOLLOWERS_PER_CREDENTIAL",
        default_value_t = DEFAULT_MAX_FOLLOWERS_PER_CREDENTIAL,
        global = true
    )]
    pub(crate) max_followers_per_credential: usize,
    /// Open HTTP connections; past it a connection is answered 503 server_busy and closed. Keep
    /// it under the process's file-descriptor limit (`ulimit -n`).
    #[arg(
        long,
        env = "BATON_MAX_CONNECTIONS",
        default_value_t = DEFAULT_MAX_CONNECTIONS,
        global = true
    )]
    pub(crate) max_connections: usize,
    /// Open connections of one client address, to the HTTP server and to the gRPC service each;
    /// past it a connection gets the answer of one past the cap in all. 0 is no such cap (behind
    /// a proxy, every connection comes from the proxy's address).
    #[arg(
        long,
        env = "BATON_MAX_CONNECTIONS_PER_PEER",
        default_value_t = DEFAULT_MAX_CONNECTIONS_PER_PEER,
        global = true
    )]
    pub(crate) max_connections_per_peer: usize,
    /// Open gRPC connections (`--grpc-listen`); past it a connection's first call is answered
    /// `server_busy` (UNAVAILABLE) and the connection closed.
    #[arg(
        long,
        env = "BATON_MAX_GRPC_CONNECTIONS",
        default_value_t = DEFAULT_MAX_GRPC_CONNECTIONS,
        global = true
    )]
    pub(crate) max_grpc_connections: usize,
    /// Seconds a connection may take to send a request's headers before it is closed.
    #[arg(
        long,
        env = "BATON_HEADER_READ_TIMEOUT_SECS",
        default_value_t = DEFAULT_HEADER_READ_TIMEOUT.as_secs(),
        global = true
    )]
    pub(crate) header_read_timeout_secs: u64,
}

impl LimitArgs {
    pub(crate) fn submit_limits(&self) -> SubmitLimits {
        SubmitLimits {
            max_result_bytes: self.max_result_bytes,
        }
    }

    pub(crate) fn follower_caps(&self) -> FollowerCaps {
        FollowerCaps {
            per_session: self.max_followers_per_session,
            per_credential: self.max_followers_per_credential,
        }
    }

    /// A connection cap of 0 would serve nothing: it is refused.
    pub(crate) fn connection_limits(&self) -> anyhow::Result<ConnectionLimits> {
        anyhow::ensure!(
            self.max_connections > 0
                && self.max_grpc_connections > 0
                && self.header_read_timeout_secs > 0,
            "--max-connections, --max-grpc-connections and --header-read-timeout-secs must be at least 1"
        );
        Ok(ConnectionLimits {
            max_connections: self.max_connections,
            max_grpc_connections: self.max_grpc_connections,
            max_connections_per_peer: self.max_connections_per_peer,
            header_read_timeout: Duration::from_secs(self.header_read_timeout_secs),
        })
    }

    /// The subjects' buckets; a refill of 0 would never give a token back: it is refused.
    pub(crate) fn subject_limits(&self) -> anyhow::Result<SubjectLimits> {
        anyhow::ensure!(
            self.subject_starts_per_minute > 0 && self.subject_submits_per_minute > 0,
            "--subject-starts-per-minute and --subject-submits-per-minute must be at least 1 \
             (a burst of 0 turns a bucket off)"
        );
        Ok(SubjectLimits {
            starts: BucketLimit {
                burst: self.subject_start_burst,
                per_minute: self.subject_starts_per_minute,
            },
            submits: BucketLimit {
                burst: self.subject_submit_burst,
                per_minute: self.subject_submits_per_minute,
            },
        })
    }

    /// The rate limit; 0 is none.
    pub(crate) fn submits_per_minute(&self) -> Option<u32> {
        (self.submits_per_minute > 0).then_some(self.submits_per_minute)
    }
}
