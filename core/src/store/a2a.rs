//! A session's A2A bookkeeping (the A2A adapter's, `worker/src/http/a2a/`): which task is its
//! current turn and that task's push notification configuration, two fields of the session's
//! state hash, so that they expire with it. Each is written by one script (`record_a2a.lua`),
//! which writes nothing for a session that does not exist; both are read with one `HMGET`.

use super::{
    Error, SessionAddress, SessionState, Store, callback::RegisteredCallback, keys::Key,
    scripts::RECORD_A2A,
};
use crate::{
    a2a::{TaskPushNotificationConfig, TaskState},
    error::ErrorCode,
    session::Status,
};
use redis::AsyncCommands;

/// The state hash fields.
const TASK: &str = "a2aTask";
const PUSH: &str = "a2aPush";

/// What a session holds of A2A.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct A2aRecord {
    /// The task id of the session's current turn, if a turn was begun over A2A.
    pub task_id: Option<String>,
    /// The push notification configuration set on that task (its JSON), if one was.
    pub push_config: Option<String>,
}

impl Store {
    /// Records `task_id` as the session's current turn; `false` if there is no such session.
    pub async fn record_a2a_task(
        &self,
        address: &SessionAddress,
        task_id: &str,
    ) -> Result<bool, Error> {
        self.record_a2a(address, TASK, task_id).await
    }

    /// Records the push notification configuration (its JSON) of the session's current task;
    /// `false` if there is no such session.
    pub async fn record_a2a_push(
        &self,
        address: &SessionAddress,
        config_json: &str,
    ) -> Result<bool, Error> {
        self.record_a2a(address, PUSH, config_json).await
    }

    async fn record_a2a(
        &self,
        address: &SessionAddress,
        field: &str,
        value: &str,
    ) -> Result<bool, Error> {
        let recorded: i64 = RECORD_A2A
            .on(self, address)
            .arg(field)
            .arg(value)
            .run(self)
            .await?;
        Ok(recorded == 1)
    }

    /// The session's A2A record (empty fields for a session without one, or no session).
    pub async fn a2a_record(&self, address: &SessionAddress) -> Result<A2aRecord, Error> {
        let (task_id, push_config): (Option<String>, Option<String>) = self
            .conn()
            .hget(self.key(address, Key::State), &[TASK, PUSH])
            .await?;
        Ok(A2aRecord {
            task_id,
            push_config,
        })
    }
}

/// Where the callback sweep pushes a session's A2A task (its push notification configuration,
/// when it is the current task's), as a callback whose token the agent sends back in
/// `X-A2A-Notification-Token`; the turn delivered last is the mount callback's mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A2aPush {
    pub task_id: String,
    pub callback: RegisteredCallback,
}

impl Store {
    /// The session's A2A push target, if its current task has a push configuration.
    pub async fn a2a_push(&self, address: &SessionAddress) -> Result<Option<A2aPush>, Error> {
        let key = self.key(address, Key::State);
        let (task_id, config, delivered): (Option<String>, Option<String>, Option<u64>) = self
            .conn()
            .hget(&key, &[TASK, PUSH, super::callback::DELIVERED])
            .await?;
        let (Some(task_id), Some(config)) = (task_id, config) else {
            return Ok(None);
        };
        let config: TaskPushNotificationConfig = super::from_json(&key, &config)?;
        if config.task_id != task_id {
            return Ok(None);
        }
        let push = config.push_notification_config;
        Ok(Some(A2aPush {
            task_id,
            callback: RegisteredCallback {
                url: push.url,
                token: push.token.unwrap_or_default(),
                delivered: delivered.unwrap_or(0),
            },
        }))
    }
}

/// A task's state for a session's status, as the session's own state tells it: an abort
/// (`failed` with `framework_cancelled`) and an interrupt are `canceled`. (A running call's
/// question, which needs the session's person calls, is the A2A adapter's to add.)
pub fn a2a_task_state(session: &SessionState) -> TaskState {
    match session.status {
        Status::Active => TaskState::Working,
        Status::SuspendedClientTool => TaskState::InputRequired,
        Status::Completed => TaskState::Completed,
        Status::Interrupted => TaskState::Canceled,
        Status::Failed
            if session
                .error
                .as_ref()
                .is_some_and(|error| error.code == ErrorCode::FrameworkCancelled) =>
        {
            TaskState::Canceled
        }
        Status::Failed => TaskState::Failed,
    }
}
