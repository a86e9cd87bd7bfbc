//! The A2A transport of sub-agent calls: the body of `follow_a2a_sub_agent`, one activity that
//! sends the call's message to an agent served over A2A (in a context derived from the call),
//! follows the task it began (its stream, or `tasks/get` every `poll_interval` for an agent that
//! does not stream), forwards its status messages and artifacts onto the caller's stream, and
//! stages the call's result from the task's end. A task that asks for input (`input-required`)
//! is relayed to people through the caller's root (`a2a_question.rs`), and the follow after the
//! caller's resume goes on with the same task (`follow_resumed_a2a_child`).
//!
//! At most once: the message is marked sent in the caller's state before it goes out and the
//! task's id is recorded once the agent names it (`Store::mark_a2a_sent`), so a retried attempt
//! follows the same task, and one that finds the mark without a task stages
//! `tool_outcome_unknown` rather than sending the message a second time.

use super::ending::TurnEnd;
use crate::{
    AgentActivities,
    failure::Error,
    heartbeat::with_heartbeats,
    io::{StepInput, SubAgentEnd, ToolInput},
};
use baton_core::{
    ErrorCode, ToolError,
    a2a::{Event, MessageSendParams, Part, PushNotificationConfig, Task, TaskState},
    chunk::{ChunkKind, RemoteSource},
    message::ToolCall,
    store::{A2aChild, FollowMode, Forwarded, ForwardedChunk},
    subagent::{self, A2aAgent, SubAgent, Transport},
    tool::codes,
    usage::UsageRollup,
};
use baton_remote::a2a::{A2aClient, A2aError, EventStream, Next};
use std::{collections::BTreeMap, time::Instant};
use temporalio_sdk::activities::ActivityContext;

/// How following the task stopped.
pub(super) enum TaskStop {
    /// The task reached a state that ends a stream (terminal, or waiting on the client).
    Ended(Box<Task>),
    /// The agent answered with a message and no task: the call's answer.
    Answered(String),
    Failed(ToolError),
    /// The caller's step is committed, or the caller moved on: nothing more is written.
    Stale,
    /// The follow window passed with the task still working: the caller waits on it holding
    /// nothing, and the consumer's remote-wait sweep reads the task from then on.
    Waiting,
}

/// One call's task being followed: within its step, or after its caller's resume.
pub(super) struct A2aFollow<'a> {
    pub(super) activities: &'a AgentActivities,
    pub(super) agent: &'a A2aAgent,
    pub(super) sub_agent: &'a SubAgent,
    pub(super) step: &'a StepInput,
    pub(super) call: &'a ToolCall,
    /// The derived id the call's context and chunks are named by.
    pub(super) child: String,
    pub(super) mode: FollowMode,
    pub(super) task_id: Option<String>,
    /// The child sequence the next forwarded chunk gets (A2A events carry none).
    pub(super) next_sequence: u64,
    /// Text of the task's artifacts seen so far, by artifact id.
    pub(super) artifacts: BTreeMap<String, String>,
    /// Questions already answered (their producer ids), which a task that has not yet moved on
    /// from still shows: not asked again.
    pub(super) answered: Vec<String>,
    /// When the follow window ends: past it, a working task is let go of.
    until: Instant,
}

impl AgentActivities {
    /// The body of `follow_a2a_sub_agent`.
    pub(crate) async fn follow_a2a_child_of(
        &self,
        ctx: &ActivityContext,
        input: &ToolInput,
    ) -> Result<SubAgentEnd, Error> {
        let step = &input.step;
        let Some(call) = self.unanswered_call(input).await? else {
            return Ok(SubAgentEnd::Answered);
        };
        let (sub_agent, agent) = self.a2a_sub_agent(&step.agent_type, &call.name)?;
        let Some(message) = self.first_message_or_staged(step, &call, sub_agent).await? else {
            return Ok(SubAgentEnd::Answered);
        };
        let mut follow =
            A2aFollow::new(self, agent, sub_agent, step, &call, FollowMode::InStep).await?;
        let stop = follow.bounded(ctx, Some(message)).await?;
        match follow.turn_end(stop).await? {
            TurnEnd::Paused | TurnEnd::Waiting => Ok(SubAgentEnd::AwaitingChild),
            TurnEnd::Stale => {
                follow.cancel_task().await;
                Ok(SubAgentEnd::Answered)
            }
            TurnEnd::Ended(ending) => {
                follow.stage(ending).await?;
                Ok(SubAgentEnd::Answered)
            }
        }
    }

