//! A running call's question (`question` chunk) as the chat sees it: a client part of its own
//! (see [`UiStreamMapper::question`]).

use super::{ToolRole, UiStreamMapper, finish};
use crate::ai_sdk::ui::{FinishReason, UiChunk, UiFrame};
use baton_core::{
    ChunkKind, StreamChunk,
    tool::ask::{QUESTION_TOOL, question_input, question_render},
};

impl UiStreamMapper {
    /// A running call's question (the root's or a descendant's): a client part of its own, named
    /// `question` under the question's id, in a step of its own (so `ai`'s predicates read it
    /// answered once the person answers, whatever the asking call's part says), with an
    /// `elicitation` render hint of the answer's schema; the response ends there, as at a
    /// suspension, and the client's answer continues it.
    pub(super) fn question(&mut self, out: &mut Vec<UiFrame>, chunk: &StreamChunk) {
        let ChunkKind::Question {
            question_id,
            tool_call_id,
            tool_name,
            message,
            schema,
            deadline_at,
            ..
        } = &chunk.kind
        else {
            return;
        };
        let agent_id = chunk.header.agent_id.as_str();
        let agent_type = self.agent_types.get(agent_id).cloned();
        let owner = (agent_id != self.session_id)
            .then_some(())
            .and(agent_type.as_deref().map(|kind| (agent_id, kind)));
        let input = question_input(message, tool_name, tool_call_id, *deadline_at);
        let role = ToolRole::Client {
            render: Some(question_render(schema)),
        };
        self.close_step(out);
        out.push(UiChunk::StartStep.into());
        self.step_open = true;
        self.call_part(out, (question_id, QUESTION_TOOL, &input), role, owner);
        self.close_step(out);
        out.push(finish(Some(FinishReason::ToolCalls), chunk));
        self.finished = true;
    }
}
