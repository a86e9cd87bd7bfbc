//! Remote children a rewind left without their call (orphans): which remote calls a session's
//! stream shows after a checkpoint, and the record of what the reconciliation did with each
//! child (`remoteOrphan:<child>` in the session's state, `mark_remote_orphan.lua`). The
//! reconciliation itself (status, interrupt, usage over HTTP) is the consumer's, in
//! `baton-activities`.

use super::{
    Error, SessionAddress, Store, keys::Key, replies::MarkReply, scripts::MARK_REMOTE_ORPHAN,
};
use crate::{chunk::ChunkKind, usage::UsageRollup};
use serde::{Deserialize, Serialize};

/// A tool call a session's stream started: its id, its tool and its step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub step: u32,
}

/// What the reconciliation of an orphan did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrphanOutcome {
    /// The child was still running or waiting for people: the producer took its interrupt.
    Interrupted,
    /// The child had ended already (its status is in the record): nothing to stop.
    Ended,
    /// The producer could not be reached or refused the interrupt (the reason is in the
    /// record): the child may still run; its producer's own sweeps end it.
    InterruptFailed,
}

/// The record of one orphan, in its caller's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteOrphan {
    /// The call that started the child, which the rewind cut.
    pub tool_call_id: String,
    pub tool_name: String,
    /// The checkpoint the session was rewound to.
    pub checkpoint_id: u32,
    pub outcome: OrphanOutcome,
    /// The child's status as the producer last reported it (`running`, `paused`, `completed`,
    /// …), when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub at: u64,
}

const ORPHAN_FIELD: &str = "remoteOrphan:";

/// How many chunks one read of [`Store::calls_started_after`] takes, and at most how many reads.
const PAGE: usize = 1000;
const MOST_PAGES: usize = 100;

impl Store {
    /// The tool calls `address`'s own stream started after sequence `after` (its `tool_start`
    /// chunks; a descendant's copies and forwarded chunks are left out), in order. Reads at most
    /// 100 000 chunks: a longer tail is not looked at.
    pub async fn calls_started_after(
        &self,
        address: &SessionAddress,
        after: u64,
    ) -> Result<Vec<StartedCall>, Error> {
        let mut calls = Vec::new();
        let mut cursor = after;
        for _ in 0..MOST_PAGES {
            let chunks = self.chunks_after(address, cursor, PAGE).await?;
            let Some(last) = chunks.last() else { break };
            cursor = last.sequence;
            let read = chunks.len();
            calls.extend(chunks.into_iter().filter_map(|chunk| match chunk.kind {
                ChunkKind::ToolStart {
                    tool_call_id,
                    tool_name,
                    step,
                    ..
                } if chunk.remote_source.is_none()
                    && chunk.header.session_id == address.session_id =>
                {
                    Some(StartedCall {
                        tool_call_id,
                        tool_name,
                        step,
                    })
                }
                _ => None,
            }));
            if read < PAGE {
                break;
            }
        }
        Ok(calls)
    }

    /// Records what became of the orphan `child_session_id` of `address` (and its rollup, if
    /// read and none is recorded); `false` when the session is gone.
    pub async fn mark_remote_orphan(
        &self,
        address: &SessionAddress,
        child_session_id: &str,
        orphan: &RemoteOrphan,
        usage: Option<&UsageRollup>,
    ) -> Result<bool, Error> {
        let mut invocation = MARK_REMOTE_ORPHAN.on(self, address);
        invocation
            .arg(child_session_id)
            .arg(super::to_json(orphan))
            .arg(usage.map(super::to_json).unwrap_or_default());
        Ok(match invocation.run(self).await? {
            MarkReply::Marked => true,
            MarkReply::SessionNotFound => false,
        })
    }

    /// The record of the orphan `child_session_id` of `address`, if it is one.
    pub async fn remote_orphan(
        &self,
        address: &SessionAddress,
        child_session_id: &str,
    ) -> Result<Option<RemoteOrphan>, Error> {
        let key = self.key(address, Key::State);
        let record: Option<String> = redis::cmd("HGET")
            .arg(&key)
            .arg(format!("{ORPHAN_FIELD}{child_session_id}"))
            .query_async(&mut self.conn())
            .await?;
        record
            .map(|text| {
                serde_json::from_str(&text).map_err(|e| Error::Corrupt {
                    key,
                    reason: format!("an orphan's record: {e}"),
                })
            })
            .transpose()
    }
}