    /// The A2A sub-agent `tool_name` of `agent_type`, with its declaration.
    pub(super) fn a2a_sub_agent(
        &self,
        agent_type: &str,
        tool_name: &str,
    ) -> Result<(&SubAgent, &A2aAgent), Error> {
        self.agent(agent_type)?
            .sub_agent(tool_name)
            .and_then(|sub| match sub.declared_transport() {
                Transport::A2a(agent) => Some((sub, agent.as_ref())),
                Transport::Local | Transport::Remote(_) => None,
            })
            .ok_or_else(|| {
                Error::typed(
                    ErrorCode::Internal,
                    format!("{tool_name} is not an A2A sub-agent"),
                )
            })
    }
}

impl<'a> A2aFollow<'a> {
    pub(super) async fn new(
        activities: &'a AgentActivities,
        agent: &'a A2aAgent,
        sub_agent: &'a SubAgent,
        step: &'a StepInput,
        call: &'a ToolCall,
        mode: FollowMode,
    ) -> Result<Self, Error> {
        let child = activities
            .store
            .remote_child_id(&step.address, &call.id)
            .await?;
        let cursor = activities
            .store
            .remote_cursor(&step.address, &child)
            .await?;
        let task_id = match activities.store.a2a_child(&step.address, &child).await? {
            A2aChild::Task(task_id) => Some(task_id),
            A2aChild::Unsent | A2aChild::Sent => None,
        };
        Ok(Self {
            activities,
            agent,
            sub_agent,
            step,
            call,
            child,
            mode,
            task_id,
            next_sequence: cursor + 1,
            artifacts: BTreeMap::new(),
            answered: Vec::new(),
            until: Instant::now() + agent.follow_window,
        })
    }

    /// Sends the call's message (`message` some, the first attempt) or follows the task it
    /// began, heartbeating, within the call's `timeout`: past it, or when the activity is
    /// cancelled because the caller was interrupted or aborted, the task is canceled, best
    /// effort.
    pub(super) async fn bounded(
        &mut self,
        ctx: &ActivityContext,
        message: Option<String>,
    ) -> Result<TaskStop, Error> {
        let (timeout, heartbeat_every) = (self.agent.timeout, self.activities.heartbeat_every);
        let end = {
            let work = tokio::time::timeout(timeout, self.run(message));
            tokio::select! {
                end = with_heartbeats(ctx, heartbeat_every, work) => Some(end),
                () = ctx.cancelled() => None,
            }
        };
        match end {
            None => {
                self.cancel_task().await;
                Err(Error::Cancelled)
            }
            Some(Ok(end)) => end,
            Some(Err(_)) => {
                self.cancel_task().await;
                Ok(TaskStop::Failed(ToolError::new(
                    ErrorCode::RemoteUnavailable.as_str(),
                    format!(
                        "the A2A agent's task did not end within {} s",
                        timeout.as_secs()
                    ),
                )))
            }
        }
    }

    async fn run(&mut self, message: Option<String>) -> Result<TaskStop, Error> {
        let client = match A2aClient::connect(&self.activities.http, self.agent).await {
            Ok(client) => client,
            Err(error) => return Ok(TaskStop::Failed(tool_error_of(&error))),
        };
        let stop = match (self.task_id.is_none(), message) {
            (true, None) => TaskStop::Failed(unknown_outcome()),
            (true, Some(message)) => match self.send(&client, message).await? {
                Some(stop) => stop,
                None => self.follow(&client).await?,
            },
            (false, _) => self.follow(&client).await?,
        };
        // A completed task's artifacts, whole: a stream's status event carries none.
        Ok(match stop {
            TaskStop::Ended(task)
                if task.status.state == TaskState::Completed && task.artifacts.is_empty() =>
            {
                match client.get(&task.id).await {
                    Ok(whole) if whole.status.state == TaskState::Completed => {
                        TaskStop::Ended(Box::new(whole))
                    }
                    _ => TaskStop::Ended(task),
                }
            }
            stop => stop,
        })
    }

