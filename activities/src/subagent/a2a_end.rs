//! How an A2A task's stop ends the call (the follow itself is `a2a.rs`): asking for input (its
//! question relayed, `a2a_question.rs`), working past the window (the call in the remote-wait
//! index), stale, or ended: a completed task's output (its artifacts' text, what the follow had
//! not streamed of it forwarded first), a failed, rejected or auth-required one a tool error, a
//! canceled one `sub_agent_interrupted`; then the call's result staged with the caller's fold.
//! And the stop of the caller passed on: the task canceled.

use super::a2a::{A2aFollow, TaskStop, text_of};
use super::ending::{EndFrame, Ending, TurnEnd, ending_of};
use crate::failure::Error;
use baton_core::{
    ToolError,
    a2a::{Task, TaskState},
    chunk::EndStatus,
    remote::Status,
    store::Recorded,
    tool::codes,
    usage::UsageRollup,
};
use baton_remote::a2a::A2aClient;
use std::collections::BTreeMap;

impl A2aFollow<'_> {
    /// Puts the call in the remote-wait index, due now: the consumer's sweep reads the task
    /// (`tasks/get`) from its next pass on, and starts its follow once it has stopped working.
    async fn index_wait(&self) -> Result<(), Error> {
        tracing::info!(child = %self.child, window = ?self.agent.follow_window, "an A2A task works past its follow window; its caller waits holding nothing");
        Ok(self
            .activities
            .store
            .index_remote_wait(&baton_core::store::RemoteWait {
                address: self.step.address.clone(),
                run_id: self.step.run_id.clone(),
                tool_call_id: self.call.id.clone(),
                due_at: baton_core::store::now_ms(),
            })
            .await?)
    }

    /// Cancels the call's task, best effort (a stop of the caller passed on).
    pub(super) async fn cancel_task(&self) {
        let Some(task_id) = &self.task_id else {
            return;
        };
        let cancelled = match A2aClient::connect(&self.activities.http, self.agent).await {
            Ok(client) => client.cancel(task_id).await.map(drop),
            Err(error) => Err(error),
        };
        if let Err(error) = cancelled {
            tracing::warn!(child = %self.child, %error, "canceling an A2A sub-agent's task failed");
        }
    }

    /// How the task's stop reads for the caller: asking for input (its questions relayed), stale,
    /// or ended (its usage recorded).
    pub(super) async fn turn_end(&mut self, stop: TaskStop) -> Result<TurnEnd, Error> {
        let task = match stop {
            TaskStop::Stale => return Ok(TurnEnd::Stale),
            TaskStop::Waiting => {
                self.index_wait().await?;
                return Ok(TurnEnd::Waiting);
            }
            TaskStop::Failed(error) => {
                return Ok(TurnEnd::Ended(ending_of(self.sub_agent, Err(error))));
            }
            TaskStop::Answered(output) => {
                let end = EndFrame {
                    status: Status::Completed,
                    sequence: 0,
                    output: Some(output),
                    error: None,
                    usage: None,
                    state: None,
                };
                return Ok(TurnEnd::Ended(ending_of(self.sub_agent, Ok(end))));
            }
            TaskStop::Ended(task) => *task,
        };
        if task.status.state == TaskState::InputRequired {
            let sequence = self.next_sequence;
            return Ok(match self.record_question(&task, sequence).await? {
                Recorded::Written => TurnEnd::Paused,
                Recorded::Stale => TurnEnd::Stale,
            });
        }
        let ending = self.ending(task).await;
        if let Some(usage) = ending
            .usage
            .clone()
            .and_then(|value| serde_json::from_value::<UsageRollup>(value).ok())
        {
            self.forward(&[], Some(&usage)).await?;
        }
        Ok(TurnEnd::Ended(ending))
    }

    /// How a task in a terminal state (or asking for authentication) ends the call: the output
    /// of a completed one is its artifacts' text (the task read whole, see `run`), or its
    /// status message's.
    async fn ending(&mut self, task: Task) -> Ending {
        let said = task
            .status
            .message
            .as_ref()
            .map(|message| text_of(&message.parts))
            .unwrap_or_default();
        let usage = task
            .metadata
            .as_ref()
            .and_then(|metadata| metadata.get("baton"))
            .and_then(|baton| baton.get("usage"))
            .cloned();
        let status = match task.status.state {
            TaskState::Completed => Status::Completed,
            TaskState::Canceled => Status::Interrupted,
            state => {
                let error = ToolError::new(
                    codes::TOOL_FAILED,
                    format!(
                        "the A2A agent's task ended {}{}",
                        serde_json::to_value(state)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default(),
                        if said.is_empty() {
                            String::new()
                        } else {
                            format!(": {said}")
                        }
                    ),
                );
                return ending_of(self.sub_agent, Err(error));
            }
        };
        let mut output = self.artifact_text();
        if status == Status::Completed {
            if !task.artifacts.is_empty() {
                let whole: BTreeMap<String, String> = task
                    .artifacts
                    .iter()
                    .map(|artifact| (artifact.artifact_id.clone(), text_of(&artifact.parts)))
                    .collect();
                // What this follow has not streamed of the output (all of it, for a task that
                // ended before it was read) goes on the caller's stream before the end.
                let unseen: Vec<String> = whole
                    .iter()
                    .map(|(id, text)| {
                        let seen = self.artifacts.get(id).map_or("", String::as_str);
                        text.strip_prefix(seen).unwrap_or(text).to_owned()
                    })
                    .collect();
                if let Err(error) = self.forward_texts(unseen).await {
                    tracing::warn!(child = %self.child, ?error, "an A2A task's output is not on the caller's stream");
                }
                self.artifacts = whole;
                output = self.artifact_text();
            }
            if output.is_empty() {
                output = said;
            }
        }
        let end = EndFrame {
            status,
            sequence: 0,
            output: Some(output),
            error: None,
            usage,
            state: None,
        };
        ending_of(self.sub_agent, Ok(end))
    }

    fn artifact_text(&self) -> String {
        let texts: Vec<&str> = self
            .artifacts
            .values()
            .map(String::as_str)
            .filter(|text| !text.is_empty())
            .collect();
        texts.join("\n")
    }

    /// Stages the call's result from how the task ended (the caller's fold run on a completed
    /// one).
    pub(super) async fn stage(&self, ending: Ending) -> Result<(), Error> {
        let state_patch = match ending.status {
            EndStatus::Completed => self.fold(ending.output.as_deref()).await?,
            _ => None,
        };
        self.activities
            .stage_remote_end(self.step, self.call, &self.child, ending, state_patch)
            .await
    }

    /// The caller's `after_sub_agent` fold of a completed task (which has no state: its output
    /// only).
    pub(super) async fn fold(
        &self,
        output: Option<&str>,
    ) -> Result<Option<json_patch::Patch>, Error> {
        let agent = self.activities.agent(&self.step.agent_type)?;
        self.activities
            .fold_ended_child(
                self.step,
                agent,
                &self.call.id,
                &self.call.name,
                None,
                EndStatus::Completed,
                output,
            )
            .await
    }
}
