//! The remote transport of sub-agent calls: the body of `follow_remote_sub_agent`, one activity
//! that starts the call's child on the producer (or attaches to it), follows its stream and
//! forwards its chunks onto the caller's stream, and stages the call's result from the child's
//! end. Everything it needs to survive a retry or a lost worker is in Redis or derived: the
//! child's id from the call, where to resume the stream from the caller's state (the cursor
//! `forward_remote.lua` keeps), so a retried attempt attaches and reads on, never starting a
//! second child nor forwarding a chunk twice.

use super::ending::{EndFrame, TurnEnd, ending_of};
use crate::{
    AgentActivities,
    failure::Error,
    heartbeat::with_heartbeats,
    io::{StepInput, SubAgentEnd, ToolInput},
};
use baton_core::{
    ErrorCode, StreamChunk, ToolError,
    chunk::{ChunkKind, EndStatus, RemoteSource},
    message::ToolCall,
    remote::{Callback, ErrorBody, StartRequest, Status},
    sse::{Decoder, NotUtf8},
    store::{FollowMode, Forwarded, ForwardedChunk, Recorded, RemoteWait},
    subagent::{self, RemoteAgent, SubAgent, Transport},
    usage::UsageRollup,
};
use baton_remote::producer::{CallError, Producer, Started};
use futures::StreamExt;
use serde_json::Value;
use std::time::Instant;
use temporalio_sdk::activities::ActivityContext;

/// How one read of the child's stream stopped.
enum StreamStop {
    End(EndFrame),
    /// Nothing came within the per-read deadline: look at the child's status.
    Quiet,
    /// The follow window has passed without the child's turn ending: let go of it.
    Window,
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
pub(super) enum CallEnd {
    /// The child still runs past the follow window: the caller waits on it holding nothing.
    Waiting,
    Ended(EndFrame),
    Failed(ToolError),
    Stale,
}

/// The call being followed: within its step, or (`mode` suspended) after its caller's resume
/// continued the child.
pub(super) struct Followed<'a> {
    pub(super) activities: &'a AgentActivities,
    pub(super) producer: Producer<'a>,
    pub(super) remote: &'a RemoteAgent,
    pub(super) step: &'a StepInput,
    pub(super) call: &'a ToolCall,
    pub(super) child: String,
    pub(super) stream_id: String,
    pub(super) mode: FollowMode,
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
        let (sub_agent, remote) = self.remote_sub_agent(&step.agent_type, &call.name)?;
        let Some(message) = self.first_message_or_staged(step, &call, sub_agent).await? else {
            return Ok(SubAgentEnd::Answered);
        };
        let mut followed = Followed::new(self, remote, step, &call, FollowMode::InStep).await?;
        let end = followed.bounded(ctx, Some(message)).await?;
        followed.stage(sub_agent, end).await
    }
}

impl AgentActivities {
    /// The remote sub-agent `tool_name` of `agent_type`, with its declaration.
    pub(super) fn remote_sub_agent(
        &self,
        agent_type: &str,
        tool_name: &str,
    ) -> Result<(&SubAgent, &RemoteAgent), Error> {
        self.agent(agent_type)?
            .sub_agent(tool_name)
            .and_then(|sub| match sub.declared_transport() {
                Transport::Remote(remote) => Some((sub, remote.as_ref())),
                Transport::Local | Transport::A2a(_) => None,
            })
            .ok_or_else(|| {
                Error::typed(
                    ErrorCode::Internal,
                    format!("{tool_name} is not a remote sub-agent"),
                )
            })
    }
}

impl<'a> Followed<'a> {
    /// The follow of `call` of `step`, whose child is derived from the call (and the
    /// service's secret, see `Store::remote_child_id`).
    pub(super) async fn new(
        activities: &'a AgentActivities,
        remote: &'a RemoteAgent,
        step: &'a StepInput,
        call: &'a ToolCall,
        mode: FollowMode,
    ) -> Result<Self, Error> {
        let child = activities
            .store
            .remote_child_id(&step.address, &call.id)
            .await?;
        Ok(Self {
            activities,
            producer: Producer::new(&activities.http, remote),
            remote,
            step,
            call,
            child,
            stream_id: String::new(),
            mode,
        })
    }

