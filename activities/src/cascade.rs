//! The cascade up a session tree: a child's run that ends answers its parent's sub-agent call
//! when the parent is suspended on it, and the last answer of the parent's batch resumes the
//! parent (whose own end then does the same for its parent). Each parent continues only when
//! its children's results are in, and nothing waits in a workflow meanwhile.

use crate::{
    AgentActivities,
    failure::Error,
    io::{ActivityPolicy, ParentNext, RunInput},
};
use baton_core::{
    AgentRegistry, ErrorCode, Store,
    store::{
        self, Answer, ChildEnd, Claim, NewRunId, ParentReport, ResumeEntry, RunClaim, Status,
        StoredAnswer,
    },
    subagent,
};

impl AgentActivities {
    /// The body of `recheck_children`, after a parent's step suspended awaiting children: a
    /// child that ended before the parent's suspension was committed found no call to answer,
    /// so its report is made here instead (the same idempotent report, claiming the same run).
    pub(crate) async fn report_ended_children(
        &self,
        parent: &store::SessionAddress,
        policy: &ActivityPolicy,
    ) -> Result<ParentNext, Error> {
        let children = self.store.children(parent).await?;
        for call in self.store.pending_calls(parent).await? {
            if !call.kind.is_sub_agent() {
                continue;
            }
            let Some(child_id) = children.get(&call.tool_call_id) else {
                continue;
            };
            let child = store::SessionAddress {
                root_session_id: parent.root_session_id.clone(),
                session_id: child_id.clone(),
            };
            let Some(state) = self.store.session(&child).await? else {
                continue;
            };
            if !state.status.is_terminal() {
                continue;
            }
            let child_run = RunInput::of_session(child, &state, &self.registry, policy.clone());
            if let next @ ParentNext::Resume { .. } = self.report_end_to_parent(&child_run).await? {
                return Ok(next);
            }
        }
        Ok(ParentNext::Nothing)
    }

    /// The body of `report_to_parent`, after a child's run has ended.
    pub(crate) async fn report_end_to_parent(&self, input: &RunInput) -> Result<ParentNext, Error> {
        let child = &input.address;
        let Some((parent, tool_call_id)) = self.store.parent_of(child).await? else {
            return Ok(ParentNext::Nothing);
        };
        let Some(state) = self.store.session(child).await? else {
            return Ok(ParentNext::Nothing);
        };
        if !state.status.is_terminal() {
            return Ok(ParentNext::Nothing);
        }
        let Some(parent_state) = self.store.session(&parent).await? else {
            return Ok(ParentNext::Nothing);
        };
        let parent_agent = self.agent(&parent_state.agent_type)?;
        let tool_name = subagent::tool_name(&input.agent_type);
        let sub_agent = parent_agent.sub_agent(&tool_name).ok_or_else(|| {
            Error::typed(
                ErrorCode::Internal,
                format!(
                    "{} has no sub-agent {}",
                    parent_agent.name(),
                    input.agent_type
                ),
            )
        })?;
        let Some((status, outcome)) = super::subagent::child_outcome(sub_agent, &state) else {
            return Ok(ParentNext::Nothing);
        };
        let answer = StoredAnswer {
            answer: Answer::Outcome { outcome },
            submitted_at: store::now_ms(),
        };
        let output = match status {
            baton_core::chunk::EndStatus::Completed => state.output.as_deref(),
            _ => None,
        };
        let report = self
            .store
            .report_to_parent(
                input.step(state.step_count).run_ref(),
                &parent,
                &answer,
                ChildEnd {
                    child_session_id: &child.session_id,
                    tool_call_id: &tool_call_id,
                    status,
                    output,
                },
            )
            .await?;
        self.resume_answered_parent(&parent, &parent_state, report, &input.policy)
            .await
    }

