//! What the `baton` CLI prints, made safe for a terminal: everything the server sent (a model's
//! text, which can echo an end user's answer; tool names, inputs and results; ids; error
//! messages) is printed with its control characters escaped ([`baton_wire::escape`]), so no
//! window title, screen clear or carriage-return overwrite reaches the terminal. `--json`
//! output stays exact JSON: the same value, with the controls JSON lets through written as
//! `\uXXXX`.

use baton_wire::{
    ChunkKind, StreamChunk,
    chunk::EndStatus,
    escape::{for_terminal, json_for_terminal},
};
use std::{borrow::Cow, io::Write};

/// A one-line field the server sent: every control character escaped, newlines too.
pub fn field(text: &str) -> Cow<'_, str> {
    for_terminal(text, false)
}

/// Prose the server sent (a model's text, a run's output): its newlines and tabs kept, every
/// other control character escaped.
pub fn prose(text: &str) -> Cow<'_, str> {
    for_terminal(text, true)
}

/// A value as compact JSON, safe to print.
pub fn json(value: &impl serde::Serialize) -> serde_json::Result<String> {
    serde_json::to_string(value).map(|json| json_for_terminal(&json).into_owned())
}

/// A value as indented JSON, safe to print.
pub fn json_pretty(value: &impl serde::Serialize) -> serde_json::Result<String> {
    serde_json::to_string_pretty(value).map(|json| json_for_terminal(&json).into_owned())
}

/// A JSON value inline in a line of text (a tool's input or result, a state patch).
fn inline(value: &impl serde::Serialize) -> String {
    json(value).unwrap_or_default()
}

/// Renders chunks as readable lines; text deltas are printed as they arrive.
#[derive(Debug, Default)]
pub struct Printer {
    in_text: bool,
    /// Within a line of reasoning deltas (printed after a `thinking:` mark).
    in_reasoning: bool,
}

