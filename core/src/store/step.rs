//! One step of a run: its model-phase chunks, the staged turn and tool results, how far it has
//! come, its commit into the log, and the failure that ends a run.

use super::{
    Error, RunRef, SessionAddress, StepRef, Store, StoredSuspension, UsageRecord, Written,
    custom_state::StateFold,
    flag, from_json,
    keys::{Key, staged_field, state_field},
    now_ms,
    replies::{EmitReply, Refusal, WriteReply},
    scripts::{COMMIT_STEP, EMIT_MODEL_CHUNKS, FAIL_RUN, Invocation, STAGE_TOOL_RESULT},
    to_json,
};
use crate::{
    chunk::{ChunkKind, EndStatus, RunError, encode_unsequenced},
    message::{Message, ToolResult, finish_metadata},
    usage::UsageRollup,
};
use json_patch::Patch;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

/// The end of a completed run.
#[derive(Debug, Clone)]
pub struct Completion {
    pub output: String,
    pub usage: UsageRollup,
}

/// A staged assistant turn, as the model step leaves it for the tools and the commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagedTurn {
    pub message: Message,
    pub usage: UsageRecord,
}

/// How far a step has come.
#[derive(Debug, Clone, PartialEq)]
pub enum StepProgress {
    /// The model has not answered yet (or its answer was not staged).
    New,
    /// The model's turn is staged; its tools may have run, the step is not committed.
    Staged(StagedTurn),
    /// The step is part of the log.
    Committed,
    /// The step is part of the log and this run is suspended on it.
    Suspended { tool_call_ids: Vec<String> },
}

impl Store {
    /// Appends model-phase chunks (`step_start`, `text_delta`) of a step. `first_index` is the
    /// position of the first chunk within the step; chunks already written are skipped, so a
    /// retried model step does not repeat them. `attempt` orders the attempts: a greater one
    /// finding an earlier one's text discards it, a smaller one writes nothing. Returns how many
    /// were appended.
    pub async fn emit_model_chunks(
        &self,
        step: StepRef<'_>,
        attempt: u64,
        first_index: u32,
        kinds: &[ChunkKind],
    ) -> Result<u32, Error> {
        self.emit_chunks(step, attempt, first_index, kinds, false)
            .await
    }

    /// Writes the step's `step_start` as `attempt`, only if no attempt has streamed the step yet
    /// (else returns 0 and writes nothing): safe before the step's progress is known, by an
    /// attempt that cannot tell whether it is the first.
    pub async fn emit_first_step_start(
        &self,
        step: StepRef<'_>,
        attempt: u64,
    ) -> Result<u32, Error> {
        let start = [ChunkKind::StepStart { step: step.step }];
        self.emit_chunks(step, attempt, 0, &start, true).await
    }

    async fn emit_chunks(
        &self,
        step: StepRef<'_>,
        attempt: u64,
        first_index: u32,
        kinds: &[ChunkKind],
        only_first: bool,
    ) -> Result<u32, Error> {
        let header = self.header(step.run());
        let discarded = ChunkKind::StepDiscarded { step: step.step };
        let mut invocation = EMIT_MODEL_CHUNKS.on(self, step.address);
        invocation
            .arg(step.run_id)
            .arg(step.step)
            .arg(first_index)
            .arg(attempt)
            .arg(encode_unsequenced(&header, &discarded))
            .arg(flag(only_first));
        for kind in kinds {
            invocation.arg(encode_unsequenced(&header, kind));
        }
        match invocation.run(self).await? {
            EmitReply::Emitted { appended } => Ok(appended),
            EmitReply::AlreadyCommitted => Ok(0),
            EmitReply::Refused(refusal) => Err(refusal.into_error(step.run_id)),
        }
    }

