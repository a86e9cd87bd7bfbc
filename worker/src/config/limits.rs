//! Flags of the limits group: how large a submit may be, how often a session may submit, and
//! how much of a stream is kept.

use baton_core::submit::SubmitLimits;
use baton_worker::state::{DEFAULT_STREAM_MAX_CHUNKS, DEFAULT_SUBMITS_PER_MINUTE};
use clap::Args;

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
    /// Chunks a session's stream keeps (the oldest are trimmed; a follower asking for them is
    /// told TRUNCATED); 0 keeps all.
    #[arg(
        long,
        env = "BATON_STREAM_MAX_CHUNKS",
        default_value_t = DEFAULT_STREAM_MAX_CHUNKS,
        global = true
    )]
    pub(crate) stream_max_chunks: u64,
}

impl LimitArgs {
    pub(crate) fn submit_limits(&self) -> SubmitLimits {
        SubmitLimits {
            max_result_bytes: self.max_result_bytes,
        }
    }

    /// The rate limit; 0 is none.
    pub(crate) fn submits_per_minute(&self) -> Option<u32> {
        (self.submits_per_minute > 0).then_some(self.submits_per_minute)
    }
}
