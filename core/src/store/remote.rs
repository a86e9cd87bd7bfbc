//! What a remote sub-agent's consumer writes on the caller's session: the child's chunks
//! forwarded onto the caller's stream, each `(child, childSequence)` once (decided in
//! `forward_remote.lua`, which also keeps the cursor a follower resumes from), and the child's
//! usage rollup, one per child session, which [`Store::usage_rollup`] folds in.

use super::{
    Error, SessionAddress, StepRef, Store, keys::Key, replies::ForwardReply,
    scripts::FORWARD_REMOTE,
};
use crate::{
    chunk::{ChunkKind, RemoteSource, encode_unsequenced, encode_unsequenced_forwarded},
    usage::UsageRollup,
};

/// A chunk a remote child streamed, to forward: its kind, the ids it carried and where it came
/// from (this hop's stamp).
#[derive(Debug, Clone)]
pub struct ForwardedChunk {
    pub kind: ChunkKind,
    /// The session that emitted it (kept on every hop).
    pub agent_id: String,
    /// The producer's run that wrote it.
    pub run_id: String,
    pub source: RemoteSource,
}

/// What a forward did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarded {
    /// The child's highest forwarded sequence now, and how many chunks this call appended.
    Written { cursor: u64, appended: u32 },
    /// The step is committed (a stale attempt): nothing was written.
    AlreadyCommitted,
}

/// Which guard a forward (or a record of relayed calls) writes under: within the call's step
/// (the caller's run active on it), or while the caller is suspended on the run awaiting the
/// call (a remote child its caller's resume continued).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowMode {
    InStep,
    Suspended,
}

impl FollowMode {
    /// The step argument of the scripts: '' while suspended.
    pub(super) fn step_arg(self, step: u32) -> String {
        match self {
            Self::InStep => step.to_string(),
            Self::Suspended => String::new(),
        }
    }
}

const CURSOR_FIELD: &str = "remoteCursor:";
const USAGE_FIELD: &str = "remoteUsage:";

impl Store {
    /// Forwards `chunks` of the remote child `child_session_id` of the call `tool_call_id`
    /// onto the stream of `step`'s session, skipping each whose child sequence is not above the
    /// child's cursor; the first forward for the child writes `subagent_start` (of
    /// `agent_type`). With `usage`, records the child's rollup (replacing an earlier one).
    pub async fn forward_remote_chunks(
        &self,
        mode: FollowMode,
        step: StepRef<'_>,
        child: (&str, &str, &str),
        chunks: &[ForwardedChunk],
        usage: Option<&UsageRollup>,
    ) -> Result<Forwarded, Error> {
        let (child_session_id, agent_type, tool_call_id) = child;
        let header = self.header(step.run());
        let start = ChunkKind::SubagentStart {
            sub_session_id: child_session_id.to_owned(),
            agent_type: agent_type.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
        };
        let mut invocation = FORWARD_REMOTE.on(self, step.address);
        invocation
            .arg(step.run_id)
            .arg(mode.step_arg(step.step))
            .arg(child_session_id)
            .arg(encode_unsequenced(&header, &start))
            .arg(usage.map(super::to_json).unwrap_or_default())
            .arg(tool_call_id);
        for chunk in chunks {
            let mut chunk_header = header.clone();
            chunk_header.session_id = child_session_id.to_owned();
            chunk_header.agent_id.clone_from(&chunk.agent_id);
            chunk_header.run_id.clone_from(&chunk.run_id);
            invocation
                .arg(chunk.source.child_sequence)
                .arg(encode_unsequenced_forwarded(
                    &chunk_header,
                    &chunk.kind,
                    &chunk.source,
                ));
        }
        match invocation.run(self).await? {
            ForwardReply::Written { cursor, appended } => {
                Ok(Forwarded::Written { cursor, appended })
            }
            ForwardReply::AlreadyCommitted => Ok(Forwarded::AlreadyCommitted),
            ForwardReply::Refused(refusal) => Err(refusal.into_error(step.run_id)),
        }
    }

    /// The highest sequence of the remote child `child_session_id` forwarded onto `address`'s
    /// stream: where its follower resumes (`fromSequence`, exclusive); 0 before any.
    pub async fn remote_cursor(
        &self,
        address: &SessionAddress,
        child_session_id: &str,
    ) -> Result<u64, Error> {
        let field = format!("{CURSOR_FIELD}{child_session_id}");
        let cursor: Option<u64> = redis::cmd("HGET")
            .arg(self.key(address, Key::State))
            .arg(field)
            .query_async(&mut self.conn())
            .await?;
        Ok(cursor.unwrap_or(0))
    }

    /// The rollups of the remote children of `address`, one per child session.
    pub(super) async fn remote_rollups(
        &self,
        address: &SessionAddress,
    ) -> Result<Vec<UsageRollup>, Error> {
        let key = self.key(address, Key::State);
        let mut rollups = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (next, fields): (u64, Vec<String>) = redis::cmd("HSCAN")
                .arg(&key)
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{USAGE_FIELD}*"))
                .arg("COUNT")
                .arg(256)
                .query_async(&mut self.conn())
                .await?;
            for pair in fields.chunks(2) {
                if let [_, rollup] = pair {
                    match serde_json::from_str::<UsageRollup>(rollup) {
                        Ok(rollup) => rollups.push(rollup),
                        Err(error) => tracing::warn!(
                            session_id = %address.session_id,
                            %error,
                            "a remote child's usage rollup is not a rollup; it is not counted"
                        ),
                    }
                }
            }
            if next == 0 {
                return Ok(rollups);
            }
            cursor = next;
        }
    }
}
