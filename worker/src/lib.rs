//! The parts of `batond`: connecting to Temporal, running the Temporal worker, the HTTP server,
//! and the demo agents. The binary (`main.rs`) parses flags and environment; nothing here does.

pub mod auth;
pub mod demo;
pub mod fanout;
pub mod metrics;
pub mod runner;
pub mod server;

pub use runner::{TemporalSettings, WorkerSettings, connect_temporal, run_worker};
pub use server::{AppState, ServerOptions, router, serve};
