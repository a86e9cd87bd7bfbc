//! Stopping a session's run (interrupt, abort): a durable stop record and the `end` chunk,
//! fenced on the run they were made for.

use super::{
    Error, RunRef, SessionAddress, SessionState, StopKind, StopRecord, Store, now_ms,
    replies::StopReply, scripts::STOP_RUN, to_json,
};
use crate::{
    ErrorCode,
    chunk::{ChunkKind, EndStatus, RunError, encode_unsequenced},
    message::{Message, ToolError, ToolOutcome, ToolResult, codes},
};

/// How often a stop reads the session again when the session moved between the read and the
/// script: another run took it, or the run committed a step (the stop names the step it
/// discards). Each retry means the session changed within that window of about a millisecond.
const STOP_ATTEMPTS: usize = 5;

/// How a stop request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The run is stopped; its workflow (if still running) should be cancelled.
    Stopped {
        run_id: String,
        /// The stopped run's workflow, as the state named it when the stop was made.
        workflow_id: Option<String>,
        /// The awaited calls the stop closed as not executed: (tool call id, tool name).
        closed_calls: Vec<(String, String)>,
    },
    SessionNotFound,
    /// Nothing runs (the session has ended).
    NotRunning {
        status: String,
    },
}

/// The `subagent_end` a stop writes for a session below the one it stops, not closed yet: how
/// it ended, if it has (its parent had not taken its result yet), else how the stop ends it.
fn closing_end(
    kind: StopKind,
    child: &str,
    tool_call_id: &str,
    state: Option<&SessionState>,
) -> ChunkKind {
    let (status, output, error) = match state.map(|state| (state.status, state)) {
        Some((super::Status::Completed, state)) => {
            (EndStatus::Completed, state.output.clone(), None)
        }
        Some((super::Status::Failed, state))
            if state
                .error
                .as_ref()
                .is_some_and(|e| e.code != ErrorCode::FrameworkCancelled) =>
        {
            let error = state
                .error
                .clone()
                .map(|e| ToolError::new(e.code.as_str(), e.message));
            (EndStatus::Failed, None, error)
        }
        _ => (
            match kind {
                StopKind::Interrupt => EndStatus::Interrupted,
                StopKind::Abort => EndStatus::Failed,
            },
            None,
            Some(ToolError::new(
                codes::SUB_AGENT_INTERRUPTED,
                "the sub-agent was stopped before it answered",
            )),
        ),
    };
    ChunkKind::SubagentEnd {
        sub_session_id: child.to_owned(),
        tool_call_id: tool_call_id.to_owned(),
        status,
        output,
        error,
    }
}

impl Store {
    /// Every session below `address` in its tree, parents before their children, each with the
    /// call of its parent that started it and its state: none for a session that started no
    /// child (the common case costs one read).
    async fn sessions_below(
        &self,
        address: &SessionAddress,
    ) -> Result<Vec<(SessionAddress, String, Option<SessionState>)>, Error> {
        let children = self.children(address).await?;
        if children.is_empty() {
            return Ok(Vec::new());
        }
        let mut below = Vec::new();
        let mut parents = vec![(address.clone(), children)];
        while let Some((_parent, children)) = parents.pop() {
            let mut calls: Vec<_> = children.into_iter().collect();
            calls.sort();
            for (call, child_id) in calls {
                let child = SessionAddress {
                    root_session_id: address.root_session_id.clone(),
                    session_id: child_id,
                };
                let state = self.session(&child).await?;
                let grandchildren = self.children(&child).await?;
                if !grandchildren.is_empty() {
                    parents.push((child.clone(), grandchildren));
                }
                below.push((child, call, state));
            }
        }
        Ok(below)
    }

    /// Records a durable stop on the session's current run and ends it (see `stop_run.lua`).
    /// The stop record and the `end` chunk name the run read from the state; if another run
    /// took the session before the script ran, nothing is written and the stop is made again
    /// for that run, so the run that is stopped is always the one they name.
    pub async fn stop_run(
        &self,
        address: &SessionAddress,
        kind: StopKind,
    ) -> Result<Stopped, Error> {
        let index_address = address.clone();
        let mark = self.mark_for_index(&index_address).await?;
        let result = self.stop_run_unindexed(address, kind).await;
        self.reindex_after_change(&index_address, mark).await;
        result
    }

