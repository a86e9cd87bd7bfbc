//! What the zombie sweep reads: the sessions whose status is `active` but that nothing has
//! written for a while (a run whose workflow may be gone).

use super::{Error, SessionAddress, Store, keys::Key, now_ms};
use redis::AsyncCommands;

/// An `active` session not written for a while, and the run that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuietRun {
    pub address: SessionAddress,
    pub run_id: String,
    pub stream_id: String,
    pub workflow_id: Option<String>,
    /// When the session was last written (ms since the epoch).
    pub updated_at: u64,
}

/// `status`, `runId`, `streamId`, `workflowId` and `updatedAt` of a state hash.
type StateFields = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<u64>,
);

/// State keys read per `SCAN` call.
const SCAN_COUNT: usize = 500;

impl Store {
    /// The `active` sessions under this store's prefix not written for `quiet_ms` or more. A
    /// `SCAN` over the state keys: an operator's sweep every few minutes, not a request path.
    pub async fn quiet_active_runs(&self, quiet_ms: u64) -> Result<Vec<QuietRun>, Error> {
        let pattern = format!("{}:{{*}}:*:{}", self.prefix, Key::State.name());
        let mut connection = self.conn();
        let mut keys: Vec<String> = Vec::new();
        {
            let mut iter = connection
                .scan_options::<String>(
                    redis::ScanOptions::default()
                        .with_pattern(pattern)
                        .with_count(SCAN_COUNT),
                )
                .await?;
            while let Some(key) = futures::StreamExt::next(&mut iter).await {
                keys.push(key);
            }
        }
        let now = now_ms();
        let mut quiet = Vec::new();
        for key in keys {
            let Some(address) = self.address_of_state_key(&key) else {
                continue;
            };
            let (status, run_id, stream_id, workflow_id, updated_at): StateFields =
                redis::cmd("HMGET")
                    .arg(&key)
                    .arg(&["status", "runId", "streamId", "workflowId", "updatedAt"])
                    .query_async(&mut connection)
                    .await?;
            let (Some(status), Some(run_id), Some(stream_id), Some(updated_at)) =
                (status, run_id, stream_id, updated_at)
            else {
                continue;
            };
            if status == "active" && now.saturating_sub(updated_at) >= quiet_ms {
                quiet.push(QuietRun {
                    address,
                    run_id,
                    stream_id,
                    workflow_id,
                    updated_at,
                });
            }
        }
        Ok(quiet)
    }

    /// The session a state key belongs to: `<prefix>:{<root>}:<session>:state`.
    fn address_of_state_key(&self, key: &str) -> Option<SessionAddress> {
        let rest = key.strip_prefix(&self.prefix)?.strip_prefix(":{")?;
        let (root, rest) = rest.split_once("}:")?;
        let session = rest.strip_suffix(&format!(":{}", Key::State.name()))?;
        Some(SessionAddress {
            root_session_id: root.to_owned(),
            session_id: session.to_owned(),
        })
    }
}