    /// Starts (or attaches to) the child and follows it, or (`message` none: a child its
    /// caller's resume continued) follows it on, heartbeating, within the call's `timeout`: past
    /// it, or when the activity is cancelled because the caller was interrupted or aborted, the
    /// child is interrupted, best effort.
    pub(super) async fn bounded(
        &mut self,
        ctx: &ActivityContext,
        message: Option<String>,
    ) -> Result<CallEnd, Error> {
        let (timeout, heartbeat_every) = (self.remote.timeout, self.activities.heartbeat_every);
        let end = {
            let work = async {
                match message {
                    Some(message) => self.run(message).await,
                    None => self.follow().await,
                }
            };
            let work = tokio::time::timeout(timeout, work);
            tokio::select! {
                end = with_heartbeats(ctx, heartbeat_every, work) => Some(end),
                () = ctx.cancelled() => None,
            }
        };
        match end {
            None => {
                // The caller was interrupted or aborted: pass it on, best effort. An attempt
                // only taken away (a heartbeat timed out, a worker shutting down) leaves the
                // child to the next attempt (`cancel.rs`).
                self.pass_stop_on().await;
                Err(Error::Cancelled)
            }
            Some(Ok(Err(error))) => {
                // Fenced: the caller's stop refused this follower's next forward (its run
                // guard) before Temporal's cancellation reached the activity. Passed on here,
                // once, as the caller was stopped (`cancel.rs`); any other failure stops nothing.
                self.pass_stop_on().await;
                Err(error)
            }
            Some(Ok(end)) => end,
            Some(Err(_)) => {
                self.stop_child("interrupt").await;
                Ok(CallEnd::Failed(ToolError::new(
                    ErrorCode::RemoteUnavailable.as_str(),
                    format!(
                        "the remote sub-agent did not end within {} s",
                        timeout.as_secs()
                    ),
                )))
            }
        }
    }

