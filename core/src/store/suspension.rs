//! A run suspending on calls it cannot answer itself, and the answers that come for them: the
//! suspended commit, the pending calls and their owners, and the stored answers.

use super::{
    ApprovalDecision, Continuation, Error, PendingCall, PendingKind, SessionAddress, StepRef,
    Store, StoredSuspension, Written,
    custom_state::StateFold,
    flag, from_json,
    keys::{Key, state_field},
    now_ms,
    replies::{AloneSubmitReply, SubmitReply, SubmitReplyFields},
    scripts::{COMMIT_SUSPENDED_STEP, Invocation, SUBMIT_ANSWER},
    to_json,
};
use crate::{
    chunk::{ChunkHeader, ChunkKind, encode_unsequenced},
    message::{ToolOutcome, finish_metadata},
    tool::ask::PersonAnswer,
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

impl From<crate::submit::SubmitRequest> for Answer {
    /// What a submit answers: its tool's outcome, or its decision.
    fn from(request: crate::submit::SubmitRequest) -> Self {
        match request {
            crate::submit::SubmitRequest::ClientToolResult(submit) => Self::Outcome {
                outcome: submit.outcome,
            },
            crate::submit::SubmitRequest::ApprovalResponse(submit) => {
                Self::Approval(submit.decision)
            }
        }
    }
}

/// An answer to submit (see [`Store::submit_answer`]).
#[derive(Debug, Clone, Copy)]
pub struct SubmitAttempt<'a> {
    /// The session the submit names: the root of the tree whose call it answers.
    pub root_session_id: &'a str,
    pub tool_call_id: &'a str,
    /// The approval request an approval answers (none for a client tool's answer).
    pub approval_id: Option<&'a str>,
    pub answer: &'a StoredAnswer,
    /// The root's submit rate limit (`None`: no limit).
    pub submits_per_minute: Option<u32>,
    /// The (agent type, tool name) pairs whose schema refuses this answer: the caller checks the
    /// answer against every tool it might answer, the script knows which one it does.
    pub refused_by_schema: &'a [(String, String)],
}

/// What a submit did, with what it learnt of the call (empty where it did not get that far).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub outcome: SubmitOutcome,
    /// The session whose keys the answer went to (the root, or the call's owner below it).
    pub owner_session_id: String,
    pub tool_name: String,
    /// The owner's current run.
    pub run_id: String,
}

/// How the store took a submitted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmitOutcome {
    Accepted(Continuation),
    /// The call already has an answer (or was drained); the stored one stands.
    AlreadyCompleted(Continuation),
    UnknownToolCall,
    /// The call's run was stopped (interrupt or abort); nothing was written.
    RunStopped,
    /// An approval named another approval id than the pending call's; nothing was written.
    UnknownApproval,
    /// The root's submit bucket is empty: nothing was written; a token comes after this wait.
    RateLimited(std::time::Duration),
    /// The call belongs to this session below the root (answered there by a second invocation).
    OwnedBy(String),
    /// The call awaits a sub-agent, which no client answers; nothing was written.
    AwaitsSubAgent,
    /// The answer is not of the call's kind (the pending call's kind is given).
    WrongKind(PendingKind),
    /// The answer fails the schema of the call's tool, of this agent type; nothing was written.
    RefusedBySchema {
        agent_type: String,
    },
    /// The call is a tool's that asked a person: the answer's content must match this schema,
    /// which the submit checks before it goes again. Never what [`Store::submit_answer`]
    /// answers.
    CheckAgainstQuestion(serde_json::Value),
    /// The answer's content does not match the question the call asked (the first mismatch);
    /// nothing was written.
    RefusedByQuestion(String),
}

/// The id an approval request is answered with: `<runId>::<toolCallId>`.
pub fn approval_id(run_id: &str, tool_call_id: &str) -> String {
    format!("{run_id}::{tool_call_id}")
}

/// The chunk that asks a person for a pending call as it is written: `tool_approval_request` for
/// an approval, `question` for a tool's question (none for a client call).
pub(super) fn person_request_body(header: &ChunkHeader, call: &PendingCall) -> Option<String> {
    if let Some(ask) = &call.asked {
        return Some(encode_unsequenced(
            header,
            &ChunkKind::Question {
                step: call.step,
                question_id: call.tool_call_id.clone(),
                tool_call_id: ask.tool_call_id.clone(),
                tool_name: ask.tool_name.clone(),
                message: ask.asked.message.clone(),
                schema: ask.asked.schema.clone(),
                deadline_at: call.deadline_at,
            },
        ));
    }
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

/// `commit_suspended_step.lua`'s arguments for a step's suspension on `pending`, encoded once
/// for the commit and its run again with the step's state patches folded.
pub(super) struct SuspensionArguments<'a> {
    header: ChunkHeader,
    pending: &'a [PendingCall],
    step_end: String,
    suspension: String,
    suspended: String,
    finish: String,
}