    /// How far a step has come, in one round trip.
    pub async fn step_progress(&self, step: StepRef<'_>) -> Result<StepProgress, Error> {
        let key = self.key(step.address, Key::Staged);
        let state_key = self.key(step.address, Key::State);
        #[allow(clippy::type_complexity)]
        let ((step_count, suspension, run_id, suspended_run_id), fields): (
            (Option<u32>, Option<String>, Option<String>, Option<String>),
            (Option<String>, Option<String>),
        ) = redis::pipe()
            .cmd("HMGET")
            .arg(&state_key)
            .arg(state_field::STEP_COUNT)
            .arg(state_field::SUSPENSION)
            .arg(state_field::RUN_ID)
            .arg(state_field::SUSPENDED_RUN_ID)
            .add_command(staged_turn_fields(&key, step))
            .query_async(&mut self.conn())
            .await?;
        let Some(step_count) = step_count else {
            return Err(Error::SessionNotFound(step.address.session_id.clone()));
        };
        if step_count >= step.step {
            let run_id = run_id.unwrap_or_default();
            let suspension = suspension
                .map(|text| from_json::<StoredSuspension>(&state_key, &text))
                .transpose()?
                .map(|stored| {
                    stored.of_run(super::session::suspended_run_id(
                        suspended_run_id.as_deref(),
                        &run_id,
                    ))
                });
            return Ok(match suspension {
                Some(s) if s.run_id == step.run_id && s.step == step.step => {
                    StepProgress::Suspended {
                        tool_call_ids: s.tool_call_ids,
                    }
                }
                _ => StepProgress::Committed,
            });
        }
        Ok(match decode_staged_turn(&key, fields)? {
            Some(turn) => StepProgress::Staged(turn),
            None => StepProgress::New,
        })
    }

    /// The staged turn of a step, if the model step has run.
    pub async fn staged_turn(&self, step: StepRef<'_>) -> Result<Option<StagedTurn>, Error> {
        let key = self.key(step.address, Key::Staged);
        let fields = staged_turn_fields(&key, step)
            .query_async(&mut self.conn())
            .await?;
        decode_staged_turn(&key, fields)
    }

    /// The staged result of a tool call of a step, if it has one.
    pub async fn staged_tool_result(
        &self,
        step: StepRef<'_>,
        tool_call_id: &str,
    ) -> Result<Option<ToolResult>, Error> {
        let key = self.key(step.address, Key::Staged);
        let field = staged_field::result(step.run_id, step.step, tool_call_id);
        let result: Option<String> = self.conn().hget(&key, &field).await?;
        let Some(text) = result else {
            return Ok(None);
        };
        match from_json(&key, &text)? {
            Message::Tool(result) => Ok(Some(result)),
            _ => Err(Error::Corrupt {
                key,
                reason: format!("{field} is not a tool message"),
            }),
        }
    }

    /// Whether a tool call of a step already has a staged result.
    pub async fn has_staged_tool_result(
        &self,
        step: StepRef<'_>,
        tool_call_id: &str,
    ) -> Result<bool, Error> {
        let field = staged_field::result(step.run_id, step.step, tool_call_id);
        Ok(self
            .conn()
            .hexists(self.key(step.address, Key::Staged), field)
            .await?)
    }

    /// Stages one server tool's answer (first answer wins) and writes its `tool_end` chunk.
    pub async fn stage_tool_result(
        &self,
        step: StepRef<'_>,
        result: &ToolResult,
    ) -> Result<Written, Error> {
        self.stage_tool_result_reporting(step, result, None, &[])
            .await
    }

    /// Like [`Self::stage_tool_result`], with the call's change of the session's custom state
    /// (staged with the result; the step's commit applies it and writes its `state_patch`).
    pub async fn stage_tool_result_with_state(
        &self,
        step: StepRef<'_>,
        result: &ToolResult,
        state_patch: Option<&Patch>,
    ) -> Result<Written, Error> {
        self.stage_tool_result_reporting(step, result, state_patch, &[])
            .await
    }

    /// Like [`Self::stage_tool_result_with_state`], and writes `then` after the `tool_end` chunk
    /// (the call's `tool_data`), all or nothing with the result: first answer wins.
    pub async fn stage_tool_result_reporting(
        &self,
        step: StepRef<'_>,
        result: &ToolResult,
        state_patch: Option<&Patch>,
        then: &[ChunkKind],
    ) -> Result<Written, Error> {
        let reply: WriteReply = self
            .stage_tool_result_invocation(step, result, state_patch, then)
            .run(self)
            .await?;
        self.step_written(step, reply)
    }

