//! Claiming a session for a new run (a resume, a tree's resume, a lapsed deadline, a parent its
//! children's answers complete): the one claim that mints the new run's ids and makes it the
//! session's run; and the drain that moves the answered calls into the log.

use super::{
    Error, NewRun, RunRef, SessionAddress, Status, Store, Written, flag, from_json,
    keys::Key,
    now_ms,
    replies::{ClaimReply, WriteReply},
    scripts::{APPLY_ANSWERS, CLAIM_RESUME, Invocation},
    session::stored_workflow_id,
    to_json,
};
use crate::{
    chunk::{ChunkKind, encode_unsequenced},
    ids,
    message::{Message, ToolResult},
};
use redis::{FromRedisValue, RedisResult, Value as RedisValue};

/// How a claim of a session for a new run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The new run owns the session.
    Claimed(ClaimedRun),
    SessionNotFound,
    /// A run is executing.
    AlreadyRunning,
    /// These calls are neither answered nor past their deadline.
    Awaiting {
        tool_call_ids: Vec<String>,
    },
    /// The session is in a status no resume continues (e.g. completed), or (`superseded`) its
    /// run is not the one the claim expected.
    NotResumable {
        status: String,
    },
}

/// The run a claim made the session's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedRun {
    pub run_id: String,
    /// `agent__<type>__<session>__resume-<runId>` (see [`ids::resume_workflow_id`]).
    pub workflow_id: String,
    /// Steps the session had committed; the run's first step is one more.
    pub step_count: u32,
}

/// Where a new run's id comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewRunId {
    /// A fresh id ([`ids::new_run_id`]).
    Minted,
    /// An id the caller derived, so that a retried claim names the same run (a parent resumed
    /// by its children's answers, `subagent::parent_resume_run_id`). A session that run holds
    /// already (active) is answered as claimed again, with its step count now.
    Derived(String),
}

/// The ids of a session's next run: its run id and its workflow's. Every run that continues a
/// session (a claim, a rewind) takes them from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextRun {
    pub run_id: String,
    pub workflow_id: String,
}

impl NextRun {
    /// The next run of session `session_id` of `agent_type`.
    pub fn new(agent_type: &str, session_id: &str, run_id: NewRunId) -> Self {
        let run_id = match run_id {
            NewRunId::Minted => ids::new_run_id(),
            NewRunId::Derived(run_id) => run_id,
        };
        let workflow_id = ids::resume_workflow_id(agent_type, session_id, &run_id);
        Self {
            run_id,
            workflow_id,
        }
    }

    /// The run as the store's scripts take it.
    pub fn as_new_run<'a>(&'a self, agent_type: &'a str, stream_id: &'a str) -> NewRun<'a> {
        NewRun {
            agent_type,
            stream_id,
            run_id: &self.run_id,
            workflow_id: &self.workflow_id,
        }
    }

    /// The run, now the session's after `step_count` committed steps.
    pub fn claimed(self, step_count: u32) -> ClaimedRun {
        ClaimedRun {
            run_id: self.run_id,
            workflow_id: self.workflow_id,
            step_count,
        }
    }
}

/// Who claims a session for a new run: the session's agent and stream, and the new run's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunClaim<'a> {
    pub agent_type: &'a str,
    pub stream_id: &'a str,
    pub run_id: NewRunId,
}

/// What a resume brings: a user message for the next turn (`with_message`) or none
/// (`continue`), and whether open calls are abandoned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResumeEntry {
    pub message: Option<Message>,
    /// With a message: answer the still-open calls `client_tool_abandoned`.
    pub abandon_pending: bool,
    /// Claim only if this is still the session's run (a deadline resumes only its own run).
    pub expected_run_id: Option<String>,
}

/// The resumed step's `step_start`, written by the drain's script: the step, and the attempt
/// that streams it (see `emit_model_chunks.lua`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepStart {
    pub step: u32,
    pub attempt: u64,
}

/// What [`Store::apply_answers`] wrote, and the log it read after.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub written: Written,
    /// The drain wrote the resumed step's `step_start` (it applied, and was given one).
    pub step_started: bool,
    /// The log's messages from the position asked for, as they were right after the drain;
    /// `None` when none was asked for.
    pub log_after: Option<Vec<Message>>,
}

/// `apply_answers.lua`'s reply: a write's, and (after `ok`) whether it wrote `step_start`.
struct AppliedReply {
    write: WriteReply,
    step_started: bool,
}

impl FromRedisValue for AppliedReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let step_started = match value {
            RedisValue::Array(items) => matches!(items.get(1), Some(RedisValue::Int(1))),
            _ => false,
        };
        Ok(Self {
            write: WriteReply::from_redis_value(value)?,
            step_started,
        })
    }
}

/// One awaited call as a resume drains it into the log.
#[derive(Debug, Clone, PartialEq)]
pub struct DrainedCall {
    /// The call's answer, as the log gets it.
    pub result: ToolResult,
    pub step: u32,
    /// Until when a re-submit still answers `already_completed` (ms since the epoch).
    pub marker_expiry: u64,
    /// How long the client took: from the suspension to the answer (or the lapsed deadline).
    pub wait_ms: u64,
    /// The chunks written after its `tool_end` (what an approved call emitted for the chat).
    pub then: Vec<ChunkKind>,
    /// The id of its pending entry where that is not the call's own: the question a tool's
    /// call stopped on.
    pub pending_id: Option<String>,
}

