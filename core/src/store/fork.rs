//! Forking a session: a new root session with a copy of another's log up to one of its
//! checkpoints (`create_fork.lua`). The original is only read; the fork gets its own id, stream
//! and run, and a tree's children are not copied.

use super::{
    Checkpoint, Error, RunRef, SessionAddress, Store, now_ms, replies::CreateReply,
    scripts::CREATE_FORK, to_json,
};
use crate::{
    chunk::{ChunkKind, encode_unsequenced},
    message::Message,
    meta::SessionMeta,
};
use serde::Serialize;

/// A fork to write: the new session, what it copies, and the checkpoint it copies up to.
#[derive(Debug, Clone)]
pub struct NewFork<'a> {
    pub address: &'a SessionAddress,
    pub agent_type: &'a str,
    pub run_id: &'a str,
    pub stream_id: &'a str,
    /// The original's log up to the checkpoint.
    pub messages: &'a [Message],
    pub checkpoint: &'a Checkpoint,
    pub meta: &'a SessionMeta,
    /// `<sessionId>:<checkpointId>` of the original.
    pub forked_from: String,
    pub max_chunks: u64,
}

/// The suspension part of a checkpoint record, as `push_checkpoint` appends it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SuspendedPart<'a> {
    suspended_at: u64,
    suspension: &'a super::StoredSuspension,
    pending: &'a [super::PendingCall],
}

impl Store {
    /// Writes the fork (status `interrupted`, its checkpoint 0 the copied one); refuses an
    /// existing session id.
    pub async fn create_fork(&self, fork: NewFork<'_>) -> Result<u64, Error> {
        let index_address = fork.address.clone();
        let mark = self.mark_for_index(&index_address).await?;
        let result = self.create_fork_unindexed(fork).await;
        self.reindex_after_change(&index_address, mark).await;
        result
    }

    async fn create_fork_unindexed(&self, fork: NewFork<'_>) -> Result<u64, Error> {
        let body = encode_unsequenced(
            &self.header(RunRef {
                address: fork.address,
                stream_id: fork.stream_id,
                run_id: fork.run_id,
            }),
            &ChunkKind::RunStart {
                agent_type: fork.agent_type.to_owned(),
            },
        );
        let checkpoint = fork.checkpoint;
        let extra = match &checkpoint.suspension {
            Some(suspension) => {
                let part = to_json(&SuspendedPart {
                    suspended_at: checkpoint.suspended_at.unwrap_or_else(now_ms),
                    suspension,
                    pending: &checkpoint.pending,
                });
                // `{"a":…}` as `,"a":…`, the form push_checkpoint appends.
                format!(",{}", &part[1..part.len() - 1])
            }
            None => String::new(),
        };
        let mut invocation = CREATE_FORK.on(self, fork.address);
        invocation
            .arg(fork.agent_type)
            .arg(fork.run_id)
            .arg(fork.stream_id)
            .arg(now_ms())
            .arg(body)
            .arg(checkpoint.step_count)
            .arg(extra)
            .arg(
                checkpoint
                    .custom_state
                    .as_ref()
                    .map(to_json)
                    .unwrap_or_default(),
            )
            .arg(if fork.meta.is_empty() {
                String::new()
            } else {
                to_json(fork.meta)
            })
            .arg(&fork.forked_from)
            .arg(fork.max_chunks);
        for message in fork.messages {
            invocation.arg(to_json(message));
        }
        match invocation.run(self).await? {
            CreateReply::Created { sequence } => Ok(sequence),
            CreateReply::SessionExists | CreateReply::Expired => {
                Err(Error::SessionExists(fork.address.session_id.clone()))
            }
        }
    }
}
