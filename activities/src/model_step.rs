//! The model step: picks up the step where an earlier attempt left it, calls the model (writing
//! its text deltas to the stream as they come), stages the turn, runs the inline tools and says
//! what is left for the workflow.

use crate::{
    AgentActivities,
    failure::Error,
    heartbeat::with_heartbeats,
    io::{StepInput, StepPlan, SuspendedRun},
    plan::{AfterInline, SortedCalls},
};
use baton_core::{
    ErrorCode,
    chunk::ChunkKind,
    message::{MAX_KEPT_REASONING_BYTES, Message, Reasoning},
    model::{Delta, ModelRequest},
    store::{self, RunRef, StagedTurn, StepProgress, StepStart, UsageRecord, Written},
};
use futures::TryFutureExt;
use std::sync::atomic::{AtomicU64, Ordering};
use temporalio_sdk::activities::ActivityContext;
use tokio::sync::mpsc;

impl AgentActivities {
    /// The body of the `model_step` activity.
    pub(crate) async fn play_model_step(
        &self,
        ctx: &ActivityContext,
        input: &StepInput,
    ) -> Result<StepPlan, Error> {
        // A step that drains nothing reads the log beside its progress, in one round trip: the
        // log of a step not yet committed is only ever written by this step (a stale attempt's
        // writes are fenced), so it is the same read later. A drain changes it: read after.
        // It also writes step_start there if no attempt has streamed the step yet (see `Head`).
        let attempt = stream_attempt(ctx);
        let progress = self.store.step_progress(input.step_ref());
        let (progress, mut head, drain) = if input.drain_first {
            // The drain's reads go with the progress; they are of no use if the step is further.
            let (progress, drain) = futures::try_join!(progress, self.drain_read(&input.address))?;
            let suspended_run = drain.suspended_run();
            let head = Head::AfterDrain {
                suspended_run,
                step_started: false,
                log: None,
            };
            (progress, head, Some(drain))
        } else {
            let (progress, log, step_start) = futures::join!(
                progress,
                self.read_log(input, None),
                self.store.emit_first_step_start(input.step_ref(), attempt)
            );
            (progress?, Head::LogAndStepStart(log?, step_start), None)
        };
        if let Some(drain) = drain
            && progress == StepProgress::New
        {
            // The drain is one fenced script: an attempt that finds it applied drains nothing
            // again, and the model is called only after it, so the results precede the turn.
            // Once the turn is staged, a retry skips the drain altogether. The step's
            // step_start goes in the same script when the drain applies, and what the cache does
            // not hold of the step's log is read right after it, in its round trip.
            let step_start = StepStart {
                step: input.step,
                attempt,
            };
            if let Head::AfterDrain {
                suspended_run,
                step_started,
                log,
            } = &mut head
            {
                let mut kept = self.kept_log(input, suspended_run.as_deref());
                let applied = self
                    .drain(
                        ctx,
                        &input.previous(),
                        drain,
                        Some(step_start),
                        Some(kept.len()),
                    )
                    .await?;
                *step_started = applied.step_started;
                *log = applied.log_after.map(|after| {
                    kept.extend(after);
                    kept
                });
            }
        }
        let (turn, fresh) = match progress {
            StepProgress::Committed => return Ok(StepPlan::Committed),
            StepProgress::Suspended { tool_call_ids } => {
                return Ok(StepPlan::Suspended(
                    self.suspended_run(input, tool_call_ids).await?,
                ));
            }
            StepProgress::Staged(turn) => (turn, false),
            StepProgress::New => match self.call_model(ctx, input, attempt, head).await? {
                Called::Staged(turn) => (turn, true),
                Called::Suspended(suspended) => return Ok(StepPlan::Suspended(suspended)),
                Called::Committed => return Ok(StepPlan::Committed),
            },
        };
        let plan = self
            .run_inline_tools(ctx, input, &turn.message, fresh)
            .await?;
        tracing::debug!(
            session = %input.address.session_id,
            run = %input.run_id,
            step = input.step,
            attempt = ctx.info().attempt,
            ?plan,
            "model step done"
        );
        Ok(plan)
    }

