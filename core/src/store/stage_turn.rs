//! Staging a step's assistant turn, with tool call ids unique within the session tree: a call
//! whose model id the tree has already gets Baton's own id (derived from the session, the step
//! and the call's position, so every attempt derives the same), and keeps the model's as its
//! `provider_id`, which is what goes back to the provider (see `stage_turn.lua`).

use super::{
    Error, StagedTurn, StepRef, Store, Written,
    replies::{Reply, WriteReply},
    scripts::{Invocation, STAGE_TURN},
    to_json,
};
use crate::{
    chunk::{ChunkKind, encode_unsequenced},
    message::Message,
};
use redis::{FromRedisValue, RedisResult, Value as RedisValue};

/// `stage_turn.lua`: staged (or already), refused, or the calls to rename first.
enum StageTurnReply {
    Write(WriteReply),
    /// (position from 0, Baton's id) of each call whose id the tree has already.
    Rename(Vec<(usize, String)>),
}

impl FromRedisValue for StageTurnReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        if reply.tag != "renamed" {
            return Ok(Self::Write(WriteReply::from_redis_value(value)?));
        }
        let mut renames = Vec::new();
        let mut index = 0;
        while let (Ok(position), Ok(id)) = (reply.value::<usize>(index), reply.value(index + 1)) {
            let position = position.checked_sub(1).ok_or_else(|| reply.unexpected())?;
            renames.push((position, id));
            index += 2;
        }
        if renames.is_empty() {
            return Err(reply.unexpected());
        }
        Ok(Self::Rename(renames))
    }
}

/// How many arguments `stage_turn.lua` takes for `turn`: five, then a `tool_start` per call.
pub(super) fn stage_turn_argument_count(turn: &StagedTurn) -> usize {
    5 + turn_call_count(turn)
}

fn turn_call_count(turn: &StagedTurn) -> usize {
    match &turn.message {
        Message::Assistant { tool_calls, .. } => tool_calls.len(),
        _ => 0,
    }
}

impl Store {
    /// Stages the assistant turn of a step and writes a `tool_start` chunk per tool call, under
    /// ids unique within the session tree: `turn` is given Baton's id for each call whose model
    /// id the tree has already (the model's kept as `provider_id`). Staged once: a second
    /// attempt finds the first one's turn (`AlreadyDone`), which the caller reads.
    pub async fn stage_turn(
        &self,
        step: StepRef<'_>,
        turn: &mut StagedTurn,
    ) -> Result<Written, Error> {
        // Each pass renames the calls that collide; Baton's ids never do, so a pass per call
        // (a concurrent session taking an id between two) is the most it takes.
        for _ in 0..=turn_call_count(turn) {
            let reply = self.try_stage_turn(step, turn).await?;
            let renames = match reply {
                StageTurnReply::Write(reply) => return self.step_written(step, reply),
                StageTurnReply::Rename(renames) => renames,
            };
            let Message::Assistant { tool_calls, .. } = &mut turn.message else {
                return Err(
                    self.inconsistent(step.address, "renamed calls of no assistant turn".into())
                );
            };
            for (position, id) in renames {
                let call = tool_calls.get_mut(position).ok_or_else(|| {
                    self.inconsistent(step.address, format!("no call {position} to rename"))
                })?;
                // A call renamed on an earlier pass keeps the model's id as its provider's.
                if call.provider_id.is_none() {
                    call.provider_id = Some(std::mem::replace(&mut call.id, id));
                } else {
                    call.id = id;
                }
            }
        }
        Err(self.inconsistent(
            step.address,
            format!("step {}: the tool call ids kept colliding", step.step),
        ))
    }

    async fn try_stage_turn(
        &self,
        step: StepRef<'_>,
        turn: &StagedTurn,
    ) -> Result<StageTurnReply, Error> {
        let mut invocation = STAGE_TURN.on(self, step.address);
        self.add_stage_turn_arguments(&mut invocation, step, turn);
        invocation.run(self).await
    }

    /// Adds `stage_turn.lua`'s arguments for `turn` to `invocation`:
    /// [`stage_turn_argument_count`] of them.
    pub(super) fn add_stage_turn_arguments(
        &self,
        invocation: &mut Invocation<'_>,
        step: StepRef<'_>,
        turn: &StagedTurn,
    ) {
        let header = self.header(step.run());
        let calls = match &turn.message {
            Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            _ => &[],
        };
        let call_ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        invocation
            .arg(step.run_id)
            .arg(step.step)
            .arg(to_json(&turn.message))
            .arg(to_json(&call_ids))
            .arg(to_json(&turn.usage));
        for call in calls {
            invocation.arg(encode_unsequenced(
                &header,
                &ChunkKind::ToolStart {
                    step: step.step,
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    input: call.arguments.clone(),
                },
            ));
        }
    }
}
