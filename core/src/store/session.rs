//! Creating a session and reading it back: its state hash, log and checkpoints.

use super::{
    Checkpoint, Error, NewRun, RunRef, SessionAddress, SessionState, Status, Store,
    StoredSuspension, from_json,
    keys::{Key, state_field},
    now_ms,
    replies::CreateReply,
    scripts::CREATE_SESSION,
    to_json,
};
use crate::{
    chunk::{ChunkKind, encode_unsequenced},
    ids,
    message::Message,
    meta::SessionMeta,
    session::SessionOwner,
};
use redis::AsyncCommands;
use std::collections::HashMap;

/// A new session, as `/start` creates it.
#[derive(Debug, Clone)]
pub struct NewSession<'a> {
    pub address: &'a SessionAddress,
    pub agent_type: &'a str,
    pub run_id: &'a str,
    pub stream_id: &'a str,
    pub workflow_id: &'a str,
    /// The initial log: system prompt (if any) and the user's message.
    pub messages: &'a [Message],
    /// The stream keeps at most this many chunks (the oldest are trimmed as new ones come);
    /// 0 keeps every chunk. A reader asking for a trimmed position is told `TRUNCATED`. The
    /// session records it at creation and every later chunk obeys that record.
    pub max_chunks: u64,
}

impl Store {
    /// Creates a session with its first run: state `active`, the initial log, the `run_start`
    /// chunk and checkpoint 0. Refuses an existing session id.
    pub async fn create_session(&self, new: NewSession<'_>) -> Result<u64, Error> {
        self.create_session_with_state(new, None).await
    }

    /// Like [`Self::create_session`], with the session's custom state (already seeded and
    /// checked against its agent's schema) for an agent that declares one.
    pub async fn create_session_with_state(
        &self,
        new: NewSession<'_>,
        custom_state: Option<&serde_json::Value>,
    ) -> Result<u64, Error> {
        self.create_session_with(new, custom_state, &SessionMeta::default(), None)
            .await
    }

    /// Like [`Self::create_session_with_state`], with the session's metadata (already checked
    /// against its caps), kept in the state hash (`meta`) and inherited by its children, and
    /// the service that owns it when the producer mount starts it (`owner`, written with the
    /// session in its one script, so no moment sees it unowned).
    pub async fn create_session_with(
        &self,
        new: NewSession<'_>,
        custom_state: Option<&serde_json::Value>,
        meta: &SessionMeta,
        owner: Option<&SessionOwner>,
    ) -> Result<u64, Error> {
        let index_address = new.address.clone();
        let mark = self.mark_for_index(&index_address).await?;
        let result = self
            .create_session_with_unindexed(new, custom_state, meta, owner)
            .await;
        self.reindex_after_change(&index_address, mark).await;
        result
    }

    /// [`Self::create_session_with`] before the search index follows it.
    async fn create_session_with_unindexed(
        &self,
        new: NewSession<'_>,
        custom_state: Option<&serde_json::Value>,
        meta: &SessionMeta,
        owner: Option<&SessionOwner>,
    ) -> Result<u64, Error> {
        let body = encode_unsequenced(
            &self.header(RunRef {
                address: new.address,
                stream_id: new.stream_id,
                run_id: new.run_id,
            }),
            &ChunkKind::RunStart {
                agent_type: new.agent_type.to_owned(),
            },
        );
        let mut invocation = CREATE_SESSION.on(self, new.address);
        invocation
            .arg(new.agent_type)
            .arg(new.run_id)
            .arg(new.stream_id)
            .arg(now_ms())
            .arg(body)
            .arg(stored_first_run_workflow_id(
                new.workflow_id,
                new.agent_type,
                &new.address.session_id,
            ))
            .arg(new.max_chunks)
            .arg(self.write_deadline_ms())
            .arg(custom_state.map(to_json).unwrap_or_default())
            .arg(if meta.is_empty() {
                String::new()
            } else {
                to_json(meta)
            })
            .arg(owner.map(to_json).unwrap_or_default());
        for message in new.messages {
            invocation.arg(to_json(message));
        }
        match invocation.run(self).await? {
            CreateReply::Created { sequence } => Ok(sequence),
            CreateReply::SessionExists => Err(Error::SessionExists(new.address.session_id.clone())),
            // Only reachable when the clocks disagree by about the timeout: a caller still
            // waiting is told what a timed-out one is, and may retry.
            CreateReply::Expired => Err(Error::Redis(redis::RedisError::from((
                redis::ErrorKind::IoError,
                "the session's write reached Redis after its deadline",
            )))),
        }
    }

