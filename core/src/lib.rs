//! Baton's domain: how agents, server tools and models are defined, how a submit is checked,
//! and the Redis store that every state change goes through. What a session, run, message,
//! stream chunk and error code look like on the wire is `baton-wire`'s, re-exported here.
//!
//! Nothing here talks to Temporal. The store is the only part that does I/O.

pub mod agent;
pub mod config;
pub mod model;
pub mod observe;
pub mod scripted;
pub mod state;
pub mod store;
pub mod subagent;
pub mod submit;
pub mod tool;

/// The wire types, at the paths the rest of Baton has always used.
pub use baton_wire::{
    a2a, api, chunk, error, escape, fork, ids, message, meta, refusal, remote, search, session,
    sse, tokens, usage,
};

pub use agent::{Agent, AgentRegistry};
pub use chunk::{ChunkKind, StreamChunk};
pub use error::{ApiError, ErrorCode};
pub use message::{Message, ToolCall, ToolError};
pub use meta::SessionMeta;
pub use model::{Model, ModelRequest, ModelTurn, Usage};
pub use refusal::Refusal;
pub use scripted::ScriptedModel;
pub use store::Store;
pub use tool::{ServerTool, ToolExecution, ToolSpec};
