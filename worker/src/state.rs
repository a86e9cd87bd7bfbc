//! What every operation shares: the server's handles ([`AppState`]) and how it treats requests
//! ([`ServerOptions`]), with the defaults `batond`'s flags take theirs from.

use crate::{auth::Auth, stream::FollowerCaps};
use baton_activities::io::ActivityPolicy;
use baton_core::{AgentRegistry, Store, submit::SubmitLimits};
use std::time::Duration;
use temporalio_client::Client;

/// How many chunks a session's stream keeps by default.
pub const DEFAULT_STREAM_MAX_CHUNKS: u64 = 100_000;

/// The default submit rate limit per session.
pub const DEFAULT_SUBMITS_PER_MINUTE: u32 = 60;

/// Open streams of one session a server serves by default (tabs, devices, a monitor).
pub const DEFAULT_MAX_FOLLOWERS_PER_SESSION: usize = 32;

/// Open streams of one credential a server serves by default, over all its sessions.
pub const DEFAULT_MAX_FOLLOWERS_PER_CREDENTIAL: usize = 256;

/// Connections the HTTP server holds by default; below the usual `ulimit -n` of 1024, so the
/// server answers `server_busy` before it runs out of descriptors.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// The gRPC service's connection cap, unless configured (a gRPC client multiplexes its calls and
/// streams over one connection, so services need few).
pub const DEFAULT_MAX_GRPC_CONNECTIONS: usize = 256;

/// How long a connection may take to send a request's headers by default (slow-loris).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub registry: AgentRegistry,
    pub temporal: Client,
    pub task_queue: String,
    /// The timeouts and retries of the runs this server starts.
    pub policy: ActivityPolicy,
    pub options: ServerOptions,
    /// The stream feeds SSE followers share.
    pub streams: crate::stream::StreamHub,
    pub metrics: crate::metrics::Metrics,
    /// The one pool of the server's calls to remote sub-agents' producers (a relayed answer, a
    /// stop passed on, a rewind's orphans); each request carries its declaration's own headers
    /// and deadline.
    pub http: reqwest::Client,
}

/// How the server treats requests; `Default` is what `batond` runs with when given no flags
/// (which, without auth, it refuses to serve).
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub submit_limits: SubmitLimits,
    /// Put validation details in `validation_error` and `INVALID_RESULT` answers.
    pub verbose_errors: bool,
    /// Resume a session by itself when a submit completes its batch (continuation `new_run`)
    /// instead of leaving that to the caller (`caller_resumes`).
    pub resume_on_submit: bool,
    /// Who may call; [`Auth::Unset`] (the default) serves nothing.
    pub auth: Auth,
    /// Submits per minute and session (a token bucket in Redis); `None` is unlimited.
    pub submits_per_minute: Option<u32>,
    /// Operators may name the session `/start` creates (`sessionId`); otherwise ids are the
    /// server's own.
    pub allow_client_session_ids: bool,
    /// Chunks a session's stream keeps (the oldest are trimmed); 0 keeps all. The start
    /// operation records it in each session it creates (the one place retention is set), so the
    /// store in [`AppState`] needs no setting of its own.
    pub stream_max_chunks: u64,
    /// The producer mounts of the remote-agent protocol (by default one raw mount of every
    /// agent type under [`crate::mount::DEFAULT_BASE_PATH`]); empty serves none.
    pub mounts: Vec<crate::mount::Mount>,
    /// Open streams per session and per credential on this server.
    pub follower_caps: FollowerCaps,
    /// The HTTP server's and the gRPC service's connection caps, and the header deadline.
    pub connection_limits: ConnectionLimits,
    /// The Temporal UI up to the namespace, for the console's links to workflows.
    pub temporal_ui_url: Option<String>,
    /// The web origins browsers may call the API from (none by default).
    pub allowed_origins: crate::origins::AllowedOrigins,
    /// `batond dev`'s demo mode: `GET /chat/demo-token` mints a user token for the demo user,
    /// so the demo page needs no credential in its URL. Never on in `batond server`.
    pub demo_user_tokens: bool,
    /// The hosts a mount caller's callback URL may name (`--callback-hosts`); none by default:
    /// every callback is refused.
    pub callback_hosts: crate::ops::CallbackHosts,
}

/// What the HTTP server and the gRPC service let connections hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Open connections; past it a connection is answered 503 `server_busy` and closed.
    pub max_connections: usize,
    /// Open gRPC connections; past it a connection's first call is answered `server_busy`
    /// (`UNAVAILABLE`) and the connection closed.
    pub max_grpc_connections: usize,
    /// How long a connection may take to send a request's headers before it is closed.
    pub header_read_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_grpc_connections: DEFAULT_MAX_GRPC_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
        }
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            submit_limits: SubmitLimits::default(),
            verbose_errors: false,
            resume_on_submit: false,
            auth: Auth::Unset,
            submits_per_minute: Some(DEFAULT_SUBMITS_PER_MINUTE),
            stream_max_chunks: DEFAULT_STREAM_MAX_CHUNKS,
            allow_client_session_ids: false,
            mounts: vec![crate::mount::Mount::new(crate::mount::DEFAULT_BASE_PATH)],
            follower_caps: FollowerCaps {
                per_session: DEFAULT_MAX_FOLLOWERS_PER_SESSION,
                per_credential: DEFAULT_MAX_FOLLOWERS_PER_CREDENTIAL,
            },
            connection_limits: ConnectionLimits::default(),
            temporal_ui_url: None,
            allowed_origins: crate::origins::AllowedOrigins::None,
            demo_user_tokens: false,
            callback_hosts: crate::ops::CallbackHosts::default(),
        }
    }
}