    /// Calls the model for a step that has no staged turn and stages the answer: the staged
    /// turn (another attempt's, if it staged first), or the run suspended on the turn's calls
    /// when each is awaited (staged and suspended in one round trip), or `Committed` if the step
    /// got committed meanwhile. `attempt` orders its writes to the stream (see
    /// [`stream_attempt`]); `head` is what the step read and wrote with its progress.
    async fn call_model(
        &self,
        ctx: &ActivityContext,
        input: &StepInput,
        attempt: u64,
        head: Head,
    ) -> Result<Called, Error> {
        let address = &input.address;
        let agent = self.agent(&input.agent_type)?;
        // The log read and the step_start chunk, if still to do, go in one round trip.
        let messages = match head {
            Head::LogAndStepStart(log, written) => {
                // Not written: an earlier attempt streamed this step. Writing it as this attempt
                // discards that attempt's text, if any, before this one streams.
                if written? == 0 {
                    self.emit_step_start(input, attempt).await?;
                }
                log
            }
            Head::AfterDrain {
                suspended_run,
                step_started,
                log,
            } => {
                let step_start = async {
                    if step_started {
                        return Ok(0);
                    }
                    self.emit_step_start(input, attempt).await
                };
                let log = async {
                    match log {
                        Some(log) => Ok(log),
                        None => self.read_log(input, suspended_run.as_deref()).await,
                    }
                };
                futures::try_join!(log, step_start)?.0
            }
        };

        // A toolset whose list changed is read again here, between steps, never during one.
        agent.refresh_tools().await;
        let tools = agent.tool_specs();
        let (delta_sender, mut delta_receiver) = mpsc::unbounded_channel::<Delta>();
        let generate = agent.model().generate(
            ModelRequest {
                messages: &messages,
                tools: &tools,
            },
            delta_sender,
        );
        // Deltas are written as they come, batched by what is waiting, while the model runs;
        // the reasoning is kept too, for the chat to show after a reload.
        let stream_deltas = async {
            let mut index = 1;
            let mut kept = KeptReasoning::default();
            while let Some(first) = delta_receiver.recv().await {
                kept.add(&first);
                let mut batch = vec![delta_chunk(input.step, first)];
                while let Ok(delta) = delta_receiver.try_recv() {
                    kept.add(&delta);
                    batch.push(delta_chunk(input.step, delta));
                }
                self.emit_step_chunks(input, attempt, index, &batch).await?;
                index += batch.len() as u32;
            }
            Ok::<_, store::Error>(kept.pieces)
        };
        // A delta the store refuses (the run was stopped) or cannot take ends the call at once:
        // the model's stream is dropped rather than read to its end for nothing. A failed call
        // does not end the deltas: those it streamed are written, and a retry discards them.
        let call = with_heartbeats(ctx, self.heartbeat_every, async {
            futures::try_join!(
                async { Ok::<_, Error>(generate.await) },
                stream_deltas.map_err(Error::from)
            )
        });
        // An interrupt or abort cancels the workflow; Temporal passes the cancellation on with
        // the answer to a heartbeat. Dropping the call then closes the model's HTTP stream at
        // once instead of letting it run to its end.
        let (turn, reasoning) = tokio::select! {
            biased;
            _ = ctx.cancelled() => {
                tracing::info!(
                    session = %address.session_id,
                    run = %input.run_id,
                    step = input.step,
                    "model call cancelled"
                );
                return Err(Error::Cancelled);
            }
            outcome = call => outcome?,
        };
        let turn = turn?;
        // The next step of this run, on this worker, reads only what is appended after this.
        self.logs.keep(input.run_ref(), messages);

        let mut staged = StagedTurn {
            message: Message::answered(turn.text, turn.tool_calls, reasoning, store::now_ms()),
            usage: UsageRecord {
                run_id: input.run_id.clone(),
                step: input.step,
                model: agent.model().name().to_owned(),
                usage: turn.usage,
            },
        };
        if let Some(suspended) = self.stage_and_suspend(input, &staged).await? {
            return Ok(Called::Suspended(suspended));
        }
        let written = self.store.stage_turn(input.step_ref(), &mut staged).await?;
        let turn = match written {
            Written::New => Some(staged),
            // A concurrent attempt staged first: its turn is the step's turn.
            Written::AlreadyDone => self.store.staged_turn(input.step_ref()).await?,
        };
        Ok(turn.map_or(Called::Committed, Called::Staged))
    }