impl Store {
    /// Claims a suspended (or, with a message, an ended) session for a new run (see
    /// `claim_resume.lua`, which also writes the new run's `run_start` chunk), and answers the
    /// run claimed. The one way a session gets a new run other than its first and a rewind.
    pub async fn claim_new_run(
        &self,
        address: &SessionAddress,
        claim: RunClaim<'_>,
        entry: &ResumeEntry,
    ) -> Result<Claim, Error> {
        let derived = matches!(claim.run_id, NewRunId::Derived(_));
        let next = NextRun::new(claim.agent_type, &address.session_id, claim.run_id);
        // The index's mark and the claim go in one round trip; the mark first.
        let invocation = self.claim_resume(
            address,
            next.as_new_run(claim.agent_type, claim.stream_id),
            entry,
        );
        let (mark, reply) = self.mark_then(address, &invocation).await?;
        if let ClaimReply::Claimed {
            header_key: Some(header_key),
            ..
        } = &reply
        {
            // The new run's chunks name their header by this key: a follower of the session
            // served here finds it without reading it back.
            self.keep_own_header(address, claim.stream_id, &next.run_id, header_key);
        }
        let result = self.claimed(address, next, derived, reply).await;
        self.reindex_after_change(address, mark).await;
        result
    }

    /// What the claim's reply makes of `next`, the run it claimed for.
    async fn claimed(
        &self,
        address: &SessionAddress,
        next: NextRun,
        derived: bool,
        reply: ClaimReply,
    ) -> Result<Claim, Error> {
        match reply {
            ClaimReply::Claimed { step_count, .. } => Ok(Claim::Claimed(next.claimed(step_count))),
            ClaimReply::Refused(Claim::AlreadyRunning) if derived => {
                // A retried claim of a derived run (expecting that run, as a retried report
                // does): the run may hold the session since an earlier attempt. A claim that
                // expected the suspended run is refused as superseded instead, as a claim that
                // lost a race to another is.
                Ok(match self.session(address).await? {
                    Some(state)
                        if state.status == Status::Active && state.run_id == next.run_id =>
                    {
                        Claim::Claimed(next.claimed(state.step_count))
                    }
                    _ => Claim::AlreadyRunning,
                })
            }
            ClaimReply::Refused(refusal) => Ok(refusal),
        }
    }

    /// `claim_resume.lua` for `run`, writing its `run_start` chunk: the invocation to run.
    fn claim_resume(
        &self,
        address: &SessionAddress,
        run: NewRun<'_>,
        entry: &ResumeEntry,
    ) -> Invocation<'static> {
        let body = encode_unsequenced(
            &self.header(RunRef {
                address,
                stream_id: run.stream_id,
                run_id: run.run_id,
            }),
            &ChunkKind::RunStart {
                agent_type: run.agent_type.to_owned(),
            },
        );
        let mut invocation = CLAIM_RESUME.on(self, address);
        invocation
            .arg(run.run_id)
            .arg(now_ms())
            .arg(body)
            .arg(match entry.message {
                Some(_) => "with_message",
                None => "continue",
            })
            .arg(flag(entry.abandon_pending))
            .arg(entry.message.as_ref().map(to_json).unwrap_or_default())
            .arg(stored_workflow_id(&run, &address.session_id))
            .arg(entry.expected_run_id.as_deref().unwrap_or_default());
        invocation
    }

    /// Drains the answered (or lapsed) calls of a resumed run into the log, in the given order,
    /// and ends the suspension (see `apply_answers.lua`); with `step_start`, writes the resumed
    /// step's `step_start` in the same script when the drain applies. Idempotent. Answers what
    /// was written and whether that included `step_start`; with `read_log_from`, also the log
    /// from that message on, read in the same round trip right after the script (the resumed
    /// step's log: what the worker did not keep of it, the drained results among it).
    pub async fn apply_answers(
        &self,
        run: RunRef<'_>,
        drained: &[DrainedCall],
        step_start: Option<StepStart>,
        read_log_from: Option<usize>,
    ) -> Result<Applied, Error> {
        let header = self.header(run);
        let mut invocation = APPLY_ANSWERS.on(self, run.address);
        invocation
            .arg(run.run_id)
            .arg(now_ms())
            .arg(drained.iter().map(|call| call.wait_ms).sum::<u64>());
        match step_start {
            Some(StepStart { step, attempt }) => invocation
                .arg(encode_unsequenced(&header, &ChunkKind::StepStart { step }))
                .arg(step)
                .arg(attempt),
            None => invocation.arg("").arg(0).arg(0),
        };
        for call in drained {
            let result = &call.result;
            invocation
                .arg(call.pending_id.as_deref().unwrap_or(&result.tool_call_id))
                .arg(to_json(&Message::Tool(result.clone())))
                .arg(encode_unsequenced(
                    &header,
                    &ChunkKind::tool_end(
                        call.step,
                        &result.tool_call_id,
                        &result.tool_name,
                        &result.outcome,
                    ),
                ))
                .arg(call.marker_expiry)
                .arg(call.then.len());
            for kind in &call.then {
                invocation.arg(encode_unsequenced(&header, kind));
            }
        }
        let (reply, log_after): (AppliedReply, _) = match read_log_from {
            None => (invocation.run(self).await?, None),
            Some(from) => {
                let key = self.key(run.address, Key::Messages);
                let mut read = redis::cmd("LRANGE");
                read.arg(&key)
                    .arg(isize::try_from(from).unwrap_or(isize::MAX))
                    .arg(-1);
                let (reply, items): (_, Vec<String>) = invocation.run_before(read, self).await?;
                let log = items
                    .iter()
                    .map(|item| from_json(&key, item))
                    .collect::<Result<Vec<Message>, Error>>()?;
                (reply, Some(log))
            }
        };
        let written = reply
            .write
            .into_written(run.run_id, |detail| self.inconsistent(run.address, detail))?;
        Ok(Applied {
            written,
            step_started: written == Written::New && reply.step_started,
            log_after,
        })
    }
}
