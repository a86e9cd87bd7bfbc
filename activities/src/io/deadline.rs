//! A suspended run's deadline: its workflow's input and start, what its activity found and how
//! it ended.

use super::run::RunInput;
use serde::{Deserialize, Serialize};
use temporalio_sdk::{ChildWorkflowOptions, ParentClosePolicy};

/// Input of the deadline workflow of a suspended run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadlineInput {
    /// The suspended run; the input of the run to start mirrors it.
    pub run: RunInput,
    pub wake_at: u64,
}

/// How a suspended run's deadline workflow is started, made in one place for both who start
/// one: the run's workflow when the run suspends (as a child, with [`Self::child_options`]) and
/// the server when a rewind suspends without a workflow of its own (with the options of every
/// workflow it starts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadlineStart {
    /// `deadline__<session>__<suspended run>`: unique per suspended run.
    pub workflow_id: String,
    pub input: DeadlineInput,
}

impl DeadlineStart {
    /// The deadline workflow of `run`, which suspended on calls whose earliest deadline is
    /// `wake_at` (ms since the epoch).
    pub fn new(run: RunInput, wake_at: u64) -> Self {
        Self {
            workflow_id: format!("deadline__{}__{}", run.address.session_id, run.run_id),
            input: DeadlineInput { run, wake_at },
        }
    }

    /// The options of the deadline workflow as a child of the run that suspended: abandoned, so
    /// that it outlives that run's workflow, which ends at once.
    pub fn child_options(&self) -> ChildWorkflowOptions {
        ChildWorkflowOptions::builder()
            .workflow_id(self.workflow_id.clone())
            .parent_close_policy(ParentClosePolicy::Abandon)
            .build()
    }
}

/// What the deadline activity found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum DeadlineCheck {
    /// The session was claimed for this new run: start its workflow.
    Resume {
        run: Box<RunInput>,
        workflow_id: String,
    },
    /// Some calls of the batch are still open: check again then.
    WaitUntil { wake_at: u64 },
    /// The suspended run is no longer waiting (answered and resumed, stopped, ...): nothing to do.
    Nothing,
}

/// How a deadline workflow ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum DeadlineOutcome {
    Resumed { run_id: String, workflow_id: String },
    Nothing,
}
