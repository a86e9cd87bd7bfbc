//! Baton's remote agents on the consumer's side, below the activities and the server: the
//! clients of the transports a remote sub-agent is reached by (the seeds' mount protocol,
//! `producer.rs`, and A2A, `a2a.rs`) and the work on a producer that is no run's activity (the children a rewind
//! orphaned, `orphans.rs`). No Temporal here: the activities follow a call with these clients
//! (`activities/src/subagent/`), the server relays answers, passes stops on and reconciles
//! orphans with them (`worker/src/remote/`).

pub mod a2a;
mod http;
pub mod orphans;
pub mod producer;

pub use a2a::{A2aClient, A2aError};
pub use orphans::{Orphan, reconcile_orphans};
pub use producer::{CallError, Producer};
