//! What stands in for heartbeats when a model step runs as a local activity. Such a step cannot
//! heartbeat, and Temporal tells the workflow of a cancellation only in a later workflow task,
//! which waits for the step (up to the task's heartbeat, 80% of its time-out). A stop writes
//! Redis before it cancels the workflow, so the step asks Redis instead, once a heartbeat period.

use crate::{AgentActivities, failure::Error, heartbeat::periodic, io::StepInput};
use baton_core::ErrorCode;
use std::future::Future;
use temporalio_sdk::activities::ActivityContext;

impl AgentActivities {
    /// Runs `work`, the body of an activity of `input`'s run. A local activity's body is
    /// dropped (closing its model call's stream, its tools' futures) as soon as a check finds
    /// the run no longer running: stopped, or no longer the session's run. Its writes would be
    /// refused anyway; dropping it spares the model's tokens and a worker slot.
    pub(crate) async fn stopped_with_run<T>(
        &self,
        ctx: &ActivityContext,
        input: &StepInput,
        work: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        if !ctx.info().is_local {
            // A regular activity learns of a cancellation from its heartbeats' answers.
            return work.await;
        }
        let every = self.heartbeat_every;
        let watch = async {
            let mut ticker = periodic(every);
            loop {
                ticker.tick().await;
                // Redis trouble here says nothing about the run; the work's own writes will.
                if let Ok(false) = self.store.run_is_live(input.run_ref()).await {
                    return;
                }
            }
        };
        tokio::select! {
            outcome = work => outcome,
            () = watch => {
                tracing::info!(
                    session = %input.address.session_id,
                    run = %input.run_id,
                    step = input.step,
                    "the run stopped while its step ran; the step is dropped"
                );
                Err(Error::typed(
                    ErrorCode::RunNotActive,
                    "the run stopped while its model step ran",
                ))
            }
        }
    }
}
