//! The producer mount: the remote-agent protocol's eight routes,
//! `{base}/{agentType}/(start|resume|sse|status|snapshot|usage|interrupt|abort)`, over the
//! operations (`crate::ops`), so that a consumer in another service (another Baton, or any
//! service speaking the protocol) can run this server's agents as its sub-agents.
//!
//! A [`Mount`] says where the routes live, which agent types they serve and at what fidelity
//! (a state projection and a usage projection). Its answers are the protocol's shapes
//! (`baton_core::remote`) and its refusals one envelope, [`error::MountError`]. The server's
//! auth gates every route, fail-closed. One file per concern: `error.rs` (the envelope),
//! `guard.rs` (auth, the agent type and session checks, bodies), `start.rs`, `control.rs`
//! (resume, interrupt, abort), `reads.rs` (status, snapshot, usage), `sse.rs` (the stream,
//! projected); the [`Mount`] declaration and its projections are `crate::mount_spec`'s. Beyond the protocol,
//! `submit.rs` (`{base}/{agentType}/submit`) takes a person's answer that a consumer relays to
//! a paused session's call, which `status` lists in `pendingCalls`.

mod control;
mod error;
mod guard;
mod reads;
mod sse;
mod start;
mod submit;

pub use crate::mount_spec::{
    DEFAULT_BASE_PATH, Mount, StateProjection, UsageProjection, check_mounts,
};

use crate::state::AppState;
use axum::{
    Router,
    middleware::from_fn_with_state,
    routing::{get, post},
};
use baton_core::store::StopKind;
use std::sync::Arc;

/// What a mount's handlers share: the server's state and the mount.
#[derive(Clone)]
pub(crate) struct MountState {
    pub(crate) app: AppState,
    pub(crate) mount: Arc<Mount>,
}

/// The routes of every mount of the server's options, each behind the server's auth.
pub(crate) fn routers(state: &AppState) -> Router<AppState> {
    state
        .options
        .mounts
        .iter()
        .fold(Router::new(), |router, mount| {
            router.merge(mount_router(state, mount))
        })
}

fn mount_router(state: &AppState, mount: &Mount) -> Router<AppState> {
    let shared = MountState {
        app: state.clone(),
        mount: Arc::new(mount.clone()),
    };
    let route = |action: &str| format!("{}/{{agent_type}}/{action}", mount.base_path);
    Router::new()
        .route(&route("start"), post(start::start))
        .route(&route("resume"), post(control::resume))
        .route(&route("submit"), post(submit::submit))
        .route(&route("interrupt"), control::stop(StopKind::Interrupt))
        .route(&route("abort"), control::stop(StopKind::Abort))
        .route(&route("status"), get(reads::status))
        .route(&route("snapshot"), get(reads::snapshot))
        .route(&route("usage"), get(reads::usage))
        .route(&route("sse"), get(sse::sse))
        .route_layer(from_fn_with_state(shared.clone(), guard::authenticate))
        .with_state(shared)
}
