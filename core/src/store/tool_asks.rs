//! A server tool's call that stopped to ask a person (an MCP server's `input_required`), staged
//! in its step instead of a result: the step's suspension reads it into the call's pending entry.

use super::{
    Error, StepRef, Store, Written, keys::Key, keys::staged_field, replies::WriteReply,
    scripts::STAGE_TOOL_ASKS, to_json,
};
use crate::tool::ask::Asked;
use std::collections::HashMap;

impl Store {
    /// Stages what call `tool_call_id` of `step` asked (first one wins; a committed step
    /// refuses it).
    pub async fn stage_tool_asks(
        &self,
        step: StepRef<'_>,
        tool_call_id: &str,
        asked: &Asked,
    ) -> Result<Written, Error> {
        let reply: WriteReply = STAGE_TOOL_ASKS
            .on(self, step.address)
            .arg(step.run_id)
            .arg(step.step)
            .arg(tool_call_id)
            .arg(to_json(asked))
            .run(self)
            .await?;
        self.step_written(step, reply)
    }

    /// What those of `tool_call_ids` of `step` that stopped to ask a person asked, by call id
    /// (one round trip).
    pub async fn staged_asks(
        &self,
        step: StepRef<'_>,
        tool_call_ids: &[&str],
    ) -> Result<HashMap<String, Asked>, Error> {
        if tool_call_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let key = self.key(step.address, Key::Staged);
        let fields: Vec<String> = tool_call_ids
            .iter()
            .map(|id| staged_field::asks(step.run_id, step.step, id))
            .collect();
        let values: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&key)
            .arg(&fields)
            .query_async(&mut self.conn())
            .await?;
        let mut asked = HashMap::new();
        for (id, value) in tool_call_ids.iter().zip(values) {
            if let Some(text) = value {
                asked.insert((*id).to_owned(), super::from_json(&key, &text)?);
            }
        }
        Ok(asked)
    }
}

/// What a step holds for one of its calls before its commit: whether it has a result, and what
/// it asked if it stopped to ask a person.
#[derive(Debug, Clone, PartialEq)]
pub struct StagedCall {
    pub has_result: bool,
    pub asked: Option<Asked>,
}

impl Store {
    /// What `step` holds for call `tool_call_id` (one round trip).
    pub async fn staged_call(
        &self,
        step: StepRef<'_>,
        tool_call_id: &str,
    ) -> Result<StagedCall, Error> {
        let key = self.key(step.address, Key::Staged);
        let (result, asked): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(&key)
            .arg(staged_field::result(step.run_id, step.step, tool_call_id))
            .arg(staged_field::asks(step.run_id, step.step, tool_call_id))
            .query_async(&mut self.conn())
            .await?;
        Ok(StagedCall {
            has_result: result.is_some(),
            asked: asked
                .map(|text| super::from_json(&key, &text))
                .transpose()?,
        })
    }
}