    /// The session's state, or `None` if it does not exist.
    pub async fn session(&self, address: &SessionAddress) -> Result<Option<SessionState>, Error> {
        let key = self.key(address, Key::State);
        let fields: HashMap<String, String> = self.conn().hgetall(&key).await?;
        session_of(address, &key, &fields)
    }

    /// The session's userId, tags and metadata (empty for an unknown session): written once, at
    /// its creation, so a read beside another needs no script to agree with it.
    pub async fn session_meta(&self, address: &SessionAddress) -> Result<SessionMeta, Error> {
        let key = self.key(address, Key::State);
        let text: Option<String> = self.conn().hget(&key, state_field::META).await?;
        Ok(text
            .map(|text| from_json(&key, &text))
            .transpose()?
            .unwrap_or_default())
    }

    /// Whether `run` still holds its session and is running (status `active`): one `HMGET`, for
    /// work that cannot learn of a stop from Temporal in time (a model step run as a local
    /// activity) and so asks Redis, which a stop writes first.
    pub async fn run_is_live(&self, run: RunRef<'_>) -> Result<bool, Error> {
        let key = self.key(run.address, Key::State);
        let (status, run_id): (Option<String>, Option<String>) = self
            .conn()
            .hget(&key, &[state_field::STATUS, state_field::RUN_ID])
            .await?;
        Ok(run_id.as_deref() == Some(run.run_id)
            && status.as_deref() == Some(Status::Active.as_str()))
    }

    /// The whole message log.
    pub async fn messages(&self, address: &SessionAddress) -> Result<Vec<Message>, Error> {
        self.messages_after(address, 0).await
    }

    /// The log from its message `skip` on (all of it for 0): what was appended since a reader
    /// that holds the first `skip` messages read it. Only a rewind rewrites a log, and a rewind
    /// starts a new run, so within one run the first messages never change.
    pub async fn messages_after(
        &self,
        address: &SessionAddress,
        skip: usize,
    ) -> Result<Vec<Message>, Error> {
        self.json_list_from(self.key(address, Key::Messages), skip)
            .await
    }

    /// The checkpoints a rewind can still restore, oldest first: those of the current history,
    /// without the ones a rewind went back past (see `rewind.lua`); each keeps its id.
    pub async fn checkpoints(&self, address: &SessionAddress) -> Result<Vec<Checkpoint>, Error> {
        let all: Vec<Checkpoint> = self.json_list(self.key(address, Key::Checkpoints)).await?;
        let key = self.key(address, Key::State);
        let abandoned: Option<String> = self.conn().hget(&key, "abandonedCheckpoints").await?;
        let abandoned: Vec<(u32, u32)> = abandoned
            .map(|text| from_json(&key, &text))
            .transpose()?
            .unwrap_or_default();
        Ok(all
            .into_iter()
            .filter(|c| {
                !abandoned
                    .iter()
                    .any(|(from, to)| (*from..=*to).contains(&c.id))
            })
            .collect())
    }

    /// One checkpoint of the session, by id.
    pub async fn checkpoint(
        &self,
        address: &SessionAddress,
        id: u32,
    ) -> Result<Option<Checkpoint>, Error> {
        let key = self.key(address, Key::Checkpoints);
        let record: Option<String> = self.conn().lindex(&key, id as isize).await?;
        record.map(|r| from_json(&key, &r)).transpose()
    }
}

// The state keeps a run's workflow id only when it is not derived from the session (so that the
// hash stays within Redis's compact encoding): no `workflowId` for a first run's
// `agent__<agentType>__<session>`, an empty one for a resumed run's
// `agent__<agentType>__<session>__resume-<runId>` (the session's run).

/// The `workflowId` `create_session` and `start_child` store for a first run's `workflow_id`:
/// `""` (none stored) when it is the derived one.
pub(super) fn stored_first_run_workflow_id<'a>(
    workflow_id: &'a str,
    agent_type: &str,
    session_id: &str,
) -> &'a str {
    if workflow_id == ids::first_run_workflow_id(agent_type, session_id) {
        ""
    } else {
        workflow_id
    }
}

