//! What every operation shares: the server's handles ([`AppState`]) and how it treats requests
//! ([`ServerOptions`]), with the defaults `batond`'s flags take theirs from.

use crate::{
    auth::{Auth, Principal, ServiceKeys, Surface},
    stream::FollowerCaps,
};
use baton_activities::io::ActivityPolicy;
use baton_core::{AgentRegistry, Store, submit::SubmitLimits};
use std::time::Duration;
use temporalio_client::Client;

/// How many chunks a session's stream keeps by default.
pub const DEFAULT_STREAM_MAX_CHUNKS: u64 = 100_000;

/// The default submit rate limit per session.
pub const DEFAULT_SUBMITS_PER_MINUTE: u32 = 60;

/// Starts one subject (a user, a session token's tree, an operator key) may make at once by
/// default, and how many a minute refill its bucket (one a second).
pub const DEFAULT_SUBJECT_STARTS: BucketLimit = BucketLimit {
    burst: 20,
    per_minute: 60,
};

/// Answers one subject may submit at once by default, and how many a minute refill its bucket
/// (five a second): above a person's pace, below a script's flood.
pub const DEFAULT_SUBJECT_SUBMITS: BucketLimit = BucketLimit {
    burst: 60,
    per_minute: 300,
};

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

/// Connections one client address holds by default, of the HTTP server and of the gRPC service
/// each: an eighth of the HTTP cap, so one client cannot hold them all.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 64;

/// How long a connection may take to send a request's headers by default (slow-loris).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub registry: AgentRegistry,
    pub temporal: Client,
    pub task_queue: std::sync::Arc<str>,
    /// The timeouts and retries of the runs this server starts.
    pub policy: ActivityPolicy,
    /// Shared by the state's clones (axum clones the state for every request and every
    /// middleware layer).
    pub options: std::sync::Arc<ServerOptions>,
    /// The stream feeds SSE followers share.
    pub streams: crate::stream::StreamHub,
    pub metrics: crate::metrics::Metrics,
    /// The one pool of the server's calls to remote sub-agents' producers (a relayed answer, a
    /// stop passed on, a rewind's orphans); each request carries its declaration's own headers
    /// and deadline.
    pub http: reqwest::Client,
}

impl AppState {
    /// The principal of a request to `route` arriving on `surface` (see
    /// [`crate::auth::authenticate`]). A refused credential is audited here, with its route and
    /// reason, for every transport; a refusal by an operation's policy is the operation's own
    /// audit event (`crate::ops`), so no transport audits anything.
    pub async fn authenticate(
        &self,
        headers: &axum::http::HeaderMap,
        surface: Surface,
        route: &str,
    ) -> Result<Principal, baton_core::ApiError> {
        let authenticated = crate::auth::authenticate(
            &self.options.auth,
            &self.options.service_keys,
            &self.store,
            headers,
            surface,
        )
        .await;
        if let Err(error) = &authenticated
            && crate::audit::is_audited_refusal(error.code)
        {
            crate::audit::refusal(route, error, None);
        }
        authenticated
    }
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
    /// The services that may call the producer mount (`--service-key`), checked before `auth`:
    /// the mount's only callers on an open server.
    pub service_keys: ServiceKeys,
    /// Submits per minute and session (a token bucket in Redis); `None` is unlimited.
    pub submits_per_minute: Option<u32>,
    /// Each subject's start and submit buckets (`Principal::subject`; in Redis, shared by all
    /// servers).
    pub subject_limits: SubjectLimits,
    /// Operators may name the session `/start` creates (`sessionId`); otherwise ids are the
    /// server's own.
    pub allow_client_session_ids: bool,
    /// Chunks a session's stream keeps (the oldest are trimmed); 0 keeps all. The start
    /// operation records it in each session it creates (the one place retention is set), so the
    /// store in [`AppState`] needs no setting of its own.
    pub stream_max_chunks: u64,
    /// The producer mounts of the remote-agent protocol (by default one raw mount of every
    /// agent type under [`crate::mount_spec::DEFAULT_BASE_PATH`]); empty serves none.
    pub mounts: Vec<crate::mount_spec::Mount>,
    /// Open streams per session and per credential on this server.
    pub follower_caps: FollowerCaps,
    /// The HTTP server's and the gRPC service's connection caps, and the header deadline.
    pub connection_limits: ConnectionLimits,
    /// The Temporal UI up to the namespace, for the console's links to workflows.
    pub temporal_ui_url: Option<String>,
    /// The web origins browsers may call the API from (none by default).
    pub allowed_origins: crate::origins::AllowedOrigins,
    /// `batond dev`'s demo mode: `GET /chat/demo-token` mints a user token for the demo user,
    /// so the demo page needs no credential in its URL. Never on in `batond server`, nor in a
    /// `batond dev` with an operator key.
    pub demo_user_tokens: bool,
    /// The hosts a mount caller's callback URL may name (`--callback-hosts`); none by default:
    /// every callback is refused.
    pub callback_hosts: crate::callback_hosts::CallbackHosts,
}

/// A token bucket: `burst` tokens at once, refilled at `per_minute`. A burst of 0 is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketLimit {
    pub burst: u32,
    pub per_minute: u32,
}

/// What one subject may do before it is refused 429 `rate_limited`: its starts (`/start`, gRPC
/// `Start`, a chat's first message) and its answers (every submit, over any route).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubjectLimits {
    pub starts: BucketLimit,
    pub submits: BucketLimit,
}

impl SubjectLimits {
    /// No subject limit at all (a benchmark's or a test's load, all of one subject).
    pub const OFF: Self = Self {
        starts: BucketLimit {
            burst: 0,
            per_minute: 1,
        },
        submits: BucketLimit {
            burst: 0,
            per_minute: 1,
        },
    };
}

impl Default for SubjectLimits {
    fn default() -> Self {
        Self {
            starts: DEFAULT_SUBJECT_STARTS,
            submits: DEFAULT_SUBJECT_SUBMITS,
        }
    }
}

/// What the HTTP server and the gRPC service let connections hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Open connections; past it a connection is answered 503 `server_busy` and closed.
    pub max_connections: usize,
    /// Open gRPC connections; past it a connection's first call is answered `server_busy`
    /// (`UNAVAILABLE`) and the connection closed.
    pub max_grpc_connections: usize,
    /// Open connections of one client address, to each service; past it a connection gets the
    /// answer of a connection past the cap in all. 0 is no such cap.
    pub max_connections_per_peer: usize,
    /// How long a connection may take to send a request's headers before it is closed.
    pub header_read_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_grpc_connections: DEFAULT_MAX_GRPC_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
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
            service_keys: ServiceKeys::none(),
            submits_per_minute: Some(DEFAULT_SUBMITS_PER_MINUTE),
            subject_limits: SubjectLimits::default(),
            stream_max_chunks: DEFAULT_STREAM_MAX_CHUNKS,
            allow_client_session_ids: false,
            mounts: vec![crate::mount_spec::Mount::new(
                crate::mount_spec::DEFAULT_BASE_PATH,
            )],
            follower_caps: FollowerCaps {
                per_session: DEFAULT_MAX_FOLLOWERS_PER_SESSION,
                per_credential: DEFAULT_MAX_FOLLOWERS_PER_CREDENTIAL,
            },
            connection_limits: ConnectionLimits::default(),
            temporal_ui_url: None,
            allowed_origins: crate::origins::AllowedOrigins::None,
            demo_user_tokens: false,
            callback_hosts: crate::callback_hosts::CallbackHosts::default(),
        }
    }
}
