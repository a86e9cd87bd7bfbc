//! The parts of `batond`: connecting to Temporal, running the Temporal worker and its sweeps
//! (`sweeps`), the operations of the API (`ops`), its two transports (`http`, `grpc`), the Vercel
//! AI SDK chat protocol over those operations (`ai_sdk`), following streams (`stream`), and the
//! demo agents. The binary (`main.rs` and its `config/`) parses flags and environment;
//! nothing here does.

pub mod ai_sdk;
pub mod audit;
pub mod auth;
pub mod callback_hosts;
pub mod demo;
pub mod grpc;
pub mod http;
pub mod metrics;
pub mod mount_spec;
pub mod ops;
pub mod origins;
mod peers;
pub mod remote;
pub mod runner;
pub mod state;
pub mod stream;
pub mod sweeps;

pub use grpc::serve_grpc;
pub use http::{mount, router, serve};
pub use origins::AllowedOrigins;
pub use runner::{TemporalSettings, WorkerSettings, connect_temporal, run_worker};
pub use state::{AppState, ServerOptions};
