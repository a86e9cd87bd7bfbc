//! How a remote child's turn end reads for its caller: paused for a person, still running past
//! the follow window, stale, or ended, and for an end the call's outcome (the output checked
//! against the tool's output schema, the child's error code, `sub_agent_interrupted`), its state
//! and its rollup. No I/O: the followers (`remote.rs`, `relay.rs`) act on it.

use baton_core::{
    ErrorCode, ToolError,
    chunk::{EndStatus, RunError},
    message::ToolOutcome,
    remote::Status,
    subagent::SubAgent,
    tool::codes,
};
use serde::Deserialize;
use serde_json::Value;

/// The `end` frame of a child's turn, as the protocol sends it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EndFrame {
    pub(super) status: Status,
    /// The child's sequence the end stands at (a paused end: its `suspended` chunk's).
    #[serde(default)]
    pub(super) sequence: u64,
    #[serde(default)]
    pub(super) output: Option<String>,
    #[serde(default)]
    pub(super) error: Option<RunError>,
    #[serde(default)]
    pub(super) usage: Option<Value>,
    #[serde(default)]
    pub(super) state: Option<Value>,
}

/// How a child's turn ended, for its caller.
pub(super) enum TurnEnd {
    /// Paused for a person: its calls are recorded in the caller.
    Paused,
    /// Still running past the follow window: the consumer's sweep looks at it later.
    Waiting,
    /// The caller moved on: nothing was written.
    Stale,
    Ended(Ending),
}

/// How a child's call ends for its caller, from its end frame (or a failure).
pub(super) struct Ending {
    pub(super) status: EndStatus,
    pub(super) outcome: ToolOutcome,
    pub(super) output: Option<String>,
    pub(super) state: Option<Value>,
    pub(super) usage: Option<Value>,
}

/// How a call ends for its caller, from the child's end frame or the call's failure.
pub(super) fn ending_of(sub_agent: &SubAgent, end: Result<EndFrame, ToolError>) -> Ending {
    let ending = |status, outcome, usage| Ending {
        status,
        outcome,
        output: None,
        state: None,
        usage,
    };
    let end = match end {
        Ok(end) => end,
        Err(error) => return ending(EndStatus::Failed, ToolOutcome::Error(error), None),
    };
    match end.status {
        Status::Completed => {
            let output = end.output.unwrap_or_default();
            let outcome = match sub_agent.result_of(&output) {
                Ok(value) => ToolOutcome::Result(value),
                Err(error) => ToolOutcome::Error(error),
            };
            Ending {
                status: EndStatus::Completed,
                outcome,
                output: Some(output),
                state: end.state,
                usage: end.usage,
            }
        }
        Status::Failed => {
            let error = end.error.map_or_else(
                || ToolError::new(codes::TOOL_FAILED, "the remote sub-agent failed"),
                |error| ToolError::new(error.code.as_str(), error.message),
            );
            ending(EndStatus::Failed, ToolOutcome::Error(error), end.usage)
        }
        Status::Interrupted => ending(
            EndStatus::Interrupted,
            ToolOutcome::Error(ToolError::new(
                codes::SUB_AGENT_INTERRUPTED,
                "the remote sub-agent was interrupted before it answered",
            )),
            end.usage,
        ),
        // A pause the producer lists no call of (a producer without Baton's `pendingCalls`):
        // nothing can be relayed.
        Status::Paused | Status::Running => ending(
            EndStatus::Failed,
            ToolOutcome::Error(ToolError::new(
                ErrorCode::ClientToolUnsupported.as_str(),
                "the remote sub-agent waits for a person, and its producer lists no call to \
                 relay (`pendingCalls` of its status)",
            )),
            end.usage,
        ),
    }
}