/// The `workflowId` a claim or a rewind stores for `run` of `session_id`: `""` when it is the
/// resumed run's derived id.
pub(super) fn stored_workflow_id<'a>(run: &NewRun<'a>, session_id: &str) -> &'a str {
    if run.workflow_id == ids::resume_workflow_id(run.agent_type, session_id, run.run_id) {
        ""
    } else {
        run.workflow_id
    }
}

/// The session at `address` from the fields of its state hash `key` (`None` when it has none).
pub(super) fn session_of(
    address: &SessionAddress,
    key: &str,
    fields: &HashMap<String, String>,
) -> Result<Option<SessionState>, Error> {
    if fields.is_empty() {
        return Ok(None);
    }
    let text = |name: &str| {
        fields.get(name).cloned().ok_or_else(|| Error::Corrupt {
            key: key.to_owned(),
            reason: format!("missing field {name}"),
        })
    };
    let number = |name: &str| {
        text(name)?.parse::<u64>().map_err(|e| Error::Corrupt {
            key: key.to_owned(),
            reason: format!("field {name}: {e}"),
        })
    };
    let status_text = text(state_field::STATUS)?;
    let run_id = text(state_field::RUN_ID)?;
    let agent_type = text(state_field::AGENT_TYPE)?;
    let workflow_id = workflow_id_of(
        fields.get(state_field::WORKFLOW_ID).map(String::as_str),
        &agent_type,
        &address.session_id,
        &run_id,
    );
    let suspension =
        json_field::<StoredSuspension>(fields, key, state_field::SUSPENSION)?.map(|stored| {
            stored.of_run(suspended_run_id(
                fields
                    .get(state_field::SUSPENDED_RUN_ID)
                    .map(String::as_str),
                &run_id,
            ))
        });
    Ok(Some(SessionState {
        session_id: address.session_id.clone(),
        // The root is in the key (versions before this one also kept `rootSessionId`).
        root_session_id: address.root_session_id.clone(),
        agent_type,
        status: Status::parse(&status_text).ok_or_else(|| Error::Corrupt {
            key: key.to_owned(),
            reason: format!("unknown status {status_text}"),
        })?,
        run_id,
        stream_id: text(state_field::STREAM_ID)?,
        step_count: number(state_field::STEP_COUNT)? as u32,
        last_sequence: number(state_field::LAST_SEQUENCE)?,
        created_at: number(state_field::CREATED_AT)?,
        updated_at: number(state_field::UPDATED_AT)?,
        output: fields.get(state_field::OUTPUT).cloned(),
        error: json_field(fields, key, state_field::ERROR)?,
        suspension,
        abandon_pending: fields.contains_key(state_field::ABANDON),
        workflow_id: Some(workflow_id),
        stop: json_field(fields, key, state_field::STOP)?,
        is_executing: None,
        meta: json_field(fields, key, state_field::META)?.unwrap_or_default(),
        pending: Vec::new(),
        owner: json_field(fields, key, state_field::OWNER)?,
    }))
}

/// The workflow of a session's current run `run_id` from its stored `workflowId` (see above).
pub(super) fn workflow_id_of(
    stored: Option<&str>,
    agent_type: &str,
    session_id: &str,
    run_id: &str,
) -> String {
    match stored {
        None => ids::first_run_workflow_id(agent_type, session_id),
        Some("") => ids::resume_workflow_id(agent_type, session_id, run_id),
        Some(workflow_id) => workflow_id.to_owned(),
    }
}

/// The run a stored suspension (see [`StoredSuspension`]) is of, when it does not name it: the
/// run a claim kept aside (`suspendedRunId`), else the session's.
pub(super) fn suspended_run_id<'a>(
    kept_aside: Option<&'a str>,
    session_run_id: &'a str,
) -> &'a str {
    kept_aside.unwrap_or(session_run_id)
}

/// An optional JSON field of a hash, decoded.
fn json_field<T: for<'de> serde::Deserialize<'de>>(
    fields: &HashMap<String, String>,
    key: &str,
    name: &str,
) -> Result<Option<T>, Error> {
    fields
        .get(name)
        .map(|text| from_json(key, text))
        .transpose()
}