    /// The run's log: what the log cache holds for the run (see `log_cache.rs`), or else for
    /// the run it resumes, `suspended_run` (the session's run when the claim took it, so the log
    /// has only grown since that run read it), and the rest, read from Redis (the whole log when
    /// the cache holds nothing).
    async fn read_log(
        &self,
        input: &StepInput,
        suspended_run: Option<&str>,
    ) -> Result<Vec<Message>, store::Error> {
        let mut log = self.kept_log(input, suspended_run);
        let rest = self.store.messages_after(&input.address, log.len()).await?;
        log.extend(rest);
        Ok(log)
    }

    /// What the log cache holds of the run's log, or else of `suspended_run`'s, taken out of it
    /// (empty if nothing): the log's first messages.
    fn kept_log(&self, input: &StepInput, suspended_run: Option<&str>) -> Vec<Message> {
        let log = self.logs.take(input.run_ref());
        match suspended_run {
            Some(run_id) if log.is_empty() => self.logs.take(RunRef {
                run_id,
                ..input.run_ref()
            }),
            _ => log,
        }
    }

    /// Writes model-phase chunks of the step for activity attempt `attempt`, the first at
    /// `first_index`; an index already on the stream is not written again, and a new attempt
    /// that finds an earlier one's text discards it first (see `emit_model_chunks.lua`).
    async fn emit_step_chunks(
        &self,
        input: &StepInput,
        attempt: u64,
        first_index: u32,
        kinds: &[ChunkKind],
    ) -> Result<u32, store::Error> {
        self.store
            .emit_model_chunks(input.step_ref(), attempt, first_index, kinds)
            .await
    }

    /// Writes the step's first chunk, `step_start` (once, whatever the attempts).
    async fn emit_step_start(&self, input: &StepInput, attempt: u64) -> Result<u32, store::Error> {
        let chunk = [ChunkKind::StepStart { step: input.step }];
        self.emit_step_chunks(input, attempt, 0, &chunk).await
    }

    /// Runs the inline tool calls of a staged turn (in parallel) and says what is left. When no
    /// call needs an activity, commits the step here.
    async fn run_inline_tools(
        &self,
        ctx: &ActivityContext,
        input: &StepInput,
        message: &Message,
        fresh: bool,
    ) -> Result<StepPlan, Error> {
        let Message::Assistant { tool_calls, .. } = message else {
            return Err(Error::typed(
                ErrorCode::Internal,
                "staged turn is not an assistant message",
            ));
        };
        // An answer needs nothing of the agent.
        if tool_calls.is_empty() {
            return Ok(StepPlan::Answered);
        }
        let agent = self.agent(&input.agent_type)?;
        let calls = SortedCalls::new(agent, tool_calls);
        let after = calls.after_inline();
        // A step whose one call is inline and not yet run stages its result and commits in one
        // round trip.
        if let (AfterInline::Commit, [call]) = (&after, calls.inline.as_slice())
            && (fresh
                || !self
                    .store
                    .has_staged_tool_result(input.step_ref(), &call.id)
                    .await?)
        {
            let (result, state_patch, data) = self.call_result(ctx, input, call).await?;
            self.store
                .stage_tool_result_and_commit(
                    input.step_ref(),
                    &result,
                    state_patch.as_ref(),
                    &data,
                )
                .await?;
            return Ok(StepPlan::Committed);
        }
        let runs = calls.inline.iter().map(|call| async move {
            // Results staged by an earlier attempt stand; a fresh turn has none.
            if !fresh
                && self
                    .store
                    .has_staged_tool_result(input.step_ref(), &call.id)
                    .await?
            {
                return Ok(());
            }
            self.run_call(ctx, input, call).await
        });
        for outcome in futures::future::join_all(runs).await {
            outcome?;
        }
        Ok(match after {
            AfterInline::Complete => StepPlan::Answered,
            AfterInline::RunTools {
                tool_call_ids,
                sub_agents,
                then_suspend,
                then_finish,
            } => StepPlan::RunTools {
                tool_call_ids,
                sub_agents,
                then_suspend,
                then_finish,
            },
            AfterInline::Suspend => StepPlan::Suspended(
                self.suspend(input, &calls.awaited, &Default::default())
                    .await?,
            ),
            AfterInline::Commit => {
                self.commit(input).await?;
                StepPlan::Committed
            }
        })
    }
}

/// What calling the model for a new step came to.
enum Called {
    /// The step's staged turn, for its inline tools to run.
    Staged(StagedTurn),
    /// The turn's calls are all awaited: it is staged and the run suspended on them.
    Suspended(SuspendedRun),
    /// The step got committed meanwhile (another attempt).
    Committed,
}

