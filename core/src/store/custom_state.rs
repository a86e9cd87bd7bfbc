//! A session's custom state in the store: read it, and fold a step's staged patches into it at
//! the step's commit. The state is the JSON text of the state hash's `customState`; the scripts
//! copy it without decoding it (Redis's cjson would round numbers), so folding happens here,
//! between the commit's two invocations (see `append_staged_step` in `prelude.lua`).

use super::{
    Error, StepRef, Store, Written, from_json,
    keys::{Key, state_field},
    replies::WriteReply,
    scripts::{Invocation, STAGE_STATE_PATCH},
    to_json,
};
use crate::chunk::{ChunkKind, encode_unsequenced};
use json_patch::{Patch, PatchOperation};
use redis::AsyncCommands;
use serde_json::Value;

/// The arguments with which a commit folds its step's state patches: the state the fold read
/// (a fence: only a commit changes it, and the step guard orders commits), the state after the
/// patches and the `state_patch` chunk. All empty until the script has named the patches.
#[derive(Debug, Default)]
pub(super) struct StateFold {
    pub(super) before: String,
    pub(super) after: String,
    pub(super) body: String,
}

impl Store {
    /// The session's custom state, or `None` for a session whose agent declares none.
    pub async fn custom_state(
        &self,
        address: &super::SessionAddress,
    ) -> Result<Option<Value>, Error> {
        let key = self.key(address, Key::State);
        let text: Option<String> = self.conn().hget(&key, state_field::CUSTOM_STATE).await?;
        text.map(|text| from_json(&key, &text)).transpose()
    }

    /// Stages a change of the custom state made for call `tool_call_id` outside a call of
    /// `step` (a call drained by a resumed run): `step`'s commit applies it, before the changes
    /// of its own calls. First change wins.
    pub async fn stage_state_patch(
        &self,
        step: StepRef<'_>,
        tool_call_id: &str,
        patch: &Patch,
    ) -> Result<Written, Error> {
        let reply: WriteReply = STAGE_STATE_PATCH
            .on(self, step.address)
            .arg(step.run_id)
            .arg(step.step)
            .arg(tool_call_id)
            .arg(to_json(patch))
            .run(self)
            .await?;
        self.step_written(step, reply)
    }

    /// Runs a commit script built by `invocation` with no fold, and when it answers with the
    /// step's staged state patches, runs it again with them folded. The second run cannot be
    /// answered with patches again: it carries them.
    pub(super) async fn commit_folding_state(
        &self,
        step: StepRef<'_>,
        invocation: impl Fn(&StateFold) -> Invocation<'static>,
    ) -> Result<WriteReply, Error> {
        let reply: WriteReply = invocation(&StateFold::default()).run(self).await?;
        self.fold_state_if_asked(step, reply, invocation).await
    }

    /// [`Self::commit_folding_state`] whose first run goes with the search index's mark of the
    /// step's session, in one round trip (see [`Self::mark_then`]): the mark and the reply.
    /// `after`, a plain idempotent write, follows the commit in its round trip, and again after
    /// a folded second run, so that it always comes after the commit that applied.
    pub(super) async fn commit_folding_state_marked(
        &self,
        step: StepRef<'_>,
        invocation: impl Fn(&StateFold) -> Invocation<'static>,
        after: Option<redis::Cmd>,
    ) -> Result<(u64, WriteReply), Error> {
        let (mark, reply) = self
            .mark_then_after(
                step.address,
                &invocation(&StateFold::default()),
                after.clone(),
            )
            .await?;
        let folded = matches!(reply, WriteReply::StatePatches { .. });
        let reply = self.fold_state_if_asked(step, reply, invocation).await?;
        if folded && let Some(after) = after {
            let _: () = after.query_async(&mut self.conn()).await?;
        }
        Ok((mark, reply))
    }

    /// When a commit run with no fold answered with the step's staged state patches, runs it
    /// again with them folded; any other reply is the commit's.
    pub(super) async fn fold_state_if_asked(
        &self,
        step: StepRef<'_>,
        reply: WriteReply,
        invocation: impl Fn(&StateFold) -> Invocation<'static>,
    ) -> Result<WriteReply, Error> {
        let WriteReply::StatePatches { current, patches } = reply else {
            return Ok(reply);
        };
        let fold = self.fold_state_patches(step, current, &patches)?;
        invocation(&fold).run(self).await
    }

    /// Applies a step's patches (toolCallId, patch JSON) in order to `current`. Each patch was
    /// checked against the state the step started from; one that no longer applies on top of an
    /// earlier call's of the same step (two calls of one step removing the same field) is left
    /// out, logged, and so never reaches the stream either.
    fn fold_state_patches(
        &self,
        step: StepRef<'_>,
        current: String,
        patches: &[(String, String)],
    ) -> Result<StateFold, Error> {
        let key = self.key(step.address, Key::State);
        if current.is_empty() {
            return Err(Error::Corrupt {
                key,
                reason: "state patches staged for a session without custom state".to_owned(),
            });
        }
        let mut state: Value = from_json(&key, &current)?;
        let mut applied: Vec<PatchOperation> = Vec::new();
        for (tool_call_id, text) in patches {
            let patch: Patch = from_json(&key, text)?;
            let mut next = state.clone();
            match json_patch::patch(&mut next, &patch) {
                Ok(()) => {
                    state = next;
                    applied.extend(patch.0);
                }
                Err(error) => tracing::warn!(
                    session_id = %step.address.session_id,
                    step = step.step,
                    tool_call_id,
                    %error,
                    "a state patch no longer applies after an earlier call's of the same step; \
                     it is left out"
                ),
            }
        }
        let body = encode_unsequenced(
            &self.header(step.run()),
            &ChunkKind::StatePatch {
                step: step.step,
                patch: Patch(applied),
            },
        );
        Ok(StateFold {
            before: current,
            after: to_json(&state),
            body,
        })
    }
}
