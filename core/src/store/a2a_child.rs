//! The A2A task a caller's call began (the consumer's side of an A2A sub-agent), kept in the
//! caller's state so that a retried or resumed follower finds it: marked `sent` before the call's
//! message goes out and set to the task's id once the agent named it (`a2a_child.lua`). A marker
//! without a task id means the message may have begun a task nobody knows of: the call's outcome
//! is unknown, and it is never sent a second time.

use super::{
    Error, FollowMode, SessionAddress, StepRef, Store, keys::Key, replies::OkValue,
    scripts::A2A_CHILD,
};

const FIELD: &str = "a2aChild:";
const SENT: &str = "sent";

/// What the caller knows of its call's task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum A2aChild {
    /// Nothing was sent yet.
    Unsent,
    /// The message went out (or was about to) and no task id was recorded.
    Sent,
    /// The agent's task.
    Task(String),
}

impl A2aChild {
    fn of(stored: Option<String>) -> Self {
        match stored {
            None => Self::Unsent,
            Some(value) if value == SENT || value.is_empty() => Self::Sent,
            Some(task_id) => Self::Task(task_id),
        }
    }
}

impl Store {
    /// Marks the task of `step`'s call `tool_call_id` (its child `child`) as being sent: what
    /// an earlier attempt left ([`A2aChild::Unsent`] when this one marked it), or `None` for a
    /// stale attempt (the step is committed, or the caller no longer awaits the call).
    pub async fn mark_a2a_sent(
        &self,
        mode: FollowMode,
        step: StepRef<'_>,
        child: (&str, &str),
    ) -> Result<Option<A2aChild>, Error> {
        let before = self.record_a2a_child(mode, step, child, SENT).await?;
        Ok(before.map(|before| match before.as_str() {
            "" => A2aChild::Unsent,
            _ => A2aChild::of(Some(before)),
        }))
    }

    /// Records `task_id` as the task of the call; `false` for a stale attempt.
    pub async fn record_a2a_child_task(
        &self,
        mode: FollowMode,
        step: StepRef<'_>,
        child: (&str, &str),
        task_id: &str,
    ) -> Result<bool, Error> {
        Ok(self
            .record_a2a_child(mode, step, child, task_id)
            .await?
            .is_some())
    }

    async fn record_a2a_child(
        &self,
        mode: FollowMode,
        step: StepRef<'_>,
        (tool_call_id, child): (&str, &str),
        value: &str,
    ) -> Result<Option<String>, Error> {
        let recorded: OkValue = A2A_CHILD
            .on(self, step.address)
            .arg(step.run_id)
            .arg(mode.step_arg(step.step))
            .arg(tool_call_id)
            .arg(child)
            .arg(value)
            .run(self)
            .await?;
        Ok(recorded.0)
    }

    /// What `address` knows of the task its remote child `child` is.
    pub async fn a2a_child(
        &self,
        address: &SessionAddress,
        child: &str,
    ) -> Result<A2aChild, Error> {
        let stored: Option<String> = redis::cmd("HGET")
            .arg(self.key(address, Key::State))
            .arg(format!("{FIELD}{child}"))
            .query_async(&mut self.conn())
            .await?;
        Ok(A2aChild::of(stored))
    }
}