    /// [`Self::stop_run`] before the search index follows it.
    async fn stop_run_unindexed(
        &self,
        address: &SessionAddress,
        kind: StopKind,
    ) -> Result<Stopped, Error> {
        for _ in 0..STOP_ATTEMPTS {
            let Some(state) = self.session(address).await? else {
                return Ok(Stopped::SessionNotFound);
            };
            match self.stop_run_as_read(address, kind, &state).await? {
                StopReply::Stopped { run_id, closed } => {
                    // A stopped suspension leaves the deadline index, as a drained one does (best
                    // effort: a member left behind costs the deadline sweep one look).
                    if state.status == super::Status::SuspendedClientTool
                        && let Err(error) = self.unindex_deadlines(address, &[&run_id]).await
                    {
                        tracing::warn!(session = %address.session_id, %error,
                            "the deadline index keeps a stopped run");
                    }
                    let workflow_id = state.workflow_id;
                    return Ok(Stopped::Stopped {
                        run_id,
                        workflow_id,
                        closed_calls: closed,
                    });
                }
                StopReply::SessionNotFound => return Ok(Stopped::SessionNotFound),
                StopReply::NotRunning { status } => return Ok(Stopped::NotRunning { status }),
                StopReply::Superseded { run_id } => {
                    tracing::debug!(
                        session = %address.session_id,
                        %run_id,
                        "the session moved (another run, or a committed step) before the stop: reading it again"
                    );
                }
            }
        }
        // Runs kept replacing each other faster than the stop could name one: as claim_resume
        // says of a run it no longer finds, the session is superseded.
        Ok(Stopped::NotRunning {
            status: "superseded".to_owned(),
        })
    }

    /// One attempt of a stop of the run `state` names: the script refuses it
    /// ([`StopReply::Superseded`]) if the session's run is another one by now.
    pub(super) async fn stop_run_as_read(
        &self,
        address: &SessionAddress,
        kind: StopKind,
        state: &SessionState,
    ) -> Result<StopReply, Error> {
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
            state: None,
        };
        let header = self.header(RunRef {
            address,
            stream_id: &state.stream_id,
            run_id: &state.run_id,
        });
        let mut invocation = STOP_RUN.on(self, address);
        invocation
            .arg(kind.as_str())
            .arg(now)
            .arg(to_json(&stop))
            .arg(to_json(&error))
            .arg(encode_unsequenced(&header, &end))
            .arg(&state.run_id)
            .arg(state.status.as_str())
            .arg(self.session_retention_ms)
            .arg(state.step_count)
            .arg(encode_unsequenced(
                &header,
                &ChunkKind::StepDiscarded {
                    step: state.step_count + 1,
                },
            ));
        // The sessions below this one, for the script to close those still open on the root's
        // stream (a subagent_end each, before this one's end), deepest first.
        let below = self.sessions_below(address).await?;
        invocation.arg(below.len());
        for (child, call, child_state) in below.iter().rev() {
            invocation.arg(&child.session_id).arg(encode_unsequenced(
                &header,
                &closing_end(kind, &child.session_id, call, child_state.as_ref()),
            ));
        }
        // A suspended run's awaited calls are closed by the stop, as not executed.
        // In call order, as a drain would write them.
        let mut pending: std::collections::HashMap<String, _> = self
            .pending_calls(address)
            .await?
            .into_iter()
            .map(|call| (call.tool_call_id.clone(), call))
            .collect();
        let awaited = state
            .suspension
            .as_ref()
            .map(|s| s.tool_call_ids.as_slice());
        for id in awaited.unwrap_or_default() {
            let Some(call) = pending.remove(id) else {
                continue;
            };
            let result = ToolResult::new(
                &call.tool_call_id,
                &call.tool_name,
                ToolOutcome::Error(ToolError::new(
                    codes::NOT_EXECUTED,
                    "the run was stopped before this call was carried on",
                )),
            );
            let tool_end = ChunkKind::tool_end(
                call.step,
                &result.tool_call_id,
                &result.tool_name,
                &result.outcome,
            );
            invocation
                .arg(&call.tool_call_id)
                .arg(&call.tool_name)
                .arg(to_json(&Message::Tool(result)))
                .arg(encode_unsequenced(&header, &tool_end));
        }
        invocation.run(self).await
    }
}