    /// Sends the call's message, once: the stop it already came to, or `None` with the task
    /// recorded, to follow.
    async fn send(
        &mut self,
        client: &A2aClient<'_>,
        text: String,
    ) -> Result<Option<TaskStop>, Error> {
        let mut params = MessageSendParams::user(
            format!("{}-call", self.child),
            vec![Part::text(text)],
            self.child.clone(),
            None,
        );
        if let Some(base) = self
            .activities
            .remote_callbacks
            .as_ref()
            .filter(|_| client.pushes())
        {
            // The task's updates are pushed to this service with a token only it and the
            // agent know, so a caller past its window learns of the task's end.
            let candidate = subagent::new_callback_token();
            let Some(token) = self
                .activities
                .store
                .remote_callback_token(self.step.step_ref(), &self.child, &candidate)
                .await?
            else {
                return Ok(Some(TaskStop::Stale));
            };
            if let Some(configuration) = params.configuration.as_mut() {
                configuration.push_notification_config = Some(PushNotificationConfig {
                    id: None,
                    url: format!("{base}/{}/a2a", self.step.address.session_id),
                    token: Some(token),
                    authentication: None,
                });
            }
        }
        // The first forward writes subagent_start, once for the child.
        if self.forward(&[], None).await? == Forwarded::AlreadyCommitted {
            return Ok(Some(TaskStop::Stale));
        }
        // Marked last, right before the request: a lost worker between the two is the one
        // case whose outcome is unknown.
        let child = (self.call.id.as_str(), self.child.as_str());
        let before = self
            .activities
            .store
            .mark_a2a_sent(self.mode, self.step.step_ref(), child)
            .await?;
        match before {
            None => return Ok(Some(TaskStop::Stale)),
            Some(A2aChild::Sent) => return Ok(Some(TaskStop::Failed(unknown_outcome()))),
            Some(A2aChild::Task(task_id)) => {
                self.task_id = Some(task_id);
                return Ok(None);
            }
            Some(A2aChild::Unsent) => {}
        }
        tracing::info!(
            session = %self.step.address.session_id,
            child = %self.child,
            streams = client.streams(),
            "an A2A sub-agent's message is sent"
        );
        if client.streams() {
            let mut events = match client.stream(&params).await {
                Ok(events) => events,
                Err(refused) if without_push(&mut params, &refused) => {
                    match client.stream(&params).await {
                        Ok(events) => events,
                        Err(error) => return Ok(Some(TaskStop::Failed(tool_error_of(&error)))),
                    }
                }
                Err(error) => return Ok(Some(TaskStop::Failed(tool_error_of(&error)))),
            };
            if has_push(&params)
                && let Some(refused) = events.refused_at_once(self.agent.read_timeout).await
            {
                if !without_push(&mut params, &refused) {
                    return Ok(Some(TaskStop::Failed(tool_error_of(&refused))));
                }
                events = match client.stream(&params).await {
                    Ok(events) => events,
                    Err(error) => return Ok(Some(TaskStop::Failed(tool_error_of(&error)))),
                };
            }
            return self.read(&mut events).await.map(|stop| match stop {
                Read::Stop(stop) => Some(stop),
                // Broken or quiet: the task, if one was named, is followed on.
                Read::Closed(_) | Read::Quiet if self.task_id.is_some() => None,
                Read::Closed(_) | Read::Quiet => Some(TaskStop::Failed(unknown_outcome())),
            });
        }
        let sent = match client.send(&params).await {
            Err(refused) if without_push(&mut params, &refused) => client.send(&params).await,
            sent => sent,
        };
        match sent {
            Ok(Event::Message(message)) => Ok(Some(TaskStop::Answered(text_of(&message.parts)))),
            Ok(Event::Task(task)) => {
                if !self.record_task(&task.id).await? {
                    return Ok(Some(TaskStop::Stale));
                }
                Ok(None)
            }
            Ok(_) => Ok(Some(TaskStop::Failed(ToolError::new(
                ErrorCode::RemoteUnavailable.as_str(),
                "the A2A agent answered message/send with neither a task nor a message",
            )))),
            Err(error) => Ok(Some(TaskStop::Failed(tool_error_of(&error)))),
        }
    }

