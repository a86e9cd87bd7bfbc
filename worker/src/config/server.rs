//! Flags of the server group: where the HTTP API and the gRPC service listen, and how they
//! answer.

use clap::Args;
use std::net::SocketAddr;

#[derive(Debug, Args)]
#[command(next_help_heading = "Server")]
pub(crate) struct ServerArgs {
    /// Address the HTTP server listens on (server and dev).
    #[arg(
        long,
        env = "BATON_LISTEN",
        default_value = "127.0.0.1:8080",
        global = true
    )]
    pub(crate) listen: SocketAddr,
    /// Address the gRPC service listens on beside HTTP (server and dev); off when not given.
    #[arg(long, env = "BATON_GRPC_LISTEN", global = true)]
    pub(crate) grpc_listen: Option<SocketAddr>,
    /// Put validation details in validation_error and INVALID_RESULT answers.
    #[arg(long, env = "BATON_VERBOSE_ERRORS", global = true)]
    pub(crate) verbose_errors: bool,
    /// Resume a session by itself when a submit completes its batch (the submit answers
    /// continuation new_run) instead of leaving it to the caller (caller_resumes).
    #[arg(long, env = "BATON_RESUME_ON_SUBMIT", global = true)]
    pub(crate) resume_on_submit: bool,
    /// Let operators name the sessions they start (`sessionId` in `/start`).
    #[arg(long, env = "BATON_ALLOW_CLIENT_SESSION_IDS", global = true)]
    pub(crate) allow_client_session_ids: bool,
    /// The Temporal UI's address up to the namespace (e.g.
    /// `http://127.0.0.1:8233/namespaces/default`): the console links each workflow id there.
    #[arg(long, env = "BATON_TEMPORAL_UI_URL", global = true)]
    pub(crate) temporal_ui_url: Option<String>,
    /// A web origin browsers may call the API from (`https://app.example`; `*` for any);
    /// repeat for several. None by default: only the pages this server serves. The agents
    /// file's `[browser] allowed_origins` adds to these.
    #[arg(
        long = "allowed-origin",
        env = "BATON_ALLOWED_ORIGINS",
        value_delimiter = ',',
        global = true
    )]
    pub(crate) allowed_origins: Vec<String>,
}
