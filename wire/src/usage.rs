//! What a session has spent: tokens per model, tool calls per tool, the time clients took to
//! answer, and how many calls lapsed and runs were aborted. Derived on read from the usage records,
//! the message log and two counters, so it never drifts from them.

use crate::message::{Message, ToolOutcome, codes};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Token usage of model calls.
///
/// The cache counts are what the provider reports (zero where it reports none); they are absent
/// from the JSON when zero, so records written before they existed still parse and look the same.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens, cached or not (OpenAI's `prompt_tokens`; Anthropic's `input_tokens` plus
    /// its cache reads and writes, which Anthropic counts apart).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of the input tokens, those read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    /// Of the input tokens, those written to the provider's prompt cache (Anthropic).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
    }
}

/// One model call's usage, as recorded per step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageRecord {
    pub run_id: String,
    pub step: u32,
    pub model: String,
    #[serde(flatten)]
    pub usage: Usage,
}

/// A session's usage: its own, and with [`UsageRollup::merge`] its descendants' (a session's
/// rollup on `/usage` and on its `end` chunk includes its whole subtree).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageRollup {
    /// Tokens of every model call.
    #[serde(flatten)]
    pub tokens: Usage,
    pub models: BTreeMap<String, ModelUsage>,
    /// Results in the log per tool (server and client tools alike).
    pub tool_calls: BTreeMap<String, u64>,
    /// Time from a suspension to each client answer (or lapsed deadline), summed.
    pub client_tool_wait_ms: u64,
    /// Client calls that got no answer before their deadline.
    pub client_tool_timeouts: u64,
    /// Runs ended by an abort.
    pub aborts: u64,
}

/// One model's share.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    #[serde(flatten)]
    pub tokens: Usage,
    pub calls: u64,
}

impl UsageRollup {
    /// Adds one model call.
    pub fn add_model_call(&mut self, record: &UsageRecord) {
        self.tokens.add(&record.usage);
        let model = self.models.entry(record.model.clone()).or_default();
        model.tokens.add(&record.usage);
        model.calls += 1;
    }

    /// Adds another session's rollup (a descendant's) to this one.
    pub fn merge(&mut self, other: &UsageRollup) {
        self.tokens.add(&other.tokens);
        for (name, usage) in &other.models {
            let model = self.models.entry(name.clone()).or_default();
            model.tokens.add(&usage.tokens);
            model.calls += usage.calls;
        }
        for (tool, calls) in &other.tool_calls {
            *self.tool_calls.entry(tool.clone()).or_default() += calls;
        }
        self.client_tool_wait_ms += other.client_tool_wait_ms;
        self.client_tool_timeouts += other.client_tool_timeouts;
        self.aborts += other.aborts;
    }

    /// Adds one tool result.
    pub fn add_tool_call(&mut self, tool_name: &str) {
        *self.tool_calls.entry(tool_name.to_owned()).or_default() += 1;
    }

    pub fn of(
        records: &[UsageRecord],
        messages: &[Message],
        client_tool_wait_ms: u64,
        aborts: u64,
    ) -> Self {
        let mut rollup = Self {
            client_tool_wait_ms,
            aborts,
            ..Self::default()
        };
        for record in records {
            rollup.add_model_call(record);
        }
        for message in messages {
            let Message::Tool(result) = message else {
                continue;
            };
            rollup.add_tool_call(&result.tool_name);
            if matches!(&result.outcome, ToolOutcome::Error(e) if e.code == codes::CLIENT_TOOL_TIMEOUT)
            {
                rollup.client_tool_timeouts += 1;
            }
        }
        rollup
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ToolCall, ToolError};
    use serde_json::json;

    #[test]
    fn a_rollup_sums_per_model_and_counts_per_tool() {
        let record = |model: &str, input, output| UsageRecord {
            run_id: "r".into(),
            step: 1,
            model: model.into(),
            usage: Usage {
                input_tokens: input,
                output_tokens: output,
                ..Usage::default()
            },
        };
        let call = |id: &str, name: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({}),
            provider_id: None,
        };
        let messages = [
            Message::user("go"),
            Message::tool_result(&call("a", "add"), ToolOutcome::Result(json!(1))),
            Message::tool_result(&call("b", "add"), ToolOutcome::Result(json!(2))),
            Message::tool_result(
                &call("c", "ask"),
                ToolOutcome::Error(ToolError::new(codes::CLIENT_TOOL_TIMEOUT, "late")),
            ),
        ];
        let rollup = UsageRollup::of(
            &[record("m1", 10, 2), record("m2", 5, 1), record("m1", 1, 1)],
            &messages,
            1_500,
            1,
        );
        assert_eq!(
            serde_json::to_value(&rollup).unwrap(),
            json!({
                "inputTokens": 16, "outputTokens": 4,
                "models": {
                    "m1": {"inputTokens": 11, "outputTokens": 3, "calls": 2},
                    "m2": {"inputTokens": 5, "outputTokens": 1, "calls": 1},
                },
                "toolCalls": {"add": 2, "ask": 1},
                "clientToolWaitMs": 1500, "clientToolTimeouts": 1, "aborts": 1,
            })
        );
    }
}
