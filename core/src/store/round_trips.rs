//! A record of the store's round trips to Redis, for tests and benches that hold an operation to
//! its count: a clone of a [`Store`] whose connection writes down, before sending it, every
//! request it sends (one command, or one pipeline of them) with its commands' names; a script
//! by its file's name (`claim_resume`), any other `EVALSHA` as `EVALSHA`.
//!
//! It counts at the connection, where a request leaves for Redis, so nothing a caller does
//! escapes it: a pipeline is one round trip, a script Redis did not know is three (`EVALSHA`
//! refused, `SCRIPT LOAD`, `EVALSHA`).

use super::Store;
use redis::{Arg, Cmd, Pipeline};
use std::sync::{Arc, Mutex, PoisonError};

/// One request sent to Redis and answered: the names of its commands, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundTrip {
    pub commands: Vec<String>,
}

impl RoundTrip {
    /// Whether the request ran the script `name` (its file's name, without `.lua`).
    pub fn runs_script(&self, name: &str) -> bool {
        self.commands.iter().any(|command| command == name)
    }
}

/// The round trips a recording store has sent, shared by its clones.
#[derive(Debug, Clone, Default)]
pub struct RoundTrips {
    log: Arc<Mutex<Vec<RoundTrip>>>,
}

impl RoundTrips {
    /// Every round trip recorded so far, in the order they were sent.
    pub fn sent(&self) -> Vec<RoundTrip> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn record_command(&self, command: &Cmd) {
        self.push(vec![name_of(command)]);
    }

    pub(super) fn record_pipeline(&self, pipeline: &Pipeline) {
        self.push(pipeline.cmd_iter().map(name_of).collect());
    }

    fn push(&self, commands: Vec<String>) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(RoundTrip { commands });
    }
}

/// A command's name (upper case), or for `EVALSHA` the name of the store's script it runs.
fn name_of(command: &Cmd) -> String {
    let mut args = command.args_iter().filter_map(|arg| match arg {
        Arg::Simple(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Arg::Cursor => None,
    });
    let name = args.next().unwrap_or_default().to_ascii_uppercase();
    if name != "EVALSHA" {
        return name;
    }
    args.next()
        .and_then(|hash| super::scripts::name_of_hash(&hash))
        .map_or(name, str::to_owned)
}

impl Store {
    /// This store, recording every round trip it sends from now on (its clones too) in the
    /// answered [`RoundTrips`]. The store it is cloned from records nothing.
    pub fn recording_round_trips(&self) -> (Store, RoundTrips) {
        let round_trips = RoundTrips::default();
        let mut store = self.clone();
        store.connection = store.connection.recorded(round_trips.clone());
        (store, round_trips)
    }
}