    /// Stages the result of a step's last call to run, like [`Self::stage_tool_result_reporting`]
    /// (with the chunks `then` after its `tool_end`), and commits the step, like
    /// [`Self::commit_step`] without completion, in one round trip: for a step whose every call
    /// ran in the model step, the last staging and the commit need nothing in between. A refused
    /// staging refuses the commit too (both are fenced on the run).
    pub async fn stage_tool_result_and_commit(
        &self,
        step: StepRef<'_>,
        result: &ToolResult,
        state_patch: Option<&Patch>,
        then: &[ChunkKind],
    ) -> Result<Written, Error> {
        let stage = self.stage_tool_result_invocation(step, result, state_patch, then);
        let step_end = self.step_end_body(step);
        let commit = |fold: &StateFold| self.commit_invocation(step, &step_end, None, fold);
        let (staged, committed): (WriteReply, WriteReply) =
            stage.run_then(&commit(&StateFold::default()), self).await?;
        self.step_written(step, staged)?;
        let committed = self.fold_state_if_asked(step, committed, commit).await?;
        self.commit_written(step, committed)
    }

    fn stage_tool_result_invocation(
        &self,
        step: StepRef<'_>,
        result: &ToolResult,
        state_patch: Option<&Patch>,
        then: &[ChunkKind],
    ) -> Invocation<'static> {
        let header = self.header(step.run());
        let body = encode_unsequenced(
            &header,
            &ChunkKind::tool_end(
                step.step,
                &result.tool_call_id,
                &result.tool_name,
                &result.outcome,
            ),
        );
        let mut invocation = STAGE_TOOL_RESULT.on(self, step.address);
        invocation
            .arg(step.run_id)
            .arg(step.step)
            .arg(&result.tool_call_id)
            .arg(to_json(&Message::Tool(result.clone())))
            .arg(body)
            .arg(state_patch.map(to_json).unwrap_or_default());
        for kind in then {
            invocation.arg(encode_unsequenced(&header, kind));
        }
        invocation
    }

    /// Commits a staged step into the log (see `commit_step.lua`), completing the run when
    /// `completion` is set. Idempotent per step.
    pub async fn commit_step(
        &self,
        step: StepRef<'_>,
        completion: Option<Completion>,
    ) -> Result<Written, Error> {
        if completion.is_none() {
            return self.commit_step_unindexed(step, completion).await;
        }
        let index_address = step.address.clone();
        let mark = self.mark_for_index(&index_address).await?;
        let result = self.commit_step_unindexed(step, completion).await;
        self.reindex_after_change(&index_address, mark).await;
        result
    }

    /// [`Self::commit_step`] before the search index follows it.
    async fn commit_step_unindexed(
        &self,
        step: StepRef<'_>,
        completion: Option<Completion>,
    ) -> Result<Written, Error> {
        let header = self.header(step.run());
        let end = completion.map(|completion| {
            let finish = to_json(&finish_metadata(header.timestamp, Some(&completion.usage)));
            let end = encode_unsequenced(
                &header,
                &ChunkKind::End {
                    status: EndStatus::Completed,
                    output: Some(completion.output.clone()),
                    error: None,
                    usage: completion.usage,
                    state: None,
                },
            );
            (completion.output, end, finish)
        });
        let step_end = self.step_end_body(step);
        let reply = self
            .commit_folding_state(step, |fold| {
                self.commit_invocation(step, &step_end, end.as_ref(), fold)
            })
            .await?;
        self.commit_written(step, reply)
    }

    fn step_end_body(&self, step: StepRef<'_>) -> String {
        encode_unsequenced(
            &self.header(step.run()),
            &ChunkKind::StepEnd { step: step.step },
        )
    }

    /// The commit script's invocation; `end` is the run's output and `end` chunk when the step
    /// completes the run.
    fn commit_invocation(
        &self,
        step: StepRef<'_>,
        step_end: &str,
        end: Option<&(String, String, String)>,
        fold: &StateFold,
    ) -> Invocation<'static> {
        let (output, end_body, finish) = end.map_or(("", "", ""), |(output, body, finish)| {
            (output.as_str(), body.as_str(), finish.as_str())
        });
        let mut invocation = COMMIT_STEP.on(self, step.address);
        invocation
            .arg(step.run_id)
            .arg(step.step)
            .arg(now_ms())
            .arg(step_end)
            .arg(flag(end.is_some()))
            .arg(output)
            .arg(end_body)
            .arg(self.session_retention_ms)
            .arg(&fold.before)
            .arg(&fold.after)
            .arg(&fold.body)
            .arg(finish);
        invocation
    }

    /// What a write on `step` (a staging) did, or why it was refused.
    pub(super) fn step_written(
        &self,
        step: StepRef<'_>,
        reply: WriteReply,
    ) -> Result<Written, Error> {
        reply.into_written(step.run_id, |detail| {
            self.inconsistent(step.address, detail)
        })
    }

    fn commit_written(&self, step: StepRef<'_>, reply: WriteReply) -> Result<Written, Error> {
        reply.into_written(step.run_id, |detail| {
            self.inconsistent(
                step.address,
                format!("commit of step {} refused: {detail}", step.step),
            )
        })
    }

    /// Fails the run with a typed error and writes the `end` chunk. A run that already ended (or
    /// was superseded) is left alone and `AlreadyDone` is returned.
    pub async fn fail_run(
        &self,
        run: RunRef<'_>,
        error: &RunError,
        usage: UsageRollup,
    ) -> Result<Written, Error> {
        let index_address = run.address.clone();
        let mark = self.mark_for_index(&index_address).await?;
        let result = self.fail_run_unindexed(run, error, usage).await;
        self.reindex_after_change(&index_address, mark).await;
        result
    }

    /// [`Self::fail_run`] before the search index follows it.
    async fn fail_run_unindexed(
        &self,
        run: RunRef<'_>,
        error: &RunError,
        usage: UsageRollup,
    ) -> Result<Written, Error> {
        let end = encode_unsequenced(
            &self.header(run),
            &ChunkKind::End {
                status: EndStatus::Failed,
                output: None,
                error: Some(error.clone()),
                usage,
                state: None,
            },
        );
        let reply: WriteReply = FAIL_RUN
            .on(self, run.address)
            .arg(run.run_id)
            .arg(now_ms())
            .arg(to_json(error))
            .arg(end)
            .arg(self.session_retention_ms)
            .run(self)
            .await?;
        match reply {
            WriteReply::Refused(Refusal::RunNotActive | Refusal::RunSuperseded) => {
                Ok(Written::AlreadyDone)
            }
            reply => {
                reply.into_written(run.run_id, |detail| self.inconsistent(run.address, detail))
            }
        }
    }

    /// The error of a step whose staged data a commit found incomplete or out of order.
    pub(super) fn inconsistent(&self, address: &SessionAddress, reason: String) -> Error {
        Error::Corrupt {
            key: self.key(address, Key::Staged),
            reason,
        }
    }
}

/// `HMGET` of a staged turn's message and usage.
fn staged_turn_fields(key: &str, step: StepRef<'_>) -> redis::Cmd {
    let mut command = redis::cmd("HMGET");
    command
        .arg(key)
        .arg(staged_field::turn(step.run_id, step.step))
        .arg(staged_field::usage(step.run_id, step.step));
    command
}

fn decode_staged_turn(
    key: &str,
    (message, usage): (Option<String>, Option<String>),
) -> Result<Option<StagedTurn>, Error> {
    match (message, usage) {
        (Some(message), Some(usage)) => Ok(Some(StagedTurn {
            message: from_json(key, &message)?,
            usage: from_json(key, &usage)?,
        })),
        _ => Ok(None),
    }
}
