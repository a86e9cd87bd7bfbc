//! Resuming a suspended (or ended) session: the claim that makes a new run the session's run,
//! and the drain that moves the answered calls into the log.

use super::{
    Error, NewRun, RunRef, SessionAddress, Store, Written, flag, now_ms,
    replies::{ClaimReply, WriteReply},
    scripts::{APPLY_ANSWERS, CLAIM_RESUME},
    session::stored_workflow_id,
    to_json,
};
use crate::{
    chunk::{ChunkKind, encode_unsequenced},
    message::{Message, ToolResult},
};

/// How a resume's claim on a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The new run owns the session; it continues after `step_count` committed steps.
    Claimed {
        step_count: u32,
    },
    SessionNotFound,
    /// A run is executing.
    AlreadyRunning,
    /// These calls are neither answered nor past their deadline.
    Awaiting {
        tool_call_ids: Vec<String>,
    },
    /// The session is in a status no resume continues (e.g. completed).
    NotResumable {
        status: String,
    },
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
}

impl Store {
    /// Claims a suspended (or, with a message, an ended) session for a new run (see
    /// `claim_resume.lua`) and writes the new run's `run_start` chunk.
    pub async fn claim_resume(
        &self,
        address: &SessionAddress,
        run: NewRun<'_>,
        entry: &ResumeEntry,
    ) -> Result<Claim, Error> {
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
        let ClaimReply(claim) = CLAIM_RESUME
            .on(self, address)
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
            .arg(entry.expected_run_id.as_deref().unwrap_or_default())
            .run(self)
            .await?;
        Ok(claim)
    }

    /// Drains the answered (or lapsed) calls of a resumed run into the log, in the given order,
    /// and ends the suspension (see `apply_answers.lua`). Idempotent.
    pub async fn apply_answers(
        &self,
        run: RunRef<'_>,
        drained: &[DrainedCall],
    ) -> Result<Written, Error> {
        let header = self.header(run);
        let mut invocation = APPLY_ANSWERS.on(self, run.address);
        invocation
            .arg(run.run_id)
            .arg(now_ms())
            .arg(drained.iter().map(|call| call.wait_ms).sum::<u64>());
        for call in drained {
            let result = &call.result;
            invocation
                .arg(&result.tool_call_id)
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
                .arg(call.marker_expiry);
        }
        let reply: WriteReply = invocation.run(self).await?;
        reply.into_written(run.run_id, |detail| self.inconsistent(run.address, detail))
    }
}
