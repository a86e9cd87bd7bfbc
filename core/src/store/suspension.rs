//! A run suspending on calls it cannot answer itself, and the answers that come for them: the
//! suspended commit, the pending calls and their owners, and the stored answers.

use super::{
    ApprovalDecision, Continuation, Error, PendingCall, SessionAddress, StepRef, Store, Suspension,
    Written, from_json,
    keys::Key,
    now_ms,
    replies::SubmitReply,
    scripts::{COMMIT_SUSPENDED_STEP, SUBMIT_ANSWER},
    to_json,
};
use crate::{
    chunk::{ChunkHeader, ChunkKind, encode_unsequenced},
    message::ToolOutcome,
};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A client's answer to a pending call, as stored until the call is drained into the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredAnswer {
    pub answer: Answer,
    pub submitted_at: u64,
}

/// What a client answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// A client tool's result or error.
    Outcome { outcome: ToolOutcome },
    /// A person's decision on an approval-gated call.
    Approval(ApprovalDecision),
}

/// How the store took a submitted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmitOutcome {
    Accepted(Continuation),
    /// The call already has an answer (or was drained); the stored one stands.
    AlreadyCompleted(Continuation),
    UnknownToolCall,
    /// The call's run is no longer the session's run; nothing was written.
    RunSuperseded,
    /// The call's run was stopped (interrupt or abort); nothing was written.
    RunStopped,
    /// An approval named another approval id than the pending call's; nothing was written.
    UnknownApproval,
}

/// The id an approval request is answered with: `<runId>::<toolCallId>`.
pub fn approval_id(run_id: &str, tool_call_id: &str) -> String {
    format!("{run_id}::{tool_call_id}")
}

/// The `tool_approval_request` chunk of a pending approval (none for a client call).
pub(super) fn approval_request_body(header: &ChunkHeader, call: &PendingCall) -> Option<String> {
    let approval_id = call.approval_id.as_ref()?;
    Some(encode_unsequenced(
        header,
        &ChunkKind::ToolApprovalRequest {
            step: call.step,
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            input: call.input.clone(),
            approval_id: approval_id.clone(),
        },
    ))
}

impl Store {
    /// Commits a step that awaits client calls and suspends the run (see
    /// `commit_suspended_step.lua`). `pending` holds one entry per awaited call, in call order.
    /// Idempotent per step.
    pub async fn commit_suspended_step(
        &self,
        step: StepRef<'_>,
        pending: &[PendingCall],
    ) -> Result<Written, Error> {
        let header = self.header(step.run());
        let tool_call_ids: Vec<String> = pending.iter().map(|p| p.tool_call_id.clone()).collect();
        let suspension = Suspension {
            run_id: step.run_id.to_owned(),
            step: step.step,
            tool_call_ids: tool_call_ids.clone(),
        };
        let step_end = encode_unsequenced(&header, &ChunkKind::StepEnd { step: step.step });
        let suspension_json = to_json(&suspension);
        let suspended = encode_unsequenced(
            &header,
            &ChunkKind::Suspended {
                step: step.step,
                tool_call_ids,
            },
        );
        let reply = self
            .commit_folding_state(step, |fold| {
                let mut invocation = COMMIT_SUSPENDED_STEP.on(self, step.address);
                invocation
                    .arg(step.run_id)
                    .arg(step.step)
                    .arg(now_ms())
                    .arg(&step_end)
                    .arg(&suspension_json)
                    .arg(&suspended)
                    .arg(&step.address.session_id)
                    .arg(&fold.before)
                    .arg(&fold.after)
                    .arg(&fold.body);
                for call in pending {
                    invocation
                        .arg(&call.tool_call_id)
                        .arg(to_json(call))
                        .arg(approval_request_body(&header, call).unwrap_or_default())
                        .arg(call.deadline_at);
                }
                invocation
            })
            .await?;
        reply.into_written(step.run_id, |detail| {
            self.inconsistent(
                step.address,
                format!("suspension at step {} refused: {detail}", step.step),
            )
        })
    }

    /// The calls a session waits on, each with the run that awaits it, in no particular order.
    pub async fn pending_calls(
        &self,
        address: &SessionAddress,
    ) -> Result<Vec<(PendingCall, String)>, Error> {
        let key = self.key(address, Key::Pending);
        let (calls, runs): (HashMap<String, String>, HashMap<String, String>) = redis::pipe()
            .hgetall(&key)
            .hgetall(self.key(address, Key::PendingRun))
            .query_async(&mut self.conn())
            .await?;
        calls
            .into_iter()
            .map(|(id, call)| {
                let run = runs.get(&id).cloned().ok_or_else(|| Error::Corrupt {
                    key: key.clone(),
                    reason: format!("pending call {id} has no run"),
                })?;
                Ok((from_json(&key, &call)?, run))
            })
            .collect()
    }

    /// One pending call of the session, if it is still pending.
    pub async fn pending_call(
        &self,
        address: &SessionAddress,
        tool_call_id: &str,
    ) -> Result<Option<PendingCall>, Error> {
        let key = self.key(address, Key::Pending);
        let call: Option<String> = self.conn().hget(&key, tool_call_id).await?;
        call.map(|call| from_json(&key, &call)).transpose()
    }

    /// The session that owns a pending client call, looked up on the root of its tree.
    pub async fn call_owner(
        &self,
        root_session_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<String>, Error> {
        let root = SessionAddress::root(root_session_id);
        Ok(self
            .conn()
            .hget(self.key(&root, Key::Ownership), tool_call_id)
            .await?)
    }

    /// Stores the answer to a pending call of `owner` (found through the root's ownership map);
    /// the first answer wins. An approval names `approval_id`, which the script compares with
    /// the pending call's. See `submit_answer.lua`.
    pub async fn submit_answer(
        &self,
        owner: &SessionAddress,
        tool_call_id: &str,
        approval_id: Option<&str>,
        answer: &StoredAnswer,
    ) -> Result<SubmitOutcome, Error> {
        let SubmitReply(outcome) = SUBMIT_ANSWER
            .on(self, owner)
            .arg(tool_call_id)
            .arg(to_json(answer))
            .arg(now_ms())
            .arg(&owner.session_id)
            .arg(approval_id.unwrap_or_default())
            .run(self)
            .await?;
        Ok(outcome)
    }

    /// The stored answers of a session's pending calls, by tool call id.
    pub async fn answers(
        &self,
        address: &SessionAddress,
    ) -> Result<HashMap<String, StoredAnswer>, Error> {
        let key = self.key(address, Key::Answers);
        let answers: HashMap<String, String> = self.conn().hgetall(&key).await?;
        answers
            .into_iter()
            .map(|(id, answer)| Ok((id, from_json(&key, &answer)?)))
            .collect()
    }
}
