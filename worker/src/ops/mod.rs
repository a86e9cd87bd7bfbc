//! The operations every adapter calls: start, resume (and rewind), stop, submit, the reads, the
//! search, fork, tokens and the mount's start. Each takes the caller's [`Principal`] and a typed
//! request and answers a typed response or an [`ApiError`], and owns its policy: it authorizes
//! (`crate::auth`'s rules), revokes what a stop revokes and writes its audit event, once, so no
//! adapter decides any of it. None knows HTTP or gRPC. The adapters (`crate::http`,
//! `crate::grpc`, `crate::http::mount`, the chat route) authenticate, decode, call one of these and
//! encode the answer. Every operation answers from Redis or by starting a workflow; none waits
//! on a run.
//!
//! [`Principal`]: crate::auth::Principal

mod attach;
mod body_limits;
mod delete;
mod follow;
mod fork;
mod limits;
mod metrics;
mod new_run;
mod question;
mod reads;
mod ready;
mod resume;
mod rewind;
mod search;
mod start;
mod stop;
mod submit;
pub(crate) mod temporal;
mod tokens;
mod tree;
mod watch_pending;

pub use crate::callback_hosts::{CallbackHosts, check_callback_host};
pub use attach::{reindex_callback, start_or_attach};
pub use body_limits::{MAX_JSON_DEPTH, body_too_large, checked_body_size, checked_json_depth};
pub use delete::delete;
pub use follow::{admit_follower, follow, open_follow};
pub use fork::fork_session;
pub use metrics::metrics_text;
pub use reads::{
    authorize, authorized_session, existing_session, session_snapshot, session_status,
    session_usage,
};
pub use ready::{Readiness, readiness};
pub use resume::{ResumeWith, chat_resume, resume};
pub use search::{list_pending, list_sessions};
pub use start::{MAX_MESSAGE_BYTES, chat_start, checked_start, first_log};
pub(crate) use stop::stop_session;
pub use stop::{chat_stop, stop};
pub use submit::{checked_submit, submit, submit_and_continue};
pub use tokens::{mint_demo_token, mint_user_token, revoke_token, revoke_user_tokens};
pub use watch_pending::{PendingWatch, WATCH_EVERY, watch_pending};

pub use crate::auth::SearchScope;

use baton_core::{ApiError, ErrorCode, Refusal, escape::bounded, ids, store::SessionAddress};

/// A refusal with a fixed `message`, and the decoder's `reason` (a field name, a position, an
/// echoed value) in `details` only when the server runs with `--verbose-errors`, bounded even
/// then: without it, an answer never tells a caller what the parser expected or echoes what it
/// sent.
pub fn refused_with_reason(
    code: ErrorCode,
    message: &str,
    reason: impl std::fmt::Display,
    verbose: bool,
) -> ApiError {
    let refusal = ApiError::new(code, message);
    if verbose {
        refusal.with(Refusal::Detail {
            details: bounded(&reason.to_string()).to_string(),
        })
    } else {
        refusal
    }
}

/// The address of a top-level session, if the id is well-formed.
pub(crate) fn checked_address(session_id: &str) -> Result<SessionAddress, ApiError> {
    if !ids::is_valid_session_id(session_id) {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "malformed sessionId",
        ));
    }
    // A child's id starts with its root's, so any session of a tree is found by its id alone.
    Ok(SessionAddress {
        root_session_id: ids::root_of(session_id).to_owned(),
        session_id: session_id.to_owned(),
    })
}

/// `session_not_found` for a session the request names.
pub(crate) fn no_session(session_id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::SessionNotFound,
        format!("no session {session_id}"),
    )
}

/// `state_already_running`: a run of the session executes, so it cannot be resumed or rewound.
pub(crate) fn already_running() -> ApiError {
    ApiError::new(
        ErrorCode::StateAlreadyRunning,
        "a run of this session is executing",
    )
}
