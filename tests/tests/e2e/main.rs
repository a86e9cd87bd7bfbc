//! Baton's end-to-end tests, as the modules of one test binary: the workspace links it once
//! instead of once per file, and `cargo test -p baton-tests --test e2e <module>::` runs one area.
//!
//! Every test starts its own [`baton_tests::Harness`] (a task queue and key prefix of its own), so
//! the tests of all modules run in parallel against one Redis and one Temporal dev server. The
//! `replay` module needs neither: it replays recorded workflow histories offline.

mod a2a;
mod a2a_consume;
mod api;
mod approval;
mod at_most_once;
mod auth;
mod chat;
mod config;
mod config_state;
mod deadline_index;
mod delete;
mod finish;
mod index_upgrade;
mod inspect;
mod limits;
mod loader;
mod local_model_step;
mod log_cache;
mod log_fields;
mod mcp;
mod mcp_first_agent;
mod mcp_list_changed;
mod mcp_questions;
mod mcp_suspend;
mod mount;
mod observe;
mod openapi;
mod operator;
mod ownership;
mod providers;
mod readme;
mod ready;
mod refusals;
mod remote;
mod remote_cli;
mod remote_relay;
mod remote_wait;
mod replay;
mod resume;
mod rewind;
mod round_cost;
mod round_trips;
mod runs;
mod schemathesis;
mod state;
mod stop;
mod streams;
mod subagents;
mod submit;
mod suspension;
mod sweep;
mod threads;
mod transports;
mod tree;
mod tree_batch;
mod tree_ids;
mod tree_lifecycle;
mod tree_repair;
mod tree_retention;
mod tree_stop;
mod two_services;
mod typescript;
