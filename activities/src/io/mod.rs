//! Inputs and outputs of the workflow and its activities. Temporal stores them in history, so
//! they are small (ids, counts, options) and change only by adding optional fields.
//! One file per payload family: a run's (`run.rs`), a step's (`step.rs`), a sub-agent call's
//! (`subagent.rs`) and a suspended run's deadline (`deadline.rs`).

mod deadline;
mod run;
mod step;
mod subagent;
#[cfg(test)]
pub(crate) mod tests;

pub use deadline::{DeadlineCheck, DeadlineInput, DeadlineOutcome, DeadlineStart};
pub use run::{ActivityPolicy, FailInput, RunInput, RunOutcome, RunShape, SuspendedRun};
pub use step::{StepInput, StepPlan, ToolAsked, ToolInput};
pub use subagent::{
    ChildStart, ParentNext, RemoteFollowInput, SubAgentCall, SubAgentCalls, SubAgentEnd,
    SubAgentStart,
};
