//! A worker's sweeps, each a loop of idempotent passes that every worker runs on its own: the
//! zombie sweep (`zombie.rs`: sessions left `active` by a run whose workflow is gone) and the
//! deadline sweep (`deadline.rs`: far deadlines whose workflow is due to start), the callback
//! sweep (`callback.rs`: the producer mount's callbacks of ended turns) and the search index's
//! repair sweep (`index.rs`), and the remote-wait sweep (its pass in `crate::remote::wait`:
//! remote children that ran past their follower's window, polled until their turn ends).

mod callback;
mod deadline;
mod index;
mod zombie;

pub use crate::remote::{RemoteWaitSweep, RemoteWaitTargets, sweep_remote_waits_once};
pub use callback::{
    CallbackSweep, DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_AFTER, DEFAULT_RETRY_MAX, signature,
    sweep_callbacks, sweep_callbacks_once,
};
pub use deadline::{DeadlineSweep, sweep_deadlines, sweep_deadlines_once};
pub use index::{INDEX_SWEEP_EVERY, sweep_index, sweep_index_once};
pub use zombie::{sweep_once, sweep_zombies};

use baton_activities::io::ActivityPolicy;
use baton_core::AgentRegistry;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What the sweep needs to carry a failed child's end to its parent: the agents (to read the
/// child's outcome as its parent's sub-agent tool does), and where and how to start the
/// parent's resumed run.
#[derive(Clone)]
pub struct Cascade {
    pub registry: AgentRegistry,
    pub task_queue: String,
    pub policy: ActivityPolicy,
}

/// Runs the remote-wait sweep until `shutdown`.
pub async fn sweep_remote_waits(
    targets: RemoteWaitTargets,
    sweep: RemoteWaitSweep,
    shutdown: CancellationToken,
) {
    let http = reqwest::Client::new();
    repeat_until(sweep.every, &shutdown, "remote wait", || {
        sweep_remote_waits_once(&targets, &http, &sweep)
    })
    .await;
}

/// Runs `pass` every `every` until `shutdown`; a failed pass is logged, and the next one tries
/// again. The loop of each of a worker's sweeps (`what` names it in the log).
pub(crate) async fn repeat_until<T, Pass>(
    every: Duration,
    shutdown: &CancellationToken,
    what: &str,
    mut pass: impl FnMut() -> Pass,
) where
    Pass: Future<Output = Result<T, baton_core::store::Error>>,
{
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        if let Err(error) = pass().await {
            tracing::warn!(%error, sweep = what, "a sweep failed; it runs again later");
        }
    }
}