/// What a model step read, and wrote, in the round trip that reads its progress. Writing
/// `step_start` before knowing the progress is safe when no attempt has streamed the step yet,
/// which the script checks (`emit_first_step_start`): the chunk is fenced on the step (a
/// committed or suspended step refuses it), a staged turn's attempt streamed it already, and
/// there is no earlier attempt's text to discard. The outcome matters only for a new step.
enum Head {
    /// Nothing yet: the step drains answers first, which changes the log; it ends the
    /// suspension of `suspended_run`, whose last log the cache may hold. `step_started`: the
    /// drain's script wrote `step_start` too (a drain that applied); `log`: the step's log,
    /// what the cache held and what the drain's round trip read after it.
    AfterDrain {
        suspended_run: Option<String>,
        step_started: bool,
        log: Option<Vec<Message>>,
    },
    /// The log and how many chunks writing `step_start` appended (0: an earlier attempt had
    /// streamed the step, and nothing was written).
    LogAndStepStart(Vec<Message>, Result<u32, store::Error>),
}

/// The number that orders an attempt's writes to the step's stream (`emit_model_chunks.lua`): a
/// greater one discards a smaller one's text and refuses its later writes. A regular activity's
/// attempt number does. A local activity's does not: a worker that takes over a lost workflow
/// task runs it again from attempt 1. Its start time in milliseconds grows across workers and
/// local retries alike; within one worker it is made strictly greater than the last one taken,
/// so two attempts in the same millisecond are still ordered.
fn stream_attempt(ctx: &ActivityContext) -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let info = ctx.info();
    if !info.is_local {
        return u64::from(info.attempt);
    }
    let now = store::now_ms();
    let next = |last: u64| now.max(last + 1);
    // The closure always answers, so the update cannot fail; both arms hold the last value.
    let last = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(next(last))
        })
        .unwrap_or_else(|last| last);
    next(last)
}

/// The chunk that streams a model's delta of step `step`.
fn delta_chunk(step: u32, delta: Delta) -> ChunkKind {
    match delta {
        Delta::Text(delta) => ChunkKind::TextDelta { step, delta },
        Delta::Reasoning(delta) => ChunkKind::ReasoningDelta { step, delta },
    }
}

/// The reasoning a step streamed, as the log keeps it for display: each piece at the offset of
/// the text it came before, at most [`MAX_KEPT_REASONING_BYTES`] in all.
#[derive(Default)]
struct KeptReasoning {
    pieces: Vec<Reasoning>,
    text_bytes: usize,
    kept_bytes: usize,
}

impl KeptReasoning {
    fn add(&mut self, delta: &Delta) {
        match delta {
            Delta::Text(text) => self.text_bytes += text.len(),
            Delta::Reasoning(piece) => {
                let room = MAX_KEPT_REASONING_BYTES.saturating_sub(self.kept_bytes);
                let mut end = piece.len().min(room);
                while !piece.is_char_boundary(end) {
                    end -= 1;
                }
                if end == 0 {
                    return;
                }
                self.kept_bytes += end;
                match self.pieces.last_mut() {
                    Some(last) if last.offset == self.text_bytes => {
                        last.text.push_str(&piece[..end]);
                    }
                    _ => self.pieces.push(Reasoning {
                        offset: self.text_bytes,
                        text: piece[..end].to_owned(),
                    }),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_is_kept_at_the_offset_of_the_text_it_came_before_and_capped() {
        let mut kept = KeptReasoning::default();
        for delta in [
            Delta::Reasoning("six ".into()),
            Delta::Reasoning("sevens".into()),
            Delta::Text("It is ".into()),
            Delta::Text("42.".into()),
            Delta::Reasoning("sure?".into()),
        ] {
            kept.add(&delta);
        }
        assert_eq!(
            kept.pieces,
            [
                Reasoning {
                    offset: 0,
                    text: "six sevens".into()
                },
                Reasoning {
                    offset: 9,
                    text: "sure?".into()
                }
            ]
        );
        let mut long = KeptReasoning::default();
        long.add(&Delta::Reasoning("é".repeat(MAX_KEPT_REASONING_BYTES)));
        long.add(&Delta::Reasoning("more".into()));
        assert_eq!(long.pieces.len(), 1);
        assert_eq!(long.pieces[0].text.len(), MAX_KEPT_REASONING_BYTES);
    }
}
