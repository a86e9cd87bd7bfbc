//! The model interface: one call turns a conversation and a tool list into one assistant turn.

use crate::{message::Message, message::ToolCall, tool::ToolSpec};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// What the model is asked.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The whole log, system prompt first.
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
}

/// What the model answered in one call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelTurn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

/// Token usage of model calls.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Worth retrying: rate limits, overload, network.
    #[error("model call failed, may be retried: {0}")]
    Transient(String),
    /// Retrying will give the same answer.
    #[error("model call failed: {0}")]
    Permanent(String),
}

/// A language model. One call is one assistant turn.
///
/// Text is streamed through `deltas` as it is produced; the returned turn holds the whole text.
/// Implementations must send the deltas in order and may send none.
#[async_trait]
pub trait Model: Send + Sync {
    /// A name for logs and usage records, e.g. `scripted` or `gpt-4o`.
    fn name(&self) -> &str;

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<String>,
    ) -> Result<ModelTurn, Error>;
}