    /// Starts (or attaches to) the child and follows it to its end.
    async fn run(&mut self, message: String) -> Result<CallEnd, Error> {
        let meta = self
            .activities
            .store
            .session_meta(&self.step.address)
            .await?;
        let callback = match &self.activities.remote_callbacks {
            Some(base) => {
                let candidate = subagent::new_callback_token();
                let kept = self
                    .activities
                    .store
                    .remote_callback_token(self.step.step_ref(), &self.child, &candidate)
                    .await?;
                let Some(token) = kept else {
                    return Ok(CallEnd::Stale);
                };
                Some(Callback {
                    url: format!("{base}/{}", self.step.address.session_id),
                    token,
                })
            }
            None => None,
        };
        let start = StartRequest {
            caller_session_id: Some(self.step.address.session_id.clone()),
            user_id: meta.user_id,
            tags: meta.tags,
            metadata: meta.metadata,
            callback,
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
    pub(super) async fn follow(&mut self) -> Result<CallEnd, Error> {
        let (mut breaks, mut lost) = (0u32, 0u32);
        let mut floor = 0u64;
        let until = Instant::now() + self.remote.follow_window;
        let mut wait = self.remote.retry_base_delay;
        loop {
            let cursor = self
                .activities
                .store
                .remote_cursor(&self.step.address, &self.child)
                .await?
                .max(floor);
            let stop = match self.producer.sse(&self.child, cursor).await {
                Ok(response) => self.read(response, until).await?,
                Err(CallError::Refused(body)) => StreamStop::Refused(body),
                Err(CallError::Unavailable(reason)) => StreamStop::Broken(reason),
            };
            match stop {
                StreamStop::End(end) => return Ok(CallEnd::Ended(end)),
                StreamStop::Window => return Ok(CallEnd::Waiting),
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
            if Instant::now() >= until {
                return Ok(CallEnd::Waiting);
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
    async fn read(&self, response: reqwest::Response, until: Instant) -> Result<StreamStop, Error> {
        let mut body = response.bytes_stream();
        let mut decoder = Decoder::new();
        let mut last_event = Instant::now();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(StreamStop::Window);
            }
            let next = tokio::time::timeout(self.remote.read_timeout.min(left), body.next()).await;
            let bytes = match next {
                Err(_) if Instant::now() >= until => return Ok(StreamStop::Window),
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
            .forward_remote_chunks(self.mode, self.step.step_ref(), child, chunks, usage)
            .await?)
    }

    /// Puts the call in the remote-wait index, due now: the consumer's sweep looks at the child's
    /// `status` from its next pass on, and starts its follow once its turn has ended.
    async fn index_wait(&self) -> Result<(), Error> {
        tracing::info!(child = %self.child, window = ?self.remote.follow_window, "a remote child runs past its follow window; its caller waits holding nothing");
        Ok(self
            .activities
            .store
            .index_remote_wait(&RemoteWait {
                address: self.step.address.clone(),
                run_id: self.step.run_id.clone(),
                tool_call_id: self.call.id.clone(),
                due_at: baton_core::store::now_ms(),
            })
            .await?)
    }

    /// Passes a stop on to the child, best effort.
    pub(super) async fn stop_child(&self, action: &str) {
        if let Err(error) = self.producer.stop(&self.child, action).await {
            tracing::warn!(child = %self.child, %error, "passing a stop to a remote child failed");
        }
    }

    /// How the child's turn ended for the caller: paused for a person (its calls recorded in
    /// the caller, see `relay.rs`), stale, or ended (its rollup recorded).
    pub(super) async fn turn_end(
        &self,
        sub_agent: &SubAgent,
        end: CallEnd,
    ) -> Result<TurnEnd, Error> {
        let end = match end {
            CallEnd::Stale => return Ok(TurnEnd::Stale),
            CallEnd::Waiting => {
                self.index_wait().await?;
                return Ok(TurnEnd::Waiting);
            }
            CallEnd::Failed(error) => Err(error),
            CallEnd::Ended(end) if end.status == Status::Paused => {
                match self.record_pause(end.sequence).await? {
                    Some(Recorded::Written) => return Ok(TurnEnd::Paused),
                    Some(Recorded::Stale) => return Ok(TurnEnd::Stale),
                    None => Ok(end),
                }
            }
            CallEnd::Ended(end) => Ok(end),
        };
        let mut ending = ending_of(sub_agent, end);
        if ending.status != EndStatus::Failed || ending.usage.is_some() {
            self.record_usage(ending.usage.take()).await?;
        }
        Ok(TurnEnd::Ended(ending))
    }

    /// Stages the call's result from how the child ended; a child paused for a person leaves
    /// the step awaiting it.
    async fn stage(&self, sub_agent: &SubAgent, end: CallEnd) -> Result<SubAgentEnd, Error> {
        let mut ending = match self.turn_end(sub_agent, end).await? {
            TurnEnd::Paused | TurnEnd::Waiting => return Ok(SubAgentEnd::AwaitingChild),
            TurnEnd::Stale => {
                // Fenced: the step is committed, or the caller was stopped before this
                // follower's cancellation came; a stop is passed on (`cancel.rs`).
                self.pass_stop_on().await;
                return Ok(SubAgentEnd::Answered);
            }
            TurnEnd::Ended(ending) => ending,
        };
        let state_patch = match ending.status {
            EndStatus::Completed => {
                self.fold(ending.state.take(), ending.output.as_deref())
                    .await?
            }
            _ => None,
        };
        self.activities
            .stage_remote_end(self.step, self.call, &self.child, ending, state_patch)
            .await?;
        Ok(SubAgentEnd::Answered)
    }

    /// Records the child's rollup: the end's, else read from `usage`; one that cannot be had
    /// is skipped with a warning, never failing the call.
    pub(super) async fn record_usage(&self, from_end: Option<Value>) -> Result<(), Error> {
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
    pub(super) async fn fold(
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
