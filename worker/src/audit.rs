//! The audit log: one `tracing` event (target [`AUDIT_TARGET`]) per action a caller takes on a
//! session (start and its token mint, answer, resume, rewind, stop, fork), each user token's mint and
//! each revocation, naming the principal (an operator key's configured name, `session:<root>`
//! for a session token, `user:<userId>` for a user token) and how it
//! ended; and the refusals (401, 403) with their route, at most [`REFUSALS_PER_SECOND`] a second
//! so that a flood of bad requests cannot flood the log.

use crate::auth::Principal;
use baton_core::{ApiError, ErrorCode, escape::bounded};
use std::sync::atomic::{AtomicU64, Ordering};

/// The target of every audit event.
pub const AUDIT_TARGET: &str = "baton::audit";

/// Most refusals logged in one second; the rest are counted and the count logged with the next.
pub const REFUSALS_PER_SECOND: u64 = 20;

/// Logs one action on a session and its outcome (`ok` or the refusal's code, with the refusal's
/// reason when it is a 401 or 403: which rule refused it).
pub fn action<T>(
    principal: &Principal,
    action: &'static str,
    session_id: &str,
    outcome: &Result<T, ApiError>,
) {
    let principal = principal.name();
    let reason = reason_of(outcome);
    let outcome = outcome_of(outcome);
    let session_id = bounded(session_id);
    tracing::info!(target: AUDIT_TARGET, event = action, principal, %session_id, outcome,
        reason = reason.as_deref(), "audit");
}

/// Why an audited refusal refused (its fixed message, bounded), or nothing.
fn reason_of<T>(outcome: &Result<T, ApiError>) -> Option<String> {
    match outcome {
        Err(error) if is_audited_refusal(error.code) => Some(bounded(&error.error).to_string()),
        _ => None,
    }
}

/// `ok`, or the refusal's code.
fn outcome_of<T>(outcome: &Result<T, ApiError>) -> &'static str {
    match outcome {
        Ok(_) => "ok",
        Err(error) => error.code.as_str(),
    }
}

/// Logs a start and, when it answered a session token, the token's mint; a start refused by
/// policy (401, 403) is logged too, with the rule that refused it (no session was made).
pub fn started(principal: &Principal, started: &Result<baton_core::api::StartResponse, ApiError>) {
    match started {
        Ok(answer) => new_session(principal, &answer.session_id, answer.token.is_some()),
        Err(error) if is_audited_refusal(error.code) => {
            action(principal, "start", "", started);
        }
        Err(_) => {}
    }
}

/// Logs a new session (a start or a fork) and, when `minted`, the mint of its token.
pub fn new_session(principal: &Principal, session_id: &str, minted: bool) {
    action(principal, "start", session_id, &Ok::<(), ApiError>(()));
    if minted {
        action(principal, "token_mint", session_id, &Ok::<(), ApiError>(()));
    }
}

/// Logs a token's mint or revocation by `principal`: `subject` is whom the token is for
/// (`user:<userId>`, `session:<root>`), never the token itself.
pub fn token<T>(
    principal: &Principal,
    event: &'static str,
    subject: &str,
    outcome: &Result<T, ApiError>,
) {
    let principal = principal.name();
    let outcome = outcome_of(outcome);
    tracing::info!(target: AUDIT_TARGET, event, principal, subject, outcome, "audit");
}

/// The second the refusal window is in, and how many refusals it logged (high 32 bits: the
/// second; low 32 bits: the count), and how many were left out since the last one logged.
static WINDOW: AtomicU64 = AtomicU64::new(0);
static SUPPRESSED: AtomicU64 = AtomicU64::new(0);

/// Logs a refused request (401 `unauthorized`, 403 `forbidden` or `session_mismatch`) with its
/// route and reason, within the per-second bound.
pub fn refusal(route: &str, error: &ApiError, principal: Option<&Principal>) {
    let code = error.code;
    let second = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        & 0xffff_ffff;
    let window = WINDOW
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |window| {
            let (at, count) = (window >> 32, window & 0xffff_ffff);
            Some(if at == second {
                (at << 32) | (count + 1)
            } else {
                second << 32 | 1
            })
        })
        .unwrap_or_default();
    let count = if window >> 32 == second {
        (window & 0xffff_ffff) + 1
    } else {
        1
    };
    if count > REFUSALS_PER_SECOND {
        SUPPRESSED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let suppressed = SUPPRESSED.swap(0, Ordering::Relaxed);
    tracing::warn!(
        target: AUDIT_TARGET,
        event = "refused",
        route = %bounded(route),
        code = code.as_str(),
        reason = %bounded(&error.error),
        principal = principal.map(Principal::name).unwrap_or_default(),
        suppressed_before = suppressed,
        "audit"
    );
}

/// Whether a refusal is one the audit log records.
pub fn is_audited_refusal(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::Unauthorized | ErrorCode::Forbidden | ErrorCode::SessionMismatch
    )
}

/// The audit name of a resume: `rewind` for one from a checkpoint, else `resume`.
pub fn audit_name_of(resume: &baton_core::api::Resume) -> &'static str {
    match resume {
        baton_core::api::Resume::FromCheckpoint { .. } => "rewind",
        _ => "resume",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_past_the_bound_are_counted_not_logged() {
        SUPPRESSED.store(0, Ordering::Relaxed);
        // Two windows at the most in so short a loop: at most twice the bound is logged.
        for _ in 0..(2 * REFUSALS_PER_SECOND + 5) {
            let error = ApiError::new(ErrorCode::Unauthorized, "no credential");
            refusal("/status", &error, None);
        }
        assert!(SUPPRESSED.load(Ordering::Relaxed) >= 5);
        assert!(is_audited_refusal(ErrorCode::SessionMismatch));
        assert!(!is_audited_refusal(ErrorCode::ValidationError));
    }
}
