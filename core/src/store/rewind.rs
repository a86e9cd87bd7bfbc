//! Rewinding a session to one of its checkpoints for a new run (resume `from_checkpoint`).

use super::{
    Checkpoint, Error, NewRun, PendingCall, RunRef, SessionAddress, Store, StoredSuspension, flag,
    now_ms,
    replies::RewindReply,
    scripts::REWIND,
    suspension::{approval_id, person_request_body},
    to_json,
};
use crate::{
    chunk::{ChunkKind, encode_unsequenced},
    message::Message,
};

/// A rewind of a session to one of its checkpoints (resume `from_checkpoint`).
#[derive(Debug, Clone)]
pub struct Rewind<'a> {
    /// The run that takes the session over from the checkpoint.
    pub run: NewRun<'a>,
    /// The checkpoint, as read before (checkpoint records never change).
    pub checkpoint: &'a Checkpoint,
    /// Appended after the rewind; with a checkpoint that suspended it needs `abandon_pending`.
    pub message: Option<Message>,
    /// Drain the restored calls of a checkpoint that suspended as `client_tool_abandoned`.
    pub abandon_pending: bool,
    /// Keep at most this many of the checkpoint's messages (all of them for `None`): an edit of
    /// a message the earliest checkpoint already holds cuts it too, and `message` replaces it.
    pub keep_messages: Option<u64>,
}

/// How a rewind ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Rewound {
    /// The new run owns the session after `step_count` steps and runs (its workflow starts).
    Run {
        step_count: u32,
    },
    /// The checkpoint's calls are awaited again by the new run, with these entries: the session
    /// is suspended and no workflow runs.
    Suspended {
        step_count: u32,
        pending: Vec<PendingCall>,
    },
    SessionNotFound,
    AlreadyRunning,
    UnknownCheckpoint,
    /// An earlier rewind went back past this checkpoint: the log it counts was cut.
    AbandonedCheckpoint,
}

impl Store {
    /// Rewinds a session that is not running to a checkpoint for a new run (see `rewind.lua`).
    /// A checkpoint that suspended gives its calls back to the new run with fresh deadlines
    /// (each as long as it first had) and fresh approval ids; unless a message abandons them,
    /// the session awaits them again at once.
    pub async fn rewind(
        &self,
        address: &SessionAddress,
        rewind: Rewind<'_>,
    ) -> Result<Rewound, Error> {
        let index_address = address.clone();
        let mark = self.mark_for_index(&index_address).await?;
        let result = self.rewind_unindexed(address, rewind).await;
        self.reindex_after_change(&index_address, mark).await;
        result
    }

    /// [`Self::rewind`] before the search index follows it.
    async fn rewind_unindexed(
        &self,
        address: &SessionAddress,
        rewind: Rewind<'_>,
    ) -> Result<Rewound, Error> {
        let checkpoint = rewind.checkpoint;
        let now = now_ms();
        let header = self.header(RunRef {
            address,
            stream_id: rewind.run.stream_id,
            run_id: rewind.run.run_id,
        });
        let suspend = !checkpoint.pending.is_empty() && rewind.message.is_none();
        let restored: Vec<PendingCall> = checkpoint
            .pending
            .iter()
            .map(|call| PendingCall {
                deadline_at: now
                    + call
                        .deadline_at
                        .saturating_sub(checkpoint.suspended_at.unwrap_or(call.deadline_at)),
                approval_id: call
                    .approval_id
                    .as_ref()
                    .map(|_| approval_id(rewind.run.run_id, &call.tool_call_id)),
                awaited_since: now,
                asked: None,
                ..call.clone()
            })
            .collect();
        // The restored suspension is of the new run, which the session's run is from now on.
        let suspension = checkpoint.suspension.as_ref().map(|s| StoredSuspension {
            run_id: None,
            ..s.clone()
        });
        let step = suspension
            .as_ref()
            .map_or(checkpoint.step_count, |s| s.step);
        let mut invocation = REWIND.on(self, address);
        invocation
            .arg(rewind.run.run_id)
            .arg(now)
            .arg(checkpoint.id)
            .arg(super::session::stored_workflow_id(
                &rewind.run,
                &address.session_id,
            ))
            .arg(encode_unsequenced(
                &header,
                &ChunkKind::Rewind {
                    checkpoint_id: checkpoint.id,
                    stream_sequence: checkpoint.stream_sequence,
                },
            ))
            .arg(encode_unsequenced(
                &header,
                &ChunkKind::RunStart {
                    agent_type: rewind.run.agent_type.to_owned(),
                },
            ))
            .arg(if suspend { "suspend" } else { "run" })
            .arg(rewind.message.as_ref().map(to_json).unwrap_or_default())
            .arg(flag(rewind.abandon_pending))
            .arg(suspension.as_ref().map(to_json).unwrap_or_default())
            .arg(encode_unsequenced(
                &header,
                &ChunkKind::Suspended {
                    step,
                    tool_call_ids: restored.iter().map(|c| c.tool_call_id.clone()).collect(),
                },
            ))
            .arg(&address.session_id)
            .arg(
                checkpoint
                    .custom_state
                    .as_ref()
                    .map(to_json)
                    .unwrap_or_default(),
            )
            .arg(
                rewind
                    .keep_messages
                    .map(|kept| kept.to_string())
                    .unwrap_or_default(),
            );
        for call in &restored {
            invocation
                .arg(&call.tool_call_id)
                .arg(to_json(call))
                .arg(if suspend {
                    person_request_body(&header, call).unwrap_or_default()
                } else {
                    String::new()
                })
                .arg(call.deadline_at);
        }
        Ok(match invocation.run(self).await? {
            RewindReply::Rewound { step_count } if suspend => Rewound::Suspended {
                step_count,
                pending: restored,
            },
            RewindReply::Rewound { step_count } => Rewound::Run { step_count },
            RewindReply::SessionNotFound => Rewound::SessionNotFound,
            RewindReply::AlreadyRunning => Rewound::AlreadyRunning,
            RewindReply::UnknownCheckpoint => Rewound::UnknownCheckpoint,
            RewindReply::AbandonedCheckpoint => Rewound::AbandonedCheckpoint,
        })
    }
}
