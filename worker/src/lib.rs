//! The parts of `batond`: connecting to Temporal, running the Temporal worker, the operations of
//! the API (`ops`) and its two transports (`http`, `grpc`), the stream follower and fan-out, and
//! the demo agents. The binary (`main.rs` and its `config/`) parses flags and environment;
//! nothing here does.

pub mod auth;
pub mod deadline_sweep;
pub mod demo;
pub mod fanout;
pub mod follow;
pub mod grpc;
pub mod http;
pub mod metrics;
pub mod ops;
pub mod runner;
pub mod state;
pub mod sweep;

pub use grpc::serve_grpc;
pub use http::{router, serve};
pub use runner::{TemporalSettings, WorkerSettings, connect_temporal, run_worker};
pub use state::{AppState, ServerOptions};
