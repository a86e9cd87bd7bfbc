//! Stopping a session's run (interrupt, abort): a durable stop record and the `end` chunk.

use super::{
    Error, SessionAddress, StopKind, StopRecord, Store, now_ms, replies::StopReply,
    scripts::STOP_RUN, to_json,
};
use crate::{
    ErrorCode,
    chunk::{ChunkKind, EndStatus, RunError, encode_unsequenced},
};

/// How a stop request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The run is stopped; its workflow (if still running) should be cancelled.
    Stopped {
        run_id: String,
    },
    SessionNotFound,
    /// Nothing runs (the session has ended).
    NotRunning {
        status: String,
    },
}

impl Store {
    /// Records a durable stop on the session's current run and ends it (see `stop_run.lua`).
    pub async fn stop_run(
        &self,
        address: &SessionAddress,
        kind: StopKind,
    ) -> Result<Stopped, Error> {
        let Some(state) = self.session(address).await? else {
            return Ok(Stopped::SessionNotFound);
        };
        let now = now_ms();
        let stop = StopRecord {
            run_id: state.run_id.clone(),
            kind,
            at: now,
        };
        let error = RunError {
            code: ErrorCode::FrameworkCancelled,
            message: "the run was aborted".to_owned(),
        };
        let end = ChunkKind::End {
            status: match kind {
                StopKind::Interrupt => EndStatus::Interrupted,
                StopKind::Abort => EndStatus::Failed,
            },
            output: None,
            error: (kind == StopKind::Abort).then(|| error.clone()),
            usage: {
                let mut rollup = self.usage_rollup(address).await?.unwrap_or_default();
                // The stop's own abort is counted by the script that writes this chunk.
                rollup.aborts += u64::from(kind == StopKind::Abort);
                rollup
            },
        };
        let reply: StopReply = STOP_RUN
            .on(self, address)
            .arg(kind.as_str())
            .arg(now)
            .arg(to_json(&stop))
            .arg(to_json(&error))
            .arg(encode_unsequenced(
                &self.header(address, &state.stream_id, &state.run_id),
                &end,
            ))
            .run(self)
            .await?;
        Ok(match reply {
            StopReply::Stopped { run_id } => Stopped::Stopped { run_id },
            StopReply::SessionNotFound => Stopped::SessionNotFound,
            StopReply::NotRunning { status } => Stopped::NotRunning { status },
        })
    }
}