impl Printer {
    /// Writes one chunk to `out` as the CLI shows it.
    pub fn print(&mut self, out: &mut impl Write, chunk: &StreamChunk) -> std::io::Result<()> {
        if self.in_text && !matches!(chunk.kind, ChunkKind::TextDelta { .. }) {
            writeln!(out)?;
            self.in_text = false;
        }
        if self.in_reasoning && !matches!(chunk.kind, ChunkKind::ReasoningDelta { .. }) {
            writeln!(out)?;
            self.in_reasoning = false;
        }
        match &chunk.kind {
            ChunkKind::RunStart { agent_type } => writeln!(
                out,
                "▶ run {} of {}",
                field(&chunk.header.run_id),
                field(agent_type)
            ),
            ChunkKind::StepStart { step } => writeln!(out, "── step {step}"),
            ChunkKind::TextDelta { delta, .. } => {
                self.in_text = true;
                write!(out, "{}", prose(delta))
            }
            ChunkKind::ReasoningDelta { delta, .. } => {
                if !std::mem::replace(&mut self.in_reasoning, true) {
                    write!(out, "  thinking: ")?;
                }
                write!(out, "{}", prose(delta))
            }
            ChunkKind::ToolStart {
                tool_name, input, ..
            } => writeln!(out, "  → {} {}", field(tool_name), inline(input)),
            ChunkKind::ToolEnd {
                tool_name,
                result,
                error,
                ..
            } => match (result, error) {
                (_, Some(error)) => writeln!(
                    out,
                    "  ✗ {}: {} ({})",
                    field(tool_name),
                    field(&error.message),
                    field(&error.code)
                ),
                (Some(result), None) => {
                    writeln!(out, "  ← {} = {}", field(tool_name), inline(result))
                }
                (None, None) => writeln!(out, "  ← {}", field(tool_name)),
            },
            ChunkKind::ToolData { name, data, .. } => {
                writeln!(out, "  · data-{} {}", field(name), inline(data))
            }
            ChunkKind::StepEnd { .. } => Ok(()),
            ChunkKind::StepDiscarded { .. } => writeln!(out, "  (retrying the step)"),
            ChunkKind::ToolApprovalRequest {
                tool_name,
                input,
                approval_id,
                ..
            } => writeln!(
                out,
                "  ? approve {} {} (approval {})",
                field(tool_name),
                inline(input),
                field(approval_id)
            ),
            ChunkKind::Question {
                question_id,
                tool_name,
                message,
                schema,
                ..
            } => writeln!(
                out,
                "  ? {} asks: {} (question {}, an answer matching {})",
                field(tool_name),
                prose(message),
                field(question_id),
                inline(schema)
            ),
            ChunkKind::QuestionClosed {
                question_id,
                answer,
                ..
            } => writeln!(
                out,
                "  · question {} closed: {}",
                field(question_id),
                field(answer)
            ),
            ChunkKind::Suspended { tool_call_ids, .. } => writeln!(
                out,
                "⏸ suspended, waiting for the answers to {}",
                field(&tool_call_ids.join(", "))
            ),
            ChunkKind::Rewind {
                checkpoint_id,
                stream_sequence,
            } => writeln!(
                out,
                "↺ rewound to checkpoint {checkpoint_id} (stream position {stream_sequence})"
            ),
            ChunkKind::SubagentStart {
                sub_session_id,
                agent_type,
                ..
            } => writeln!(
                out,
                "  ⤷ sub-agent {} ({})",
                field(agent_type),
                field(sub_session_id)
            ),
            ChunkKind::SubagentEnd {
                sub_session_id,
                status,
                ..
            } => writeln!(
                out,
                "  ⤶ sub-agent {} {}",
                field(sub_session_id),
                <&str>::from(status)
            ),
            ChunkKind::StatePatch { patch, .. } => writeln!(out, "  ≔ state {}", inline(patch)),
            ChunkKind::End {
                status,
                output,
                error,
                usage,
                state,
            } => match status {
                EndStatus::Interrupted => writeln!(out, "■ interrupted"),
                EndStatus::Completed => writeln!(
                    out,
                    "✓ completed: {} ({} tokens in, {} out){}",
                    prose(output.as_deref().unwrap_or("")),
                    usage.tokens.input_tokens,
                    usage.tokens.output_tokens,
                    state
                        .as_ref()
                        .map(|state| format!("\n  state: {}", inline(state)))
                        .unwrap_or_default()
                ),
                EndStatus::Failed => match error {
                    Some(error) => writeln!(
                        out,
                        "✗ failed: {} ({})",
                        field(&error.message),
                        field(error.code.as_str())
                    ),
                    None => writeln!(out, "✗ failed"),
                },
            },
        }?;
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A chunk of the given kind's JSON.
    fn chunk(kind: serde_json::Value) -> StreamChunk {
        let mut value = json!({"sequence": 1, "streamId": "st", "sessionId": "s",
            "agentId": "a", "runId": "r", "timestamp": 0});
        value
            .as_object_mut()
            .unwrap()
            .extend(kind.as_object().unwrap().clone());
        serde_json::from_value(value).unwrap()
    }

    /// A completed `end` chunk with this output.
    fn end(output: &str) -> StreamChunk {
        let usage = serde_json::to_value(baton_wire::UsageRollup::default()).unwrap();
        chunk(json!({"type": "end", "status": "completed", "output": output, "usage": usage}))
    }

    /// What an attacker's answer, echoed by a model, tries on a terminal.
    const ATTACK: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\r✓ completed\u{9b}1m\u{202e}";

    #[test]
    fn nothing_the_server_sent_reaches_the_terminal_as_a_control() {
        let chunks = [
            chunk(json!({"type": "run_start", "agentType": ATTACK})),
            chunk(json!({"type": "text_delta", "step": 1, "delta": format!("line 1\n{ATTACK}")})),
            chunk(
                json!({"type": "tool_start", "step": 1, "toolCallId": "c", "toolName": ATTACK,
                "input": {"q": ATTACK}}),
            ),
            chunk(
                json!({"type": "tool_end", "step": 1, "toolCallId": "c", "toolName": "t",
                "error": {"code": ATTACK, "message": ATTACK}}),
            ),
            chunk(
                json!({"type": "tool_end", "step": 1, "toolCallId": "c", "toolName": "t",
                "result": ATTACK}),
            ),
            chunk(json!({"type": "suspended", "step": 1, "toolCallIds": [ATTACK]})),
            end(ATTACK),
        ];
        let mut printer = Printer::default();
        let mut out = Vec::new();
        for chunk in &chunks {
            printer.print(&mut out, chunk).unwrap();
        }
        let shown = String::from_utf8(out).unwrap();
        let controls: Vec<char> = shown
            .chars()
            .filter(|c| baton_wire::escape::is_control(*c) && *c != '\n')
            .collect();
        assert!(controls.is_empty(), "{controls:?} in {shown}");
        assert!(shown.contains("line 1\n"), "a model's newlines are kept");
        assert!(shown.contains("\\u{1b}]0;pwned"), "{shown}");
        // Only the real end prints a line starting with its mark.
        let completed = shown
            .lines()
            .filter(|l| l.starts_with("✓ completed"))
            .count();
        assert_eq!(completed, 1, "{shown}");
    }

    #[test]
    fn json_output_is_exact_json_without_raw_controls() {
        for chunk in [
            chunk(json!({"type": "text_delta", "step": 1, "delta": ATTACK})),
            end(ATTACK),
        ] {
            let line = json(&chunk).unwrap();
            assert!(!line.chars().any(baton_wire::escape::is_control), "{line}");
            let back: StreamChunk = serde_json::from_str(&line).unwrap();
            assert_eq!(back, chunk);
            let pretty = json_pretty(&chunk).unwrap();
            assert_eq!(serde_json::from_str::<StreamChunk>(&pretty).unwrap(), chunk);
        }
    }
}