    /// After a call of `parent` was answered by a child's end (`report`): when that completed
    /// the parent's batch, claims the parent for its resumed run (derived from the suspended
    /// run, so a retried report claims the same one), which the caller starts.
    pub(crate) async fn resume_answered_parent(
        &self,
        parent: &store::SessionAddress,
        parent_state: &store::SessionState,
        report: ParentReport,
        policy: &ActivityPolicy,
    ) -> Result<ParentNext, Error> {
        let parent_agent = self.agent(&parent_state.agent_type)?;
        let ParentReport::Answered {
            parent_status,
            parent_run_id,
            open_calls,
            suspended_run_id,
        } = report
        else {
            return Ok(ParentNext::Nothing);
        };
        // Derived from the suspended run, so that a retried report claims the same run; a
        // retry after the claim finds the session held by it (its suspended run set aside until
        // the drain), and the claim answers that run, which the workflow then starts.
        let suspended = match (parent_status, &suspended_run_id) {
            (Status::Active, Some(suspended)) => suspended,
            _ => &parent_run_id,
        };
        let run_id = subagent::parent_resume_run_id(&parent.session_id, suspended);
        let already_claimed = parent_status == Status::Active && parent_run_id == run_id;
        if open_calls > 0 || !(parent_status == Status::SuspendedClientTool || already_claimed) {
            return Ok(ParentNext::Nothing);
        }
        let claim = self
            .store
            .claim_new_run(
                parent,
                RunClaim {
                    agent_type: parent_agent.name(),
                    stream_id: &parent_state.stream_id,
                    run_id: NewRunId::Derived(run_id),
                },
                &ResumeEntry {
                    expected_run_id: Some(parent_run_id),
                    ..ResumeEntry::default()
                },
            )
            .await?;
        // Resumed or stopped meanwhile (a resume on the root, a deadline): not ours.
        let Claim::Claimed(claimed) = claim else {
            return Ok(ParentNext::Nothing);
        };
        tracing::info!(
            session = %parent.session_id,
            run_id = %claimed.run_id,
            "the last child's answer resumes its parent"
        );
        Ok(ParentNext::Resume {
            run: Box::new(RunInput::resumed(
                parent.clone(),
                parent_agent,
                &claimed,
                &parent_state.stream_id,
                policy.clone(),
            )),
            workflow_id: claimed.workflow_id,
        })
    }
}

/// From outside a workflow, reports the children of `parent` that have ended while it awaits
/// them: the children of a session a rewind gave its sub-agent calls back to, or a child the
/// zombie sweep failed (whose own workflow, gone, could not report). The same idempotent report
/// a child's workflow makes; when it completes the parent's batch the parent is claimed, and the
/// caller starts the returned run's workflow.
pub async fn report_ended_children(
    store: &Store,
    registry: &AgentRegistry,
    parent: &store::SessionAddress,
    policy: &ActivityPolicy,
) -> Result<ParentNext, ReportError> {
    // The heartbeat interval is for activities; this report runs none.
    let reporter = AgentActivities::new(
        store.clone(),
        registry.clone(),
        std::time::Duration::from_secs(5),
    );
    reporter
        .report_ended_children(parent, policy)
        .await
        .map_err(|error| match error {
            Error::Store(error) => ReportError::Store(error),
            Error::Typed { code, message } => ReportError::Typed { code, message },
            other => ReportError::Typed {
                code: ErrorCode::Internal,
                message: format!("{other:?}"),
            },
        })
}

/// Why [`report_ended_children`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] store::Error),
    /// The tree's agents do not match the registry (a parent without the child's sub-agent).
    #[error("{message}")]
    Typed { code: ErrorCode, message: String },
}

/// A report's failure as a client of the operation that made it sees it: a store error by the
/// store's one conversion, a typed one with its code.
impl From<ReportError> for baton_core::ApiError {
    fn from(error: ReportError) -> Self {
        match error {
            ReportError::Store(error) => error.into(),
            ReportError::Typed { code, message } => Self::new(code, message),
        }
    }
}
