//! The store's connections to Redis: one server, or a Redis Cluster (found out when connecting),
//! behind one type so that every command and script runs the same way on both.

use super::round_trips::RoundTrips;
use redis::{
    Cmd, Pipeline, RedisFuture, RedisResult, Value,
    aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection},
    cluster::ClusterClient,
    cluster_async::ClusterConnection,
};
use std::time::Duration;

/// How long a blocking stream read may wait on a dedicated connection: far above the follow
/// loop's own block time, so only a Redis that stopped answering reaches it.
const BLOCKING_READ_LIMIT: Duration = Duration::from_secs(3600);

/// A connection to the store's Redis. Cheap to clone; commands on a clone share it.
#[derive(Clone)]
pub(super) enum Connection {
    /// The shared connection to a single server, reconnecting by itself.
    Single(ConnectionManager),
    /// A dedicated connection to a single server (blocking reads).
    Dedicated(MultiplexedConnection),
    /// A Redis Cluster: each command goes to the master of its keys' slot (every script's keys
    /// are one session tree's, in one slot).
    Cluster(ClusterConnection),
    /// Another connection, each of its round trips written down (see `round_trips.rs`).
    Recorded(Box<Connection>, RoundTrips),
}

impl Connection {
    /// This connection, recording its round trips in `round_trips`.
    pub(super) fn recorded(self, round_trips: RoundTrips) -> Self {
        Self::Recorded(Box::new(self), round_trips)
    }
}

impl Connection {
    /// Whether one pipeline may hold commands of different slots: on one server, yes; on a
    /// cluster, whose pipelines go to one node, no.
    pub(super) fn pipelines_across_slots(&self) -> bool {
        match self {
            Self::Single(_) | Self::Dedicated(_) => true,
            Self::Cluster(_) => false,
            Self::Recorded(connection, _) => connection.pipelines_across_slots(),
        }
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(connection) => connection.req_packed_command(cmd),
            Self::Dedicated(connection) => connection.req_packed_command(cmd),
            Self::Cluster(connection) => connection.req_packed_command(cmd),
            Self::Recorded(connection, round_trips) => {
                round_trips.record_command(cmd);
                connection.req_packed_command(cmd)
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(connection) => connection.req_packed_commands(pipeline, offset, count),
            Self::Dedicated(connection) => connection.req_packed_commands(pipeline, offset, count),
            Self::Cluster(connection) => connection.req_packed_commands(pipeline, offset, count),
            Self::Recorded(connection, round_trips) => {
                round_trips.record_pipeline(pipeline);
                connection.req_packed_commands(pipeline, offset, count)
            }
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(connection) => connection.get_db(),
            Self::Dedicated(connection) => connection.get_db(),
            Self::Cluster(connection) => connection.get_db(),
            Self::Recorded(connection, _) => connection.get_db(),
        }
    }
}

/// Where the store's Redis is, to open connections to it.
#[derive(Clone)]
pub(super) enum Endpoint {
    Single(redis::Client),
    Cluster { url: String },
}

impl Endpoint {
    /// Connects to `redis_url` with commands and connection attempts bounded by `timeout`, and
    /// finds out whether it is a cluster node (then the connection follows the cluster).
    pub(super) async fn connect(
        redis_url: &str,
        timeout: Duration,
    ) -> RedisResult<(Self, Connection)> {
        let client = redis::Client::open(redis_url)?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(timeout)
            .set_connection_timeout(timeout);
        let mut single = ConnectionManager::new_with_config(client.clone(), config).await?;
        let info: String = redis::cmd("INFO")
            .arg("cluster")
            .query_async(&mut single)
            .await?;
        if !info.contains("cluster_enabled:1") {
            return Ok((Self::Single(client), Connection::Single(single)));
        }
        let cluster = ClusterClient::builder(vec![redis_url.to_owned()])
            .response_timeout(timeout)
            .connection_timeout(timeout)
            .build()?
            .get_async_connection()
            .await?;
        let endpoint = Self::Cluster {
            url: redis_url.to_owned(),
        };
        Ok((endpoint, Connection::Cluster(cluster)))
    }

    /// A connection of its own, for blocking reads that would stall the shared one.
    pub(super) async fn dedicated(&self) -> RedisResult<Connection> {
        match self {
            Self::Single(client) => Ok(Connection::Dedicated(
                client.get_multiplexed_async_connection().await?,
            )),
            Self::Cluster { url } => Ok(Connection::Cluster(
                ClusterClient::builder(vec![url.clone()])
                    .response_timeout(BLOCKING_READ_LIMIT)
                    .build()?
                    .get_async_connection()
                    .await?,
            )),
        }
    }
}
