//! Baton's domain: what a session, run, message, stream chunk and error code are; how agents,
//! server tools and models are defined; and the Redis store that every state change goes through.
//!
//! Nothing here talks to Temporal. The store is the only part that does I/O.

pub mod agent;
pub mod api;
pub mod chunk;
pub mod config;
pub mod error;
pub mod ids;
pub mod message;
pub mod model;
pub mod scripted;
pub mod store;
pub mod submit;
pub mod tool;
pub mod usage;

pub use agent::{Agent, AgentRegistry};
pub use chunk::{ChunkKind, StreamChunk};
pub use error::{ApiError, ErrorCode};
pub use message::{Message, ToolCall, ToolError};
pub use model::{Model, ModelRequest, ModelTurn, Usage};
pub use scripted::ScriptedModel;
pub use store::Store;
pub use tool::{ServerTool, ToolExecution, ToolSpec};