impl<'a> SuspensionArguments<'a> {
    pub(super) fn new(store: &Store, step: StepRef<'_>, pending: &'a [PendingCall]) -> Self {
        let header = store.header(step.run());
        let tool_call_ids: Vec<String> = pending.iter().map(|p| p.tool_call_id.clone()).collect();
        let suspension = to_json(&StoredSuspension::new(step.step, tool_call_ids.clone()));
        let step_end = encode_unsequenced(&header, &ChunkKind::StepEnd { step: step.step });
        let suspended = encode_unsequenced(
            &header,
            &ChunkKind::Suspended {
                step: step.step,
                tool_call_ids,
            },
        );
        let finish = to_json(&finish_metadata(header.timestamp, None));
        Self {
            header,
            pending,
            step_end,
            suspension,
            suspended,
            finish,
        }
    }

    /// Adds them to `invocation`, with the step's state patches as `fold` says.
    pub(super) fn add_to(
        &self,
        invocation: &mut Invocation<'_>,
        step: StepRef<'_>,
        fold: &StateFold,
    ) {
        invocation
            .arg(step.run_id)
            .arg(step.step)
            .arg(now_ms())
            .arg(&self.step_end)
            .arg(&self.suspension)
            .arg(&self.suspended)
            .arg(&step.address.session_id)
            .arg(&fold.before)
            .arg(&fold.after)
            .arg(&fold.body)
            .arg(&self.finish);
        for call in self.pending {
            invocation
                .arg(&call.tool_call_id)
                .arg(to_json(call))
                .arg(person_request_body(&self.header, call).unwrap_or_default())
                .arg(call.deadline_at)
                .arg(
                    call.asked
                        .as_ref()
                        .map_or(&call.tool_call_id, |ask| &ask.tool_call_id),
                );
        }
    }
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
        self.commit_suspended_step_indexing(step, pending, None)
            .await
    }

    /// [`Self::commit_suspended_step`], putting the suspended run in the deadline index at
    /// `far_deadline` (its earliest deadline, beyond the deadline horizon) in the commit's round
    /// trip, after the commit: the sweep never finds the member before the suspension it
    /// stands for. A commit that is refused leaves a member the sweep drops (it checks each
    /// against its session).
    pub async fn commit_suspended_step_indexing(
        &self,
        step: StepRef<'_>,
        pending: &[PendingCall],
        far_deadline: Option<u64>,
    ) -> Result<Written, Error> {
        let arguments = SuspensionArguments::new(self, step, pending);
        // The index's mark, the commit and the far deadline go in one round trip; the mark first.
        let indexed = far_deadline
            .map(|wake_at| self.index_deadline_command(step.address, step.run_id, wake_at));
        let (mark, reply) = self
            .commit_folding_state_marked(
                step,
                |fold| {
                    let mut invocation = COMMIT_SUSPENDED_STEP.on(self, step.address);
                    arguments.add_to(&mut invocation, step, fold);
                    invocation
                },
                indexed,
            )
            .await?;
        let result = reply.into_written(step.run_id, |detail| {
            self.inconsistent(
                step.address,
                format!("suspension at step {} refused: {detail}", step.step),
            )
        });
        self.reindex_after_change(step.address, mark).await;
        result
    }

    /// The calls a session waits on, in no particular order.
    pub async fn pending_calls(&self, address: &SessionAddress) -> Result<Vec<PendingCall>, Error> {
        let key = self.key(address, Key::Pending);
        let calls: Vec<String> = self.conn().hvals(&key).await?;
        calls.iter().map(|call| from_json(&key, call)).collect()
    }

    /// The run a session's pending calls await (the session's: a claim or a release moves them
    /// all) and the calls, in no particular order; `None` when it waits on none.
    pub async fn pending_calls_with_run(
        &self,
        address: &SessionAddress,
    ) -> Result<Option<(String, Vec<PendingCall>)>, Error> {
        let key = self.key(address, Key::Pending);
        let (calls, run): (Vec<String>, Option<String>) = redis::pipe()
            .hvals(&key)
            .hget(self.key(address, Key::State), state_field::RUN_ID)
            .query_async(&mut self.conn())
            .await?;
        if calls.is_empty() {
            return Ok(None);
        }
        let run = run.ok_or_else(|| Error::Corrupt {
            key: key.clone(),
            reason: "pending calls of a session without a run".into(),
        })?;
        let calls = calls
            .iter()
            .map(|call| from_json(&key, call))
            .collect::<Result<_, _>>()?;
        Ok(Some((run, calls)))
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

    /// The session that owns a pending client call, looked up on the root of its tree: a session
    /// below the root has an ownership entry there, the root owns the calls it has pending.
    pub async fn call_owner(
        &self,
        root_session_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<String>, Error> {
        let root = SessionAddress::root(root_session_id);
        let (owner, pending_on_root): (Option<String>, bool) = redis::pipe()
            .hget(self.key(&root, Key::Ownership), tool_call_id)
            .hexists(self.key(&root, Key::Pending), tool_call_id)
            .query_async(&mut self.conn())
            .await?;
        Ok(owner.or_else(|| pending_on_root.then(|| root_session_id.to_owned())))
    }

    /// Submits an answer in one script (`submit_answer.lua`): takes a token from the root's
    /// submit bucket, checks the answer against the pending call (its kind, the approval id, the
    /// schema verdicts the caller passes) and stores it, first answer wins. A call owned by a
    /// session below the root takes a second invocation on that session's keys, which takes no
    /// second token.
    ///
    /// The continuation is the tree's: `awaiting_batch` while a call of any session of the tree
    /// is neither answered nor past its deadline, so the script reads every session's open calls
    /// (the members are read first; a session that joins the tree in between was started by a
    /// run that is active, so the tree is not suspended on it yet).
    pub async fn submit_answer(&self, attempt: &SubmitAttempt<'_>) -> Result<Submitted, Error> {
        // No mark first: a submit changes no status, only which calls wait on a person, and a
        // search reads that back from the session (a stale `awaiting` entry is dropped and
        // rewritten then), so the submit stays one round trip.
        let result = self.submit_answer_unindexed(attempt).await;
        self.reindex_after_change(&SessionAddress::root(attempt.root_session_id), 0)
            .await;
        result
    }

    /// [`Self::submit_answer`] before the search index follows it.
    async fn submit_answer_unindexed(
        &self,
        attempt: &SubmitAttempt<'_>,
    ) -> Result<Submitted, Error> {
        let root = SessionAddress::root(attempt.root_session_id);
        // First as the answer of a root alone, with the tree's members read in the same round
        // trip: the script refuses a tree with sessions below the root before writing anything,
        // and the answer goes again with their keys. A session that joins the tree in between
        // was started by a run that is active, so the tree is not suspended on it yet.
        let (members, alone) = self
            .submit_answer_alone(&root, attempt, attempt.submits_per_minute)
            .await?;
        let tree_keys = self.tree_open_call_keys(&root, members);
        let first = match alone {
            Some(first) => first,
            None => {
                self.submit_answer_on(
                    &root,
                    attempt,
                    attempt.submits_per_minute,
                    &tree_keys,
                    false,
                )
                .await?
            }
        };
        let second = match first.outcome {
            SubmitOutcome::OwnedBy(owner_session_id) => {
                let owner = SessionAddress {
                    root_session_id: attempt.root_session_id.to_owned(),
                    session_id: owner_session_id,
                };
                let mut second = self
                    .submit_answer_on(&owner, attempt, None, &tree_keys, false)
                    .await?;
                // The call moved to yet another session between the two: it is not this one's
                // to answer.
                if matches!(second.outcome, SubmitOutcome::OwnedBy(_)) {
                    second.outcome = SubmitOutcome::UnknownToolCall;
                }
                second
            }
            _ => first,
        };
        self.checked_against_question(attempt, &tree_keys, second)
            .await
    }

    /// A submit the script found to answer a tool's question (`check_asked`): refused when its
    /// content does not match the question's schema, else stored by the script again, on the
    /// same session and without a second token.
    async fn checked_against_question(
        &self,
        attempt: &SubmitAttempt<'_>,
        tree_keys: &[String],
        submitted: Submitted,
    ) -> Result<Submitted, Error> {
        let SubmitOutcome::CheckAgainstQuestion(schema) = &submitted.outcome else {
            return Ok(submitted);
        };
        let mismatch = match &attempt.answer.answer {
            Answer::Outcome { outcome } => PersonAnswer::from_outcome(outcome).mismatch(schema),
            Answer::Approval(_) => None,
        };
        if let Some(mismatch) = mismatch {
            return Ok(Submitted {
                outcome: SubmitOutcome::RefusedByQuestion(mismatch),
                ..submitted
            });
        }
        let owner = SessionAddress {
            root_session_id: attempt.root_session_id.to_owned(),
            session_id: submitted.owner_session_id.clone(),
        };
        let again = self
            .submit_answer_on(&owner, attempt, None, tree_keys, true)
            .await?;
        Ok(again)
    }

    /// The keys `submit_answer.lua` reads a tree's open calls from: (openDeadlines, children) of
    /// the root and of every session below it (`members`); none for a root alone.
    fn tree_open_call_keys(&self, root: &SessionAddress, mut members: Vec<String>) -> Vec<String> {
        if members.is_empty() {
            return Vec::new();
        }
        members.sort();
        let sessions = std::iter::once(root.clone()).chain(members.into_iter().map(|session_id| {
            SessionAddress {
                root_session_id: root.root_session_id.clone(),
                session_id,
            }
        }));
        sessions
            .flat_map(|address| {
                [
                    self.key(&address, Key::OpenDeadlines),
                    self.key(&address, Key::Children),
                ]
            })
            .collect()
    }

    /// The tree's members and `submit_answer.lua` for the root alone, in one round trip: the
    /// script's reply, `None` when the tree has sessions below the root (nothing written).
    async fn submit_answer_alone(
        &self,
        root: &SessionAddress,
        attempt: &SubmitAttempt<'_>,
        submits_per_minute: Option<u32>,
    ) -> Result<(Vec<String>, Option<Submitted>), Error> {
        let mut members = redis::cmd("SMEMBERS");
        members.arg(self.key(root, Key::Tree));
        let invocation =
            self.submit_invocation(root, attempt, submits_per_minute, &[], (true, false));
        let (members, AloneSubmitReply(reply)) = invocation.run_after(members, self).await?;
        Ok((members, reply.map(|reply| submitted(root, reply))))
    }

    async fn submit_answer_on(
        &self,
        owner: &SessionAddress,
        attempt: &SubmitAttempt<'_>,
        submits_per_minute: Option<u32>,
        tree_keys: &[String],
        asked_checked: bool,
    ) -> Result<Submitted, Error> {
        let invocation = self.submit_invocation(
            owner,
            attempt,
            submits_per_minute,
            tree_keys,
            (false, asked_checked),
        );
        let SubmitReply(reply) = invocation.run(self).await?;
        Ok(submitted(owner, reply))
    }

    /// `submit_answer.lua` on `owner`'s keys and `tree_keys`; `root_alone` for the answer of a
    /// root alone (no tree keys), which the script refuses in a tree; `asked_checked` once the
    /// answer was checked against the question of the call it answers.
    fn submit_invocation(
        &self,
        owner: &SessionAddress,
        attempt: &SubmitAttempt<'_>,
        submits_per_minute: Option<u32>,
        tree_keys: &[String],
        (root_alone, asked_checked): (bool, bool),
    ) -> Invocation<'static> {
        let kind = match attempt.answer.answer {
            Answer::Outcome { .. } => PendingKind::Client,
            Answer::Approval(_) => PendingKind::Approval,
        };
        let per_minute = submits_per_minute.unwrap_or(0);
        let mut invocation = SUBMIT_ANSWER.on_with_keys(self, owner, tree_keys);
        invocation
            .arg(attempt.tool_call_id)
            .arg(to_json(attempt.answer))
            .arg(now_ms())
            .arg(&owner.session_id)
            .arg(attempt.approval_id.unwrap_or_default())
            .arg(kind.as_str())
            .arg(per_minute)
            .arg(f64::from(per_minute) / 60_000.0)
            .arg(flag(root_alone))
            .arg(flag(asked_checked));
        for (agent_type, tool_name) in attempt.refused_by_schema {
            invocation.arg(agent_type).arg(tool_name);
        }
        invocation
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

/// What the submit script's reply on `owner`'s keys says.
fn submitted(owner: &SessionAddress, reply: SubmitReplyFields) -> Submitted {
    Submitted {
        outcome: reply.outcome,
        owner_session_id: owner.session_id.clone(),
        tool_name: reply.tool_name,
        run_id: reply.run_id,
    }
}
