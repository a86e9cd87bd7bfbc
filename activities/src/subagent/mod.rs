//! Sub-agent calls, by transport: the one place in the activities where a call's transport is
//! matched. Each transport has a module: `local.rs` runs the child as a session of the caller's
//! tree (its activities `start_sub_agent` and `finish_sub_agent`, declared in `lib.rs`).
//!
//! A remote transport (a child served by another service over HTTP) plugs in here: its module
//! `remote.rs` with the bodies of its activities (declared beside the local ones in the
//! `#[activities]` block of `lib.rs`, since a worker registers one block), and its arm in each
//! match below. The route and the plan carry the transport already (see `SubAgentTransport`).

mod local;
pub(crate) use local::child_outcome;

use crate::{AgentActivities, failure::Error, io::StepInput};
use baton_core::subagent::SubAgentTransport;

impl AgentActivities {
    /// The parent's `after_sub_agent` fold of the child that answered its call `tool_call_id`
    /// (of tool `tool_name`) while the parent was suspended, as the resumed parent drains the
    /// answer: the patch of the parent's state, if the hook sets anything.
    pub(crate) async fn fold_answered_child(
        &self,
        transport: SubAgentTransport,
        step: &StepInput,
        tool_call_id: &str,
        tool_name: &str,
    ) -> Result<Option<json_patch::Patch>, Error> {
        match transport {
            SubAgentTransport::Local => {
                self.fold_answered_local_child(step, tool_call_id, tool_name)
                    .await
            }
        }
    }
}
