//! What the status, snapshot and usage routes read.

use super::{
    Checkpoint, Error, SessionAddress, Store, UsageRecord, from_json,
    keys::{Key, state_field},
    replies::SnapshotReply,
    scripts::SNAPSHOT,
};
use crate::{api::SnapshotResponse, message::Message, model::Usage, usage::UsageRollup};

impl Store {
    /// The usage record of every committed step, oldest first.
    pub async fn usage_records(&self, address: &SessionAddress) -> Result<Vec<UsageRecord>, Error> {
        self.json_list(self.key(address, Key::Usage)).await
    }

    /// Total usage of the session so far.
    pub async fn usage_total(&self, address: &SessionAddress) -> Result<Usage, Error> {
        let mut total = Usage::default();
        for record in self.usage_records(address).await? {
            total.add(&record.usage);
        }
        Ok(total)
    }

    /// The session's usage rollup (see [`crate::usage`]): its own and that of every session its
    /// sub-agent calls started, recursively; `None` if there is no such session.
    pub async fn usage_rollup(
        &self,
        address: &SessionAddress,
    ) -> Result<Option<UsageRollup>, Error> {
        let Some(mut rollup) = self.own_usage_rollup(address).await? else {
            return Ok(None);
        };
        // A remote child's rollup is recorded once per child session (the producer's own,
        // recursive), so a retried or repeated end never counts it twice.
        for remote in self.remote_rollups(address).await? {
            rollup.merge(&remote);
        }
        let mut below: Vec<String> = self.children(address).await?.into_values().collect();
        while let Some(session_id) = below.pop() {
            let child = SessionAddress {
                root_session_id: address.root_session_id.clone(),
                session_id,
            };
            if let Some(own) = self.own_usage_rollup(&child).await? {
                rollup.merge(&own);
            }
            for remote in self.remote_rollups(&child).await? {
                rollup.merge(&remote);
            }
            below.extend(self.children(&child).await?.into_values());
        }
        Ok(Some(rollup))
    }

    /// The session's own usage rollup, without its descendants'.
    pub async fn own_usage_rollup(
        &self,
        address: &SessionAddress,
    ) -> Result<Option<UsageRollup>, Error> {
        let key = self.key(address, Key::State);
        let (exists, wait, aborts, records, messages): (
            bool,
            Option<u64>,
            Option<u64>,
            Vec<String>,
            Vec<String>,
        ) = redis::pipe()
            .exists(&key)
            .hget(&key, state_field::CLIENT_TOOL_WAIT_MS)
            .hget(&key, state_field::ABORTS)
            .lrange(self.key(address, Key::Usage), 0, -1)
            .lrange(self.key(address, Key::Messages), 0, -1)
            .query_async(&mut self.conn())
            .await?;
        if !exists {
            return Ok(None);
        }
        let records: Vec<UsageRecord> = records
            .iter()
            .map(|r| from_json(&key, r))
            .collect::<Result<_, _>>()?;
        let messages: Vec<Message> = messages
            .iter()
            .map(|m| from_json(&key, m))
            .collect::<Result<_, _>>()?;
        Ok(Some(UsageRollup::of(
            &records,
            &messages,
            wait.unwrap_or(0),
            aborts.unwrap_or(0),
        )))
    }

    /// The session's snapshot (see `snapshot.lua` and [`SnapshotResponse`]), or `None` if
    /// there is no such session.
    pub async fn snapshot(
        &self,
        address: &SessionAddress,
    ) -> Result<Option<SnapshotResponse>, Error> {
        let key = self.key(address, Key::State);
        let fields = match SNAPSHOT.on(self, address).run(self).await? {
            SnapshotReply::SessionNotFound => return Ok(None),
            SnapshotReply::Found(fields) => fields,
        };
        let checkpoint: Option<Checkpoint> = fields
            .checkpoint
            .map(|record| from_json(&key, &record))
            .transpose()?;
        // The floor is the lowest valid cursor: the sequence before the oldest retained entry
        // (`<sequence>-0`), as the follower's `TRUNCATED` names it.
        let oldest_retained_sequence = match fields
            .oldest_entry_id
            .as_deref()
            .and_then(|id| id.split_once('-'))
        {
            Some((first, _)) => first
                .parse::<u64>()
                .map_err(|e| Error::Corrupt {
                    key: key.clone(),
                    reason: format!("snapshot field {first:?}: {e}"),
                })?
                .saturating_sub(1),
            None => fields.last_sequence,
        };
        let messages = fields
            .messages
            .iter()
            .map(|m| from_json(&key, m))
            .collect::<Result<_, _>>()?;
        let pinned = checkpoint.as_ref().filter(|_| !fields.status.is_terminal());
        // Never before an earlier run's `end`: a follower would stop there (see snapshot.lua).
        let last_end_sequence = fields
            .last_end_sequence
            .as_deref()
            .map(|sequence| {
                sequence.parse::<u64>().map_err(|e| Error::Corrupt {
                    key: key.clone(),
                    reason: format!("snapshot end sequence {sequence:?}: {e}"),
                })
            })
            .transpose()?;
        Ok(Some(SnapshotResponse {
            session_id: address.session_id.clone(),
            stream_id: fields.stream_id,
            status: fields.status,
            state: fields
                .custom_state
                .map(|text| from_json(&key, &text))
                .transpose()?
                .unwrap_or_else(|| serde_json::Value::Object(Default::default())),
            messages,
            stream_sequence: pinned.map_or(-1, |c| {
                c.stream_sequence.max(last_end_sequence.unwrap_or(0)) as i64
            }),
            oldest_retained_sequence,
            step_count: pinned.map_or(fields.step_count, |c| c.step_count),
            checkpoint_id: checkpoint.map(|c| c.id),
            meta: self.session_meta(address).await?,
        }))
    }
}
