//! The remote transport of sub-agent calls: the body of `follow_remote_sub_agent`, one activity
//! that starts the call's child on the producer (or attaches to it), follows its stream and
//! forwards its chunks onto the caller's stream, and stages the call's result from the child's
//! end. Everything it needs to survive a retry or a lost worker is in Redis or derived: the
//! child's id from the call, where to resume the stream from the caller's state (the cursor
//! `forward_remote.lua` keeps), so a retried attempt attaches and reads on, never starting a
//! second child nor forwarding a chunk twice.

use super::producer::{CallError, Producer, Started};
use crate::{
    AgentActivities,
    failure::Error,
    heartbeat::with_heartbeats,
    io::{StepInput, SubAgentEnd, ToolInput},
};
use baton_core::{
    ErrorCode, StreamChunk, ToolError,
    chunk::{ChunkKind, EndStatus, RemoteSource, RunError},
    message::{ToolCall, ToolOutcome, ToolResult},
    remote::{ErrorBody, StartRequest, Status},
    sse::{Decoder, NotUtf8},
    store::{ChildEnd, Forwarded, ForwardedChunk},
    subagent::{self, RemoteAgent, SubAgent},
    tool::codes,
    usage::UsageRollup,
};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use std::time::Instant;
use temporalio_sdk::activities::ActivityContext;

/// The `end` frame of a child's turn, as the protocol sends it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EndFrame {
    status: Status,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    error: Option<RunError>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    state: Option<Value>,
}

/// How one read of the child's stream stopped.
enum StreamStop {
    End(EndFrame),
    /// Nothing came within the per-read deadline: look at the child's status.
    Quiet,
    /// The connection broke, or the stream ended without an `end`.
    Broken(String),
    /// Below the retention floor, a `stream_resync` or another `streamId`: re-snapshot.
    Resnapshot(&'static str),
    /// The producer refused on the stream (its error frame).
    Refused(ErrorBody),
    /// The caller's step is committed already: this attempt is stale.
    Stale,
}

/// How a call ended for the caller.
enum CallEnd {
    Ended(EndFrame),
    Failed(ToolError),
    Stale,
}

/// The call being followed.
struct Followed<'a> {
    activities: &'a AgentActivities,
    producer: Producer<'a>,
    remote: &'a RemoteAgent,
    step: &'a StepInput,
    call: &'a ToolCall,
    child: String,
    stream_id: String,
}

impl AgentActivities {
    /// The body of `follow_remote_sub_agent`.
    pub(crate) async fn follow_remote_child_of(
        &self,
        ctx: &ActivityContext,
        input: &ToolInput,
    ) -> Result<SubAgentEnd, Error> {
        let step = &input.step;
        let Some(call) = self.unanswered_call(input).await? else {
            return Ok(SubAgentEnd::Answered);
        };
        let agent = self.agent(&step.agent_type)?;
        let Some((sub_agent, remote)) = agent
            .sub_agent(&call.name)
            .and_then(|sub| sub.remote_agent().map(|remote| (sub, remote)))
        else {
            return Err(Error::typed(
                ErrorCode::Internal,
                format!("{} is not a remote sub-agent", call.name),
            ));
        };
        let message = match sub_agent.first_message(&call.arguments) {
            Ok(message) => message,
            Err(error) => {
                self.stage_outcome(step, &call, ToolOutcome::Error(error))
                    .await?;
                return Ok(SubAgentEnd::Answered);
            }
        };
        let mut followed = Followed {
            activities: self,
            producer: Producer::new(&self.http, remote),
            remote,
            step,
            call: &call,
            child: subagent::remote_child_id(&step.address, &call.id),
            stream_id: String::new(),
        };
        let work = tokio::time::timeout(remote.timeout, followed.run(message));
        let end = tokio::select! {
            end = with_heartbeats(ctx, self.heartbeat_every, work) => end,
            () = ctx.cancelled() => {
                // The caller was interrupted or aborted: pass it on, best effort. An attempt
                // only taken away (a heartbeat timed out, a worker shutting down) leaves the
                // child to the next attempt (`cancel.rs`).
                if self.caller_stopped(step).await {
                    followed.stop_child("interrupt").await;
                }
                return Err(Error::Cancelled);
            }
        };
        let end = match end {
            Ok(end) => end?,
            Err(_) => {
                followed.stop_child("interrupt").await;
                CallEnd::Failed(ToolError::new(
                    ErrorCode::RemoteUnavailable.as_str(),
                    format!(
                        "the remote sub-agent did not end within {} s",
                        remote.timeout.as_secs()
                    ),
                ))
            }
        };
        followed.stage(sub_agent, end).await
    }
}

