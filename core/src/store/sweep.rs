//! What the zombie sweep reads: the sessions whose status is `active` but that nothing has
//! written for a while (a run whose workflow may be gone).

use super::{Error, SessionAddress, Store, connection::Connection, keys::Key, now_ms};
use redis::{
    AsyncCommands,
    cluster_async::ClusterConnection,
    cluster_routing::{RoutingInfo, SingleNodeRoutingInfo},
};

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

/// `status`, `runId`, `streamId`, `workflowId`, `updatedAt` and `agentType` of a state hash.
type StateFields = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<u64>,
    Option<String>,
);

/// State keys read per `SCAN` call.
const SCAN_COUNT: usize = 500;

impl Store {
    /// The `active` sessions under this store's prefix not written for `quiet_ms` or more. A
    /// `SCAN` over the state keys: an operator's sweep every few minutes, not a request path.
    pub async fn quiet_active_runs(&self, quiet_ms: u64) -> Result<Vec<QuietRun>, Error> {
        let pattern = format!("{}:{{*}}:*:{}", self.prefix, Key::State.name());
        let mut connection = self.conn();
        let keys = match &mut connection {
            Connection::Cluster(cluster) => cluster_scan(cluster, &pattern).await?,
            single => {
                let mut keys: Vec<String> = Vec::new();
                let mut iter = single
                    .scan_options::<String>(
                        redis::ScanOptions::default()
                            .with_pattern(pattern)
                            .with_count(SCAN_COUNT),
                    )
                    .await?;
                while let Some(key) = futures::StreamExt::next(&mut iter).await {
                    keys.push(key);
                }
                keys
            }
        };
        let now = now_ms();
        let mut quiet = Vec::new();
        for key in keys {
            let Some(address) = self.address_of_state_key(&key) else {
                continue;
            };
            let (status, run_id, stream_id, workflow_id, updated_at, agent_type): StateFields =
                redis::cmd("HMGET")
                    .arg(&key)
                    .arg(&[
                        "status",
                        "runId",
                        "streamId",
                        "workflowId",
                        "updatedAt",
                        "agentType",
                    ])
                    .query_async(&mut connection)
                    .await?;
            let (Some(status), Some(run_id), Some(stream_id), Some(updated_at)) =
                (status, run_id, stream_id, updated_at)
            else {
                continue;
            };
            let workflow_id = agent_type.map(|agent_type| {
                super::session::workflow_id_of(
                    workflow_id.as_deref(),
                    &agent_type,
                    &address.session_id,
                    &run_id,
                )
            });
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

/// The keys matching `pattern` on every master of a cluster: a `SCAN` reads one node only, and
/// the session trees are spread over the masters' slots.
async fn cluster_scan(
    cluster: &mut ClusterConnection,
    pattern: &str,
) -> Result<Vec<String>, Error> {
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(cluster)
        .await?;
    let mut keys = Vec::new();
    for (host, port) in masters(&nodes) {
        let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
            host: host.to_owned(),
            port,
        });
        let mut cursor: u64 = 0;
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(SCAN_COUNT);
            let reply = cluster.route_command(&scan, route.clone()).await?;
            let (next, batch): (u64, Vec<String>) = redis::from_redis_value(&reply)?;
            keys.extend(batch);
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    Ok(keys)
}

/// The reachable masters in a `CLUSTER NODES` reply: `<id> <host>:<port>@<bus port> <flags> ...`
/// per line, the flags holding `master` (and `fail` for a node the cluster has given up on).
fn masters(nodes: &str) -> Vec<(&str, u16)> {
    nodes
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = fields.nth(1)?;
            let flags = fields.next()?;
            let flags: Vec<&str> = flags.split(',').collect();
            if !flags.contains(&"master") || flags.iter().any(|f| f.starts_with("fail")) {
                return None;
            }
            let (host, port) = address.split('@').next()?.rsplit_once(':')?;
            let port: u16 = port.parse().ok()?;
            (!host.is_empty() && port != 0).then_some((host, port))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::masters;

    #[test]
    fn the_masters_are_read_from_cluster_nodes() {
        let nodes = "\
a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:7002@17002 master - 0 1 2 connected 5461-10922
c3 127.0.0.1:7003@17003 master,fail - 0 1 3 connected
d4 127.0.0.1:7004@17004 slave b2 0 1 2 connected
e5 :0@0 master,noaddr - 0 1 4 disconnected
";
        assert_eq!(masters(nodes), [("127.0.0.1", 7001), ("127.0.0.1", 7002)]);
    }
}
