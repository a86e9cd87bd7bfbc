//! The start marker of an at-most-once server tool call: written before the tool runs, so that
//! an attempt that finds it (and no result) knows an earlier attempt may have run the tool.

use super::{
    Error, StepRef, Store, Written, now_ms, replies::WriteReply, scripts::MARK_TOOL_STARTED,
};

impl Store {
    /// Records that call `tool_call_id` of `step` is about to run: [`Written::New`] when this
    /// attempt is the first to start it, [`Written::AlreadyDone`] when an earlier attempt did
    /// (or the step is already committed). The marker lives in the staged hash and goes with
    /// the step's commit.
    pub async fn mark_tool_started(
        &self,
        step: StepRef<'_>,
        tool_call_id: &str,
    ) -> Result<Written, Error> {
        let reply: WriteReply = MARK_TOOL_STARTED
            .on(self, step.address)
            .arg(step.run_id)
            .arg(step.step)
            .arg(tool_call_id)
            .arg(now_ms())
            .run(self)
            .await?;
        self.step_written(step, reply)
    }
}