impl Followed<'_> {
    /// Starts (or attaches to) the child and follows it to its end.
    async fn run(&mut self, message: String) -> Result<CallEnd, Error> {
        let meta = self
            .activities
            .store
            .session_meta(&self.step.address)
            .await?;
        let start = StartRequest {
            user_id: meta.user_id,
            tags: meta.tags,
            metadata: meta.metadata,
            ..StartRequest::new(&self.child, message)
        };
        match self.producer.start(&start).await {
            Ok(Started::New(started)) => self.stream_id = started.stream_id,
            Ok(Started::Attached { stream_id }) => self.stream_id = stream_id,
            Err(error) => return Ok(CallEnd::Failed(tool_error_of(error))),
        }
        tracing::info!(
            session = %self.step.address.session_id,
            child = %self.child,
            agent = self.remote.agent_type(),
            "remote sub-agent started"
        );
        // The first forward writes subagent_start, once for the child.
        if self.forward(&[], None).await? == Forwarded::AlreadyCommitted {
            return Ok(CallEnd::Stale);
        }
        self.follow().await
    }

    /// Follows the child's stream from the durable cursor until its end, reconnecting after a
    /// break (at most `stream_retries` times) and escalating a child its producer lost.
    async fn follow(&mut self) -> Result<CallEnd, Error> {
        let (mut breaks, mut lost) = (0u32, 0u32);
        let mut floor = 0u64;
        let mut wait = self.remote.retry_base_delay;
        loop {
            let cursor = self
                .activities
                .store
                .remote_cursor(&self.step.address, &self.child)
                .await?
                .max(floor);
            let stop = match self.producer.sse(&self.child, cursor).await {
                Ok(response) => self.read(response).await?,
                Err(CallError::Refused(body)) => StreamStop::Refused(body),
                Err(CallError::Unavailable(reason)) => StreamStop::Broken(reason),
            };
            match stop {
                StreamStop::End(end) => return Ok(CallEnd::Ended(end)),
                StreamStop::Stale => return Ok(CallEnd::Stale),
                StreamStop::Refused(body) if body.code == ErrorCode::Truncated => {
                    floor = self.resnapshot("TRUNCATED").await.max(floor);
                    continue;
                }
                StreamStop::Refused(body) => {
                    return Ok(CallEnd::Failed(tool_error_of(CallError::Refused(body))));
                }
                StreamStop::Resnapshot(why) => {
                    floor = self.resnapshot(why).await.max(floor);
                    continue;
                }
                StreamStop::Quiet => {}
                StreamStop::Broken(reason) => {
                    breaks += 1;
                    if breaks > self.remote.stream_retries {
                        return Ok(CallEnd::Failed(ToolError::new(
                            ErrorCode::RemoteUnavailable.as_str(),
                            format!("the remote sub-agent's stream broke {breaks} times: {reason}"),
                        )));
                    }
                    tokio::time::sleep(wait).await;
                    wait = wait.saturating_mul(2);
                }
            }
            // Quiet or broken: is the child still being run?
            match self.producer.status(&self.child).await {
                Ok(status) if status.status == Status::Running && !status.is_executing => {
                    lost += 1;
                    if lost >= self.remote.dead_after_attaches {
                        if !self.remote.resume_dead_producer {
                            return Ok(CallEnd::Failed(ToolError::new(
                                ErrorCode::ProducerDead.as_str(),
                                format!(
                                    "the remote sub-agent was running with nothing executing it \
                                     over {lost} attaches: its producer lost it"
                                ),
                            )));
                        }
                        tracing::warn!(child = %self.child, "resuming a remote child its producer lost");
                        if let Err(error) = self.producer.resume(&self.child).await {
                            tracing::warn!(child = %self.child, %error, "the resume of a lost remote child failed");
                        }
                        lost = 0;
                    }
                }
                Ok(_) => lost = 0,
                Err(CallError::Refused(body)) if body.code == ErrorCode::NotFound => {
                    return Ok(CallEnd::Failed(tool_error_of(CallError::Refused(body))));
                }
                Err(_) => {}
            }
        }
    }

    /// Reads one connection of the child's stream, forwarding its chunks as they come.
    async fn read(&self, response: reqwest::Response) -> Result<StreamStop, Error> {
        let mut body = response.bytes_stream();
        let mut decoder = Decoder::new();
        let mut last_event = Instant::now();
        loop {
            let next = tokio::time::timeout(self.remote.read_timeout, body.next()).await;
            let bytes = match next {
                Err(_) => return Ok(StreamStop::Quiet),
                Ok(None) => {
                    return Ok(StreamStop::Broken("the stream ended without an end".into()));
                }
                Ok(Some(Err(error))) => return Ok(StreamStop::Broken(error.to_string())),
                Ok(Some(Ok(bytes))) => bytes,
            };
            let mut events: Vec<(String, String)> = Vec::new();
            let fed = decoder.feed(&bytes, &mut |event| {
                events.push((event.event.to_owned(), event.data.to_owned()));
                Ok::<(), NotUtf8>(())
            });
            if fed.is_err() {
                return Ok(StreamStop::Broken("the stream is not UTF-8".into()));
            }
            if events.is_empty() {
                // Keep-alives only: a child that says nothing for long is looked at.
                if last_event.elapsed() > self.remote.read_timeout {
                    return Ok(StreamStop::Quiet);
                }
                continue;
            }
            last_event = Instant::now();
            let mut batch = Vec::with_capacity(events.len());
            let mut stop = None;
            for (name, data) in events {
                if let Some(found) = self.frame(&name, &data, &mut batch) {
                    stop = Some(found);
                    break;
                }
            }
            if !batch.is_empty() && self.forward(&batch, None).await? == Forwarded::AlreadyCommitted
            {
                return Ok(StreamStop::Stale);
            }
            if let Some(stop) = stop {
                return Ok(stop);
            }
        }
    }

    /// One event of the stream: a chunk to forward (pushed on `batch`), or why the read stops.
    fn frame(&self, name: &str, data: &str, batch: &mut Vec<ForwardedChunk>) -> Option<StreamStop> {
        if name == "error" {
            return Some(match serde_json::from_str::<ErrorBody>(data) {
                Ok(body) => StreamStop::Refused(body),
                Err(_) => StreamStop::Broken("an error frame without the envelope".into()),
            });
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(value) => value,
            Err(error) => {
                tracing::warn!(child = %self.child, %error, "a remote frame is not JSON; skipped");
                return None;
            }
        };
        match value.get("type").and_then(Value::as_str) {
            Some("end") => {
                return Some(match serde_json::from_value::<EndFrame>(value) {
                    Ok(end) => StreamStop::End(end),
                    Err(error) => {
                        StreamStop::Broken(format!("an end frame Baton cannot read: {error}"))
                    }
                });
            }
            Some("stream_resync") => return Some(StreamStop::Resnapshot("stream_resync")),
            _ => {}
        }
        let chunk: StreamChunk = match serde_json::from_value(value) {
            Ok(chunk) => chunk,
            Err(error) => {
                tracing::warn!(child = %self.child, %error, "a remote chunk Baton cannot read; skipped");
                return None;
            }
        };
        if !self.stream_id.is_empty() && chunk.header.stream_id != self.stream_id {
            return Some(StreamStop::Resnapshot("a changed streamId"));
        }
        // A child's suspension is its turn's end, which the end frame reports; on the caller's
        // stream it would read as the caller's own.
        if matches!(
            chunk.kind,
            ChunkKind::Suspended { .. } | ChunkKind::End { .. }
        ) {
            return None;
        }
        batch.push(ForwardedChunk {
            kind: chunk.kind,
            agent_id: chunk.header.agent_id,
            run_id: chunk.header.run_id,
            source: RemoteSource {
                child_session_id: self.child.clone(),
                child_sequence: chunk.sequence,
                stream_id: chunk.header.stream_id,
            },
        });
        None
    }

    /// Re-reads the child's snapshot (a re-snapshot trigger): the retention floor to read on
    /// from, and the stream id to expect.
    async fn resnapshot(&mut self, why: &'static str) -> u64 {
        tracing::info!(child = %self.child, why, "re-snapshotting a remote child");
        match self.producer.snapshot(&self.child).await {
            Ok(snapshot) => {
                self.stream_id = snapshot.stream_id;
                snapshot.oldest_retained_sequence
            }
            Err(error) => {
                tracing::warn!(child = %self.child, %error, "a remote child's snapshot failed");
                0
            }
        }
    }

    async fn forward(
        &self,
        chunks: &[ForwardedChunk],
        usage: Option<&UsageRollup>,
    ) -> Result<Forwarded, Error> {
        let child = (
            self.child.as_str(),
            self.remote.agent_type(),
            self.call.id.as_str(),
        );
        Ok(self
            .activities
            .store
            .forward_remote_chunks(self.step.step_ref(), child, chunks, usage)
            .await?)
    }

    /// Passes a stop on to the child, best effort.
    async fn stop_child(&self, action: &str) {
        if let Err(error) = self.producer.stop(&self.child, action).await {
            tracing::warn!(child = %self.child, %error, "passing a stop to a remote child failed");
        }
    }

    /// Stages the call's result from how the child ended.
    async fn stage(&self, sub_agent: &SubAgent, end: CallEnd) -> Result<SubAgentEnd, Error> {
        let (status, outcome, output, state, usage) = match end {
            CallEnd::Stale => return Ok(SubAgentEnd::Answered),
            CallEnd::Failed(error) => (
                EndStatus::Failed,
                ToolOutcome::Error(error),
                None,
                None,
                None,
            ),
            CallEnd::Ended(end) => match end.status {
                Status::Completed => {
                    let output = end.output.unwrap_or_default();
                    let outcome = match sub_agent.result_of(&output) {
                        Ok(value) => ToolOutcome::Result(value),
                        Err(error) => ToolOutcome::Error(error),
                    };
                    (
                        EndStatus::Completed,
                        outcome,
                        Some(output),
                        end.state,
                        end.usage,
                    )
                }
                Status::Failed => {
                    let error = end.error.map_or_else(
                        || ToolError::new(codes::TOOL_FAILED, "the remote sub-agent failed"),
                        |error| ToolError::new(error.code.as_str(), error.message),
                    );
                    (
                        EndStatus::Failed,
                        ToolOutcome::Error(error),
                        None,
                        None,
                        end.usage,
                    )
                }
                Status::Interrupted => (
                    EndStatus::Interrupted,
                    ToolOutcome::Error(ToolError::new(
                        codes::SUB_AGENT_INTERRUPTED,
                        "the remote sub-agent was interrupted before it answered",
                    )),
                    None,
                    None,
                    end.usage,
                ),
                Status::Paused | Status::Running => (
                    EndStatus::Failed,
                    ToolOutcome::Error(ToolError::new(
                        ErrorCode::ClientToolUnsupported.as_str(),
                        "the remote sub-agent waits for a person (a client tool or an approval), \
                         which is not relayed across services",
                    )),
                    None,
                    None,
                    end.usage,
                ),
            },
        };
        if status != EndStatus::Failed || usage.is_some() {
            self.record_usage(usage).await?;
        }
        let state_patch = match status {
            EndStatus::Completed => self.fold(state, output.as_deref()).await?,
            _ => None,
        };
        let result = ToolResult {
            tool_call_id: self.call.id.clone(),
            tool_name: self.call.name.clone(),
            outcome,
        };
        self.activities
            .store
            .stage_sub_agent_result(
                self.step.step_ref(),
                &result,
                ChildEnd {
                    child_session_id: &self.child,
                    tool_call_id: &self.call.id,
                    status,
                    output: output.as_deref(),
                },
                state_patch.as_ref(),
            )
            .await?;
        Ok(SubAgentEnd::Answered)
    }

    /// Records the child's rollup: the end's, else read from `usage`; one that cannot be had
    /// is skipped with a warning, never failing the call.
    async fn record_usage(&self, from_end: Option<Value>) -> Result<(), Error> {
        let from_end = from_end.and_then(|value| serde_json::from_value::<UsageRollup>(value).ok());
        let rollup = match from_end {
            Some(rollup) => rollup,
            None => match self.producer.usage(&self.child).await {
                Ok(rollup) => rollup,
                Err(error) => {
                    tracing::warn!(child = %self.child, %error, "a remote child's usage is not counted");
                    return Ok(());
                }
            },
        };
        self.forward(&[], Some(&rollup)).await?;
        Ok(())
    }

    /// The caller's `after_sub_agent` fold of the completed child's state: the end's, else its
    /// snapshot's; skipped with a warning over the declared cap.
    async fn fold(
        &self,
        state: Option<Value>,
        output: Option<&str>,
    ) -> Result<Option<json_patch::Patch>, Error> {
        let agent = self.activities.agent(&self.step.agent_type)?;
        if !agent.has_after_sub_agent() {
            return Ok(None);
        }
        let state = match state {
            Some(state) => Some(state),
            None => match self.producer.snapshot(&self.child).await {
                Ok(snapshot) => Some(snapshot.state),
                Err(error) => {
                    tracing::warn!(child = %self.child, %error, "a remote child's state is not folded");
                    None
                }
            },
        };
        let bytes = state.as_ref().map_or(0, |state| state.to_string().len());
        let state = if bytes > self.remote.max_fold_state_bytes {
            tracing::warn!(
                child = %self.child,
                bytes,
                cap = self.remote.max_fold_state_bytes,
                "a remote child's state is over the fold's cap; it is not folded"
            );
            None
        } else {
            state
        };
        self.activities
            .fold_ended_child(
                self.step,
                agent,
                &self.call.id,
                self.remote.agent_type(),
                state.as_ref(),
                EndStatus::Completed,
                output,
            )
            .await
    }
}

/// A failed request as the call's tool error: the producer's refusal with its own code and
/// message, or `remote_unavailable`.
fn tool_error_of(error: CallError) -> ToolError {
    match error {
        CallError::Refused(body) => ToolError::new(body.code.as_str(), body.error),
        CallError::Unavailable(reason) => ToolError::new(
            ErrorCode::RemoteUnavailable.as_str(),
            format!("the remote sub-agent's producer is unavailable: {reason}"),
        ),
    }
}