    /// Follows the recorded task to a state that ends a stream: its stream (resubscribed after a
    /// break) when the agent streams, else `tasks/get` every `poll_interval`.
    async fn follow(&mut self, client: &A2aClient<'_>) -> Result<TaskStop, Error> {
        let Some(task_id) = self.task_id.clone() else {
            return Ok(TaskStop::Failed(unknown_outcome()));
        };
        let mut breaks = 0u32;
        loop {
            let task = match client.get(&task_id).await {
                Ok(task) => task,
                Err(error) => return Ok(TaskStop::Failed(tool_error_of(&error))),
            };
            if self.ends(&task) {
                return Ok(TaskStop::Ended(Box::new(task)));
            }
            if Instant::now() >= self.until {
                return Ok(TaskStop::Waiting);
            }
            if !client.streams() {
                tokio::time::sleep(self.agent.poll_interval).await;
                continue;
            }
            let mut events = match client.resubscribe(&task_id).await {
                Ok(events) => events,
                Err(error) if breaks < self.agent.max_retries => {
                    tracing::info!(child = %self.child, %error, "an A2A task's resubscribe failed; reading it again");
                    breaks += 1;
                    tokio::time::sleep(self.agent.poll_interval).await;
                    continue;
                }
                Err(error) => return Ok(TaskStop::Failed(tool_error_of(&error))),
            };
            match self.read(&mut events).await? {
                Read::Stop(stop) => return Ok(stop),
                Read::Quiet => {}
                Read::Closed(reason) => {
                    // A stream that ends at once (a task still showing an answered question,
                    // which an agent's resubscribe answers and closes) is read again a poll later.
                    tracing::debug!(child = %self.child, %reason, "an A2A task's stream closed; reading the task");
                    tokio::time::sleep(self.agent.poll_interval).await;
                }
            }
        }
    }

    /// Whether `task` is at a state this follow stops at: terminal, or asking for what nobody
    /// answered yet (a task that still shows an answered question has not moved on).
    fn ends(&self, task: &Task) -> bool {
        let state = task.status.state;
        if !state.ends_a_stream() {
            return false;
        }
        if state == TaskState::InputRequired && !self.answered.is_empty() {
            let asked = super::a2a_question::producer_ids(task);
            return !asked.iter().all(|id| self.answered.contains(id));
        }
        true
    }

    /// Reads one stream, forwarding what it says, until the task's state ends it.
    async fn read(&mut self, events: &mut EventStream) -> Result<Read, Error> {
        loop {
            let left = self.until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Read::Quiet);
            }
            let next = match events.next(self.agent.read_timeout.min(left)).await {
                Ok(next) => next,
                Err(refused @ A2aError::Refused { .. }) => {
                    return Ok(Read::Stop(TaskStop::Failed(tool_error_of(&refused))));
                }
                Err(A2aError::Unavailable(reason)) => return Ok(Read::Closed(reason)),
            };
            let event = match next {
                Next::Event(event) => *event,
                Next::Quiet => return Ok(Read::Quiet),
                Next::Closed(reason) => return Ok(Read::Closed(reason)),
            };
            let (task_id, chunks, ended) = match event {
                Event::Message(message) if self.task_id.is_none() => {
                    return Ok(Read::Stop(TaskStop::Answered(text_of(&message.parts))));
                }
                Event::Message(message) => (None, texts(&message.parts), None),
                Event::Task(task) => {
                    for artifact in &task.artifacts {
                        self.artifacts
                            .insert(artifact.artifact_id.clone(), text_of(&artifact.parts));
                    }
                    let ended = self.ends(&task).then(|| task.clone());
                    (Some(task.id.clone()), Vec::new(), ended)
                }
                Event::StatusUpdate(update) => {
                    let said = match (&update.status.message, update.status.state) {
                        (Some(message), TaskState::Working | TaskState::Submitted) => {
                            texts(&message.parts)
                        }
                        _ => Vec::new(),
                    };
                    let ended = update.status.state.ends_a_stream().then(|| Task {
                        id: update.task_id.clone(),
                        context_id: update.context_id.clone(),
                        status: update.status.clone(),
                        history: Vec::new(),
                        artifacts: Vec::new(),
                        metadata: update.metadata.clone(),
                    });
                    let ended = ended.filter(|task| self.ends(task));
                    (Some(update.task_id), said, ended)
                }
                Event::ArtifactUpdate(update) => {
                    let text = text_of(&update.artifact.parts);
                    let kept = self
                        .artifacts
                        .entry(update.artifact.artifact_id.clone())
                        .or_default();
                    // What is new on the stream: an appended piece, or what a replacement adds
                    // to the text already seen (an agent that sends the whole artifact last).
                    let new = if update.append {
                        kept.push_str(&text);
                        text
                    } else {
                        let added = text.strip_prefix(kept.as_str()).unwrap_or(&text).to_owned();
                        kept.clone_from(&text);
                        added
                    };
                    (Some(update.task_id), vec![new], None)
                }
            };
            if let Some(task_id) = task_id
                && self.task_id.is_none()
            {
                if !self.record_task(&task_id).await? {
                    return Ok(Read::Stop(TaskStop::Stale));
                }
                self.task_id = Some(task_id);
            }
            if !chunks.is_empty()
                && self.forward_texts(chunks).await? == Forwarded::AlreadyCommitted
            {
                return Ok(Read::Stop(TaskStop::Stale));
            }
            if let Some(task) = ended {
                return Ok(Read::Stop(TaskStop::Ended(Box::new(task))));
            }
        }
    }

    async fn record_task(&mut self, task_id: &str) -> Result<bool, Error> {
        let child = (self.call.id.as_str(), self.child.as_str());
        let recorded = self
            .activities
            .store
            .record_a2a_child_task(self.mode, self.step.step_ref(), child, task_id)
            .await?;
        if recorded {
            self.task_id = Some(task_id.to_owned());
        }
        Ok(recorded)
    }

    /// Forwards text the task said (a working status's message, a piece of an artifact).
    pub(super) async fn forward_texts(&mut self, texts: Vec<String>) -> Result<Forwarded, Error> {
        let task_id = self.task_id.clone().unwrap_or_default();
        let chunks: Vec<ForwardedChunk> = texts
            .into_iter()
            .filter(|text| !text.is_empty())
            .map(|delta| {
                let sequence = self.next_sequence;
                self.next_sequence += 1;
                ForwardedChunk {
                    kind: ChunkKind::TextDelta { step: 1, delta },
                    agent_id: self.child.clone(),
                    run_id: task_id.clone(),
                    source: RemoteSource {
                        child_session_id: self.child.clone(),
                        child_sequence: sequence,
                        stream_id: task_id.clone(),
                    },
                }
            })
            .collect();
        self.forward(&chunks, None).await
    }

    pub(super) async fn forward(
        &self,
        chunks: &[ForwardedChunk],
        usage: Option<&UsageRollup>,
    ) -> Result<Forwarded, Error> {
        let child = (
            self.child.as_str(),
            self.call.name.as_str(),
            self.call.id.as_str(),
        );
        Ok(self
            .activities
            .store
            .forward_remote_chunks(self.mode, self.step.step_ref(), child, chunks, usage)
            .await?)
    }
}

/// How one read of a stream stopped.
enum Read {
    Stop(TaskStop),
    /// Nothing came within the per-read deadline.
    Quiet,
    Closed(String),
}

/// The text parts of `parts`, one piece each.
fn texts(parts: &[Part]) -> Vec<String> {
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// What `parts` say as text: the text parts, and each data part as its JSON, one per line.
pub(super) fn text_of(parts: &[Part]) -> String {
    let lines: Vec<String> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text, .. } => Some(text.clone()),
            Part::Data { data, .. } => Some(serde_json::Value::Object(data.clone()).to_string()),
            Part::File { .. } => None,
        })
        .collect();
    lines.join("\n")
}

/// Whether the message asks for pushes.
fn has_push(params: &MessageSendParams) -> bool {
    params
        .configuration
        .as_ref()
        .is_some_and(|configuration| configuration.push_notification_config.is_some())
}

/// Takes the push configuration off a message the agent refused (a JSON-RPC error: no task
/// was begun), so it is sent again without: an agent that takes no pushes, or not to this
/// service's URL, is followed by its stream or polled instead. `false` when there was none to
/// take off (the refusal is the call's).
fn without_push(params: &mut MessageSendParams, refused: &A2aError) -> bool {
    let A2aError::Refused { code, message, .. } = refused else {
        return false;
    };
    if *code == 0 || !has_push(params) {
        return false;
    }
    tracing::info!(code, %message, "the A2A agent refused the message with a push configuration; it is sent again without");
    if let Some(configuration) = params.configuration.as_mut() {
        configuration.push_notification_config = None;
    }
    true
}

/// The call's message may have begun a task whose id was never recorded.
fn unknown_outcome() -> ToolError {
    ToolError::new(
        codes::TOOL_OUTCOME_UNKNOWN,
        "the A2A sub-agent's message was sent and its task was never recorded (the worker was \
         lost): whether it began a task is not known, and it is not sent again",
    )
}

/// A failed request as the call's tool error.
fn tool_error_of(error: &A2aError) -> ToolError {
    match error {
        A2aError::Refused { code, message, .. } => ToolError::new(
            codes::TOOL_FAILED,
            format!("the A2A agent refused the call ({code}): {message}"),
        ),
        A2aError::Unavailable(reason) => ToolError::new(
            ErrorCode::RemoteUnavailable.as_str(),
            format!("the A2A agent is unavailable: {reason}"),
        ),
    }
}
